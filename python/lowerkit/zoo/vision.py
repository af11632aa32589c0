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


class Bottleneck(nn.Module):
    """ResNet-50's block: 1x1 reduce, 3x3, 1x1 expand (x4)."""

    def __init__(self, cin: int, width: int, stride: int = 1):
        super().__init__()
        cout = width * 4
        self.body = nn.Sequential(
            nn.Conv2d(cin, width, 1, bias=False), nn.BatchNorm2d(width), nn.ReLU(),
            nn.Conv2d(width, width, 3, stride, 1, bias=False), nn.BatchNorm2d(width), nn.ReLU(),
            nn.Conv2d(width, cout, 1, bias=False), nn.BatchNorm2d(cout),
        )
        self.down = None
        if stride != 1 or cin != cout:
            self.down = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))

    def forward(self, x):
        identity = x if self.down is None else self.down(x)
        return torch.relu(self.body(x) + identity)


class ResNetBottleneck(nn.Module):
    def __init__(self, layers=(3, 4, 6, 3), widths=(64, 128, 256, 512), num_classes: int = 1000):
        super().__init__()
        self.stem = nn.Sequential(
            nn.Conv2d(3, 64, 7, 2, 3, bias=False), nn.BatchNorm2d(64), nn.ReLU(), nn.MaxPool2d(3, 2, 1))
        blocks, cin = [], 64
        for i, (n, w) in enumerate(zip(layers, widths)):
            for j in range(n):
                blocks.append(Bottleneck(cin, w, stride=2 if (j == 0 and i > 0) else 1))
                cin = w * 4
        self.blocks = nn.Sequential(*blocks)
        self.head = nn.Linear(cin, num_classes)

    def forward(self, x):
        x = self.blocks(self.stem(x))
        return self.head(torch.flatten(nn.functional.adaptive_avg_pool2d(x, 1), 1))


def resnet50(batch: int = 1, size: int = 224):
    """ResNet-50 (25.6M parameters): the ~25M-parameter compile-time reference."""
    torch.manual_seed(0)
    model = _randomise_batchnorm(ResNetBottleneck()).eval()
    return model, (torch.randn(batch, 3, size, size),)


def resnet_small(batch: int = 1, size: int = 64):
    """A narrow ResNet-18 layout (widths /4) on a 64x64 image: the quick ResNet check."""
    torch.manual_seed(0)
    model = _randomise_batchnorm(ResNet(widths=(16, 32, 64, 128), num_classes=100)).eval()
    return model, (torch.randn(batch, 3, size, size),)


class InvertedResidual(nn.Module):
    """MobileNetV2's block: 1x1 expand, 3x3 depthwise, 1x1 project, residual when shapes allow."""

    def __init__(self, cin: int, cout: int, stride: int, expand: int):
        super().__init__()
        hidden = cin * expand
        self.use_res = stride == 1 and cin == cout
        layers = []
        if expand != 1:
            layers += [nn.Conv2d(cin, hidden, 1, bias=False), nn.BatchNorm2d(hidden), nn.ReLU6()]
        layers += [
            nn.Conv2d(hidden, hidden, 3, stride, 1, groups=hidden, bias=False), nn.BatchNorm2d(hidden),
            nn.ReLU6(), nn.Conv2d(hidden, cout, 1, bias=False), nn.BatchNorm2d(cout),
        ]
        self.conv = nn.Sequential(*layers)

    def forward(self, x):
        return x + self.conv(x) if self.use_res else self.conv(x)


