"""NaN and infinities through the elementwise and reduction ops of real models, against eager.

    .venv/bin/python scripts/nan_probe.py TARGET [OP...]

Each op runs on an 8-element tensor holding NaN, +-inf and numbers (and a second one for the
binary ops), compiled by lowerkit for TARGET; an op whose dtype, NaN places or other values
differ from eager is printed WRONG, one lowerkit refuses or fails on ERROR. Found the NaN
defects `keep-nan-clamps`, `keep-nan-arg-reductions`, `keep-nan-zero-products` (by scalars,
then by zero tensors) and uneven adaptive average pooling fix (each since a regression in
test/python/test_fuzz_regressions.py).
"""
import sys
import warnings

import torch
import torch.nn.functional as F

import lowerkit

warnings.filterwarnings("ignore")
nan, inf = float('nan'), float('inf')
ops = {
 'relu': lambda v, y: torch.relu(v), 'leaky': lambda v, y: F.leaky_relu(v), 'hardtanh': lambda v, y: F.hardtanh(v),
 'relu6': lambda v, y: F.relu6(v), 'hardsigmoid': lambda v, y: F.hardsigmoid(v), 'hardswish': lambda v, y: F.hardswish(v),
 'threshold': lambda v, y: F.threshold(v, 0.5, -3.0), 'clamp': lambda v, y: v.clamp(-1, 1), 'clamp_min': lambda v, y: v.clamp(min=0.5),
 'clamp_max': lambda v, y: v.clamp(max=0.5), 'clampT': lambda v, y: v.clamp(min=y), 'clampTmax': lambda v, y: v.clamp(max=y),
 'clampTboth': lambda v, y: v.clamp(y, y + 1), 'maximum': lambda v, y: torch.maximum(v, y), 'minimum': lambda v, y: torch.minimum(v, y),
 'maximum_r': lambda v, y: torch.maximum(y, v), 'minimum_r': lambda v, y: torch.minimum(y, v),
 'fmax': lambda v, y: torch.fmax(v, y), 'fmin': lambda v, y: torch.fmin(v, y),
 'elu': lambda v, y: F.elu(v), 'selu': lambda v, y: F.selu(v), 'celu': lambda v, y: F.celu(v), 'gelu': lambda v, y: F.gelu(v),
 'gelu_t': lambda v, y: F.gelu(v, approximate='tanh'), 'silu': lambda v, y: F.silu(v), 'softplus': lambda v, y: F.softplus(v), 'mish': lambda v, y: F.mish(v),
 'sign': lambda v, y: torch.sign(v), 'abs': lambda v, y: v.abs(), 'round': lambda v, y: v.round(), 'floor': lambda v, y: v.floor(), 'frac': lambda v, y: v.frac(),
 'nan_to_num': lambda v, y: torch.nan_to_num(v), 'logsigmoid': lambda v, y: F.logsigmoid(v), 'softshrink': lambda v, y: F.softshrink(v),
 'hardshrink': lambda v, y: F.hardshrink(v), 'tanhshrink': lambda v, y: F.tanhshrink(v), 'sigmoid': lambda v, y: torch.sigmoid(v), 'tanh': lambda v, y: torch.tanh(v),
 'maxpool': lambda v, y: F.max_pool1d(v.view(1, 1, -1), 2).view(-1), 'amax': lambda v, y: v.view(2, -1).amax(1), 'max_dim': lambda v, y: v.view(2, -1).max(1)[0],
 'max_all': lambda v, y: v.max().view(1), 'min_all': lambda v, y: v.min().view(1), 'argmax': lambda v, y: v.view(2, -1).argmax(1), 'argmin': lambda v, y: v.view(2, -1).argmin(1),
 'cummax': lambda v, y: torch.cummax(v, 0)[0], 'sort': lambda v, y: torch.sort(v)[0], 'topk': lambda v, y: torch.topk(v, 2)[0],
 'softmax': lambda v, y: torch.softmax(v, 0), 'hardtanh_T': lambda v, y: F.hardtanh(v, -0.5, 0.5), 'rrelu_eval': lambda v, y: F.rrelu(v, training=False),
 'prelu': lambda v, y: F.prelu(v, torch.tensor([0.25])), 'heaviside': lambda v, y: torch.heaviside(v, y), 'copysign': lambda v, y: torch.copysign(v, y),
 'max_elem_unary_scalar': lambda v, y: torch.clamp(v, min=torch.tensor(0.0)), 'where_gt': lambda v, y: torch.where(v > 0, v, y),
 'lerp': lambda v, y: torch.lerp(v, y, 0.5), 'remainder': lambda v, y: torch.remainder(v, 2.0), 'fmod': lambda v, y: torch.fmod(v, 2.0),
 'norm': lambda v, y: v.norm().view(1), 'logsumexp': lambda v, y: v.view(2, -1).logsumexp(1), 'adaptive_max': lambda v, y: F.adaptive_max_pool1d(v.view(1,1,-1), 2).view(-1),
 'adaptive_avg': lambda v, y: F.adaptive_avg_pool1d(v.view(1, 1, -1), 3).view(-1),
 'adaptive_avg2d': lambda v, y: F.adaptive_avg_pool2d(v.view(1, 1, 2, 4), (1, 3)).view(-1),
 'avgpool': lambda v, y: F.avg_pool1d(v.view(1, 1, -1), 3, 2, 1).view(-1),
 'times_zeros': lambda v, y: v * torch.zeros_like(v), 'mean': lambda v, y: v.view(2, -1).mean(1),
 'layer_norm': lambda v, y: F.layer_norm(v.view(2, -1), (4,)).view(-1), 'cumsum': lambda v, y: torch.cumsum(v, 0),
}
names = sys.argv[2:] or list(ops)
print(len(names), "ops on", sys.argv[1])
v = torch.tensor([nan, 1.0, -2.0, 0.3, inf, -inf, 0.7, nan]); y = torch.tensor([0.0, nan, 3.0, 0.1, 1.0, 0.0, nan, nan])
target = sys.argv[1]
for n in names:
    f = ops[n]
    class M(torch.nn.Module):
        def forward(self, v, y): return f(v, y)
    e = M()(v, y)
    try:
        r = lowerkit.compile(M(), (v, y), target=target, cache=False)(v, y)
    except Exception as ex:
        print(f"{n:14s} ERROR {type(ex).__name__}: {str(ex)[:150]}"); continue
    ok = e.dtype == r.dtype and torch.equal(e.isnan(), r.isnan()) and torch.allclose(torch.nan_to_num(e.double(), 0, 9e9, -9e9), torch.nan_to_num(r.double(), 0, 9e9, -9e9), rtol=1e-5, atol=1e-6)
    if not ok: print(f"{n:14s} WRONG eager={e.tolist()} got={r.tolist()}")
print("done", target)
