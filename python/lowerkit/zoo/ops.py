"""Small programs around single unusual ops: the ones real models use and lowerings trip on."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn


def _seeded():
    torch.manual_seed(0)


class EmbeddingBagSum(nn.Module):
    def __init__(self):
        super().__init__()
        self.bag = nn.EmbeddingBag(500, 32, mode="sum")
        self.head = nn.Linear(32, 4)

    def forward(self, ids, offsets):
        return self.head(self.bag(ids, offsets))


def embedding_bag():
    """``nn.EmbeddingBag`` (sum) over variable-length bags given by offsets."""
    _seeded()
    return EmbeddingBagSum().eval(), (torch.randint(0, 500, (40,)), torch.tensor([0, 5, 17, 30]))


class GatherScatter(nn.Module):
    def forward(self, x, idx, src):
        g = torch.gather(x, 1, idx)
        s = torch.zeros_like(x).scatter_add(1, idx, src)
        return g * 2 + s[:, : g.shape[1]], x.scatter(1, idx, src)


def gather_scatter():
    """``torch.gather``, ``scatter_add`` and ``scatter`` along a dimension."""
    _seeded()
    x = torch.randn(4, 16)
    idx = torch.stack([torch.randperm(16)[:6] for _ in range(4)])
    return GatherScatter(), (x, idx, torch.randn(4, 6))


class TopkSort(nn.Module):
    def forward(self, x):
        values, indices = torch.topk(x, 5, dim=-1)
        s, order = torch.sort(x, dim=-1, descending=True)
        return values, indices, s, order, torch.argmax(x, -1)


def topk_sort():
    """``topk``, ``sort`` (values and indices) and ``argmax``."""
    _seeded()
    return TopkSort(), (torch.randn(8, 64),)


class Cumulative(nn.Module):
    def forward(self, x):
        return torch.cumsum(x, 1), torch.cumsum(x.exp(), -1).log()


def cumsum():
    """``cumsum`` along two dimensions (a log-cumsum-exp)."""
    _seeded()
    return Cumulative(), (torch.randn(4, 32, 16),)


class Interpolate(nn.Module):
    def forward(self, x):
        return (F.interpolate(x, scale_factor=2, mode="nearest"),
                F.interpolate(x, size=(20, 28), mode="bilinear", align_corners=True),
                F.interpolate(x, scale_factor=0.5, mode="bilinear", align_corners=False))


def interpolate():
    """``F.interpolate``: nearest x2, bilinear to a size (aligned corners), bilinear down."""
    _seeded()
    return Interpolate(), (torch.randn(1, 3, 16, 16),)


class Einsum(nn.Module):
    def __init__(self):
        super().__init__()
        self.w = nn.Parameter(torch.randn(8, 16, 16))

    def forward(self, a, b):
        return (torch.einsum("bij,bjk->bik", a, b), torch.einsum("bhi,hij->bhj", a, self.w),
                torch.einsum("bii->bi", b), torch.einsum("bij->j", a))


def einsum():
    """``torch.einsum``: batched matmul, a per-head contraction, a diagonal, a reduction."""
    _seeded()
    return Einsum(), (torch.randn(2, 8, 16), torch.randn(2, 16, 16))


class ViewsInplace(nn.Module):
    def forward(self, x):
        y = x.clone()
        y[:, 0] = 0.0                      # index_put through a view
        y.add_(1.0).mul_(2.0)              # in-place arithmetic
        z = y.view(2, 4, 3, 8).permute(0, 2, 1, 3).contiguous().reshape(6, 32)
        z.narrow(1, 0, 4).relu_()          # in-place through a narrow view
        w = z.unsqueeze(0).expand(3, -1, -1).flatten(0, 1)
        return z, w.t().chunk(2, 0)[1], torch.flip(x, [1])


def views_inplace():
    """Views (view, permute, narrow, expand, chunk, flip) and in-place ops through them."""
    _seeded()
    return ViewsInplace(), (torch.randn(8, 24),)


class BooleanMasks(nn.Module):
    def forward(self, x, mask):
        y = x.masked_fill(mask, -1.0)
        z = torch.where(x > 0, x, 0.1 * x)
        keep = (x.abs() < 1.0) & ~mask
        return y, z, keep, keep.sum(-1), (x * keep).amax(-1), torch.any(mask, -1)


def boolean_masks():
    """Boolean tensors: ``masked_fill``, ``where``, logical ops, counting and ``any``."""
    _seeded()
    x = torch.randn(4, 32)
    return BooleanMasks(), (x, torch.rand(4, 32) > 0.7)


class IndexOps(nn.Module):
    def forward(self, x, idx):
        a = x[idx]                                   # advanced indexing (index.Tensor)
        b = torch.index_select(x, 1, idx[:3])
        c = x.index_add(0, idx, torch.ones(idx.shape[0], x.shape[1]))
        return a, b, c


def index_ops():
    """Advanced indexing, ``index_select`` and ``index_add``."""
    _seeded()
    return IndexOps(), (torch.randn(10, 12), torch.tensor([3, 1, 4, 1, 5]))


class Normalisations(nn.Module):
    def __init__(self):
        super().__init__()
        self.gn = nn.GroupNorm(4, 16)
        self.ln = nn.LayerNorm(16)
        self.inorm = nn.InstanceNorm2d(16, affine=True)

    def forward(self, x):
        return self.gn(x), self.ln(x.permute(0, 2, 3, 1)), self.inorm(x), F.log_softmax(x, 1)


def normalisations():
    """GroupNorm, LayerNorm on a permuted view, InstanceNorm, log-softmax."""
    _seeded()
    return Normalisations().eval(), (torch.randn(2, 16, 8, 8),)


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(64, 128), nn.GELU(), nn.Linear(128, 128), nn.SiLU(),
                                 nn.Linear(128, 10))

    def forward(self, x):
        return self.net(x).softmax(-1)


def mlp():
    """A three-layer MLP: the cheapest model, where per-call overhead dominates."""
    _seeded()
    return MLP().eval(), (torch.randn(1, 64),)


def gemm(n: int = 1024):
    """One square float32 matmul (the bench's GEMM line)."""
    _seeded()

    class Gemm(nn.Module):
        def forward(self, a, b):
            return a @ b

    return Gemm(), (torch.randn(n, n), torch.randn(n, n))


class NonPersistentBuffer(nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("scale", torch.linspace(0.5, 1.5, 16), persistent=False)

    def forward(self, x):
        return x * self.scale


def nonpersistent_buffer():
    """A buffer registered with ``persistent=False`` (as LLaMA's rotary tables usually are):
    torch.export keeps it among the constants, where torch-mlir's importer does not look."""
    return NonPersistentBuffer(), (torch.randn(4, 16),)
