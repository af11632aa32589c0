"""Custom-op lowerings for lowerkit-opt --load (no PyTorch op needed to lower the IR)."""

import lowerkit


@lowerkit.custom_op_lowering("lit_demo::squared_relu")
def _(b, x):
    r = b.op("torch.aten.relu", x)
    return b.op("torch.aten.mul.Tensor", r, r)