class MobileNetV2(nn.Module):
    # (expand, channels, repeats, stride), torchvision's table
    SETTINGS = ((1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2), (6, 96, 3, 1),
                (6, 160, 3, 2), (6, 320, 1, 1))

    def __init__(self, width: float = 1.0, num_classes: int = 1000):
        super().__init__()
        c = lambda n: max(8, int(n * width + 4) // 8 * 8)  # noqa: E731
        cin = c(32)
        layers = [nn.Conv2d(3, cin, 3, 2, 1, bias=False), nn.BatchNorm2d(cin), nn.ReLU6()]
        for t, ch, n, s in self.SETTINGS:
            for i in range(n):
                layers.append(InvertedResidual(cin, c(ch), s if i == 0 else 1, t))
                cin = c(ch)
        layers += [nn.Conv2d(cin, 1280, 1, bias=False), nn.BatchNorm2d(1280), nn.ReLU6()]
        self.features = nn.Sequential(*layers)
        self.classifier = nn.Linear(1280, num_classes)

    def forward(self, x):
        x = self.features(x).mean((2, 3))
        return self.classifier(x)


def mobilenet_v2(batch: int = 1, size: int = 224):
    """MobileNetV2 (3.5M parameters): depthwise convolutions and ReLU6."""
    torch.manual_seed(0)
    return _randomise_batchnorm(MobileNetV2()).eval(), (torch.randn(batch, 3, size, size),)


def mobilenet_v2_small(batch: int = 1, size: int = 96):
    """MobileNetV2 at width 0.5 on a 96x96 image."""
    torch.manual_seed(0)
    return _randomise_batchnorm(MobileNetV2(0.5, 100)).eval(), (torch.randn(batch, 3, size, size),)


class ViT(nn.Module):
    """A small vision transformer: patch embedding, class token, pre-norm encoder layers."""

    def __init__(self, size=64, patch=8, dim=192, depth=4, heads=3, num_classes=100):
        super().__init__()
        self.patch = nn.Conv2d(3, dim, patch, patch)
        n = (size // patch) ** 2
        self.cls = nn.Parameter(torch.randn(1, 1, dim) * 0.02)
        self.pos = nn.Parameter(torch.randn(1, n + 1, dim) * 0.02)
        layer = nn.TransformerEncoderLayer(dim, heads, dim * 4, dropout=0.0, activation="gelu",
                                           batch_first=True, norm_first=True)
        self.encoder = nn.TransformerEncoder(layer, depth, enable_nested_tensor=False)
        self.norm = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, num_classes)

    def forward(self, x):
        x = self.patch(x).flatten(2).transpose(1, 2)
        x = torch.cat([self.cls.expand(x.shape[0], -1, -1), x], dim=1) + self.pos
        x = self.encoder(x)
        return self.head(self.norm(x[:, 0]))


def vit_tiny(batch: int = 1, size: int = 64):
    """ViT with 4 layers of width 192 on 64x64 images (8x8 patches)."""
    torch.manual_seed(0)
    return ViT(size).eval(), (torch.randn(batch, 3, size, size),)


class UNet(nn.Module):
    """A UNet: conv encoder with max-pooling, bilinear upsampling decoder with skip concats."""

    def __init__(self, cin=3, cout=2, widths=(16, 32, 64, 128)):
        super().__init__()

        def block(a, b):
            return nn.Sequential(nn.Conv2d(a, b, 3, 1, 1), nn.BatchNorm2d(b), nn.ReLU(),
                                 nn.Conv2d(b, b, 3, 1, 1), nn.BatchNorm2d(b), nn.ReLU())

        self.down = nn.ModuleList()
        c = cin
        for w in widths:
            self.down.append(block(c, w))
            c = w
        self.up = nn.ModuleList(block(widths[i] + widths[i - 1], widths[i - 1])
                                for i in range(len(widths) - 1, 0, -1))
        self.out = nn.Conv2d(widths[0], cout, 1)

    def forward(self, x):
        skips = []
        for i, blk in enumerate(self.down):
            x = blk(x)
            if i < len(self.down) - 1:
                skips.append(x)
                x = nn.functional.max_pool2d(x, 2)
        for blk in self.up:
            x = nn.functional.interpolate(x, scale_factor=2, mode="bilinear", align_corners=False)
            x = blk(torch.cat([x, skips.pop()], dim=1))
        return self.out(x)


def unet_small(batch: int = 1, size: int = 64):
    """UNet with four levels on a 64x64 image; bilinear upsampling and skip concatenation."""
    torch.manual_seed(0)
    return _randomise_batchnorm(UNet()).eval(), (torch.randn(batch, 3, size, size),)


def simple_cnn(batch: int = 1, size: int = 32):
    """LeNet-style CNN: conv, max-pool, linear; the smallest vision model (per-call overhead)."""
    torch.manual_seed(0)
    model = nn.Sequential(
        nn.Conv2d(3, 16, 3, 1, 1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(16, 32, 3, 1, 1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(), nn.Linear(32 * (size // 4) ** 2, 10),
    ).eval()
    return model, (torch.randn(batch, 3, size, size),)
