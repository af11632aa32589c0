"""Small models covering the op families the spine must handle, each with example inputs.

`CASES` maps a name to a factory returning ``(fn, args, kwargs)``. The CPU suite runs all of
them; other targets may run a subset.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn


def _seed() -> torch.Generator:
    torch.manual_seed(0)
    return torch.Generator().manual_seed(0)


def mlp():
    _seed()
    m = nn.Sequential(nn.Linear(16, 32), nn.GELU(), nn.Linear(32, 8), nn.Tanh()).eval()
    return m, (torch.randn(4, 16),), {}


class ConvBnRelu(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3, padding=1)
        self.bn = nn.BatchNorm2d(8)
        self.bn.running_mean.uniform_(-0.5, 0.5)
        self.bn.running_var.uniform_(0.5, 1.5)

    def forward(self, x):
        return F.relu(self.bn(self.conv(x)))


def conv_bn_relu():
    _seed()
    return ConvBnRelu().eval(), (torch.randn(2, 3, 16, 16),), {}


class ResidualBlock(nn.Module):
    def __init__(self, c=8):
        super().__init__()
        self.c1 = nn.Conv2d(c, c, 3, padding=1, bias=False)
        self.b1 = nn.BatchNorm2d(c)
        self.c2 = nn.Conv2d(c, c, 3, padding=1, bias=False)
        self.b2 = nn.BatchNorm2d(c)

    def forward(self, x):
        y = F.relu(self.b1(self.c1(x)))
        return F.relu(self.b2(self.c2(y)) + x)


def residual_block():
    _seed()
    return ResidualBlock().eval(), (torch.randn(1, 8, 12, 12),), {}


def depthwise_conv():
    _seed()
    m = nn.Sequential(
        nn.Conv2d(8, 8, 3, padding=1, groups=8), nn.ReLU6(), nn.Conv2d(8, 16, 1)
    ).eval()
    return m, (torch.randn(1, 8, 10, 10),), {}


class Pooling(nn.Module):
    def forward(self, x):
        a = F.max_pool2d(x, 2)
        b = F.avg_pool2d(x, 3, stride=2, padding=1)
        c = F.adaptive_avg_pool2d(x, (1, 1))
        return a.sum() + b.mean() + c, a, b


def pooling():
    _seed()
    return Pooling(), (torch.randn(1, 4, 8, 8),), {}


def transformer_encoder_layer():
    _seed()
    layer = nn.TransformerEncoderLayer(d_model=32, nhead=4, dim_feedforward=64,
                                       dropout=0.0, batch_first=True).eval()
    return layer, (torch.randn(2, 10, 32),), {}


class Attention(nn.Module):
    def forward(self, q, k, v):
        return F.scaled_dot_product_attention(q, k, v, is_causal=True)


def sdpa():
    _seed()
    q, k, v = (torch.randn(1, 2, 8, 16) for _ in range(3))
    return Attention(), (q, k, v), {}


class EmbedNorm(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(50, 16)
        self.norm = nn.LayerNorm(16)

    def forward(self, ids):
        return self.norm(self.emb(ids))


def embedding_layernorm():
    _seed()
    return EmbedNorm().eval(), (torch.randint(0, 50, (2, 7)),), {}


class LSTMModel(nn.Module):
    def __init__(self):
        super().__init__()
        self.lstm = nn.LSTM(8, 16, batch_first=True)

    def forward(self, x):
        out, (h, c) = self.lstm(x)
        return out, h, c


def lstm():
    _seed()
    return LSTMModel().eval(), (torch.randn(2, 5, 8),), {}


class GRUModel(nn.Module):
    def __init__(self):
        super().__init__()
        self.gru = nn.GRU(8, 12, batch_first=True)

    def forward(self, x):
        return self.gru(x)[0]


def gru():
    _seed()
    return GRUModel().eval(), (torch.randn(2, 4, 8),), {}


class Reductions(nn.Module):
    def forward(self, x):
        return (
            F.softmax(x, dim=-1),
            F.log_softmax(x, dim=1),
            x.sum(dim=1),
            x.mean(dim=(0, 2), keepdim=True),
            x.amax(dim=-1),
            x.var(dim=-1),
            x.norm(dim=1),
            x.argmax(dim=-1),
        )


def reductions_softmax():
    _seed()
    return Reductions(), (torch.randn(3, 5, 7),), {}


class MultiOut(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(6, 4)

    def forward(self, x, y):
        h = self.lin(x)
        return {"logits": h, "pair": (h.relu(), [y * 2, y.sum()]), "none": None, "k": 3}


def dict_outputs():
    _seed()
    return MultiOut().eval(), (torch.randn(3, 6), torch.randn(2, 2)), {}


def scaled_residual(x, y, *, alpha: float = 1.0, bias=None, flip: bool = False):
    out = x * alpha + torch.sin(y)
    if bias is not None:
        out = out + bias
    return -out if flip else out


def function_kwargs():
    _seed()
    x, y, b = torch.randn(4, 4), torch.randn(4, 4), torch.randn(4)
    return scaled_residual, (x, y), {"alpha": 0.5, "bias": b, "flip": True}


class Indexing(nn.Module):
    def forward(self, x, idx, y):
        picked = x[idx]
        rows = x[:, idx[:2]]
        y = y.clone()
        y[y < 0] = 0.0
        return picked, rows, y


def indexing_mask_assign():
    _seed()
    return Indexing(), (torch.randn(6, 5), torch.tensor([4, 0, 2]), torch.randn(3, 4)), {}


class SortScan(nn.Module):
    def forward(self, x):
        values, indices = torch.topk(x, 3, dim=-1)
        s, si = torch.sort(x, dim=0, descending=True)
        return values, indices, s, si, torch.cumsum(x, dim=1)


def topk_sort_cumsum():
    _seed()
    # distinct values so that sort/topk indices are unambiguous
    x = torch.randperm(40).reshape(5, 8).float() / 10
    return SortScan(), (x,), {}


CASES = {
    f.__name__: f
    for f in (
        mlp, conv_bn_relu, residual_block, depthwise_conv, pooling, transformer_encoder_layer,
        sdpa, embedding_layernorm, lstm, gru, reductions_softmax, dict_outputs, function_kwargs,
        indexing_mask_assign, topk_sort_cumsum,
    )
}


class DynamicMLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 3))

    def forward(self, x):
        return F.softmax(self.net(x), dim=-1)
