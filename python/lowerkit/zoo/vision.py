"""Vision models: a ResNet-18 (the torchvision layout, written out here) and kin."""

from __future__ import annotations

import torch
from torch import nn


class BasicBlock(nn.Module):
    def __init__(self, cin: int, cout: int, stride: int = 1):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.down = None
        if stride != 1 or cin != cout:
            self.down = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))

    def forward(self, x):
        identity = x if self.down is None else self.down(x)
        y = torch.relu(self.bn1(self.conv1(x)))
        y = self.bn2(self.conv2(y))
        return torch.relu(y + identity)


class ResNet(nn.Module):
    def __init__(self, layers=(2, 2, 2, 2), widths=(64, 128, 256, 512), num_classes: int = 1000):
        super().__init__()
        self.stem = nn.Sequential(
            nn.Conv2d(3, widths[0], 7, 2, 3, bias=False), nn.BatchNorm2d(widths[0]), nn.ReLU(),
            nn.MaxPool2d(3, 2, 1),
        )
        blocks, cin = [], widths[0]
        for i, (n, w) in enumerate(zip(layers, widths)):
            for j in range(n):
                blocks.append(BasicBlock(cin, w, stride=2 if (j == 0 and i > 0) else 1))
                cin = w
        self.blocks = nn.Sequential(*blocks)
        self.head = nn.Linear(cin, num_classes)

    def forward(self, x):
        x = self.blocks(self.stem(x))
        return self.head(torch.flatten(nn.functional.adaptive_avg_pool2d(x, 1), 1))


def _randomise_batchnorm(model: nn.Module) -> nn.Module:
    """Non-trivial running statistics, so that a wrong batch-norm lowering shows."""
    g = torch.Generator().manual_seed(0)
    for m in model.modules():
        if isinstance(m, nn.BatchNorm2d):
            m.running_mean.copy_(torch.randn(m.num_features, generator=g) * 0.1)
            m.running_var.copy_(torch.rand(m.num_features, generator=g) + 0.5)
    return model


def resnet18(batch: int = 1, size: int = 224):
    """ResNet-18 (11.7M parameters) on one 224x224 image."""
    torch.manual_seed(0)
    model = _randomise_batchnorm(ResNet()).eval()
    return model, (torch.randn(batch, 3, size, size),)
