"""A frozen tensor inside a list argument reaches torch-mlir as a node (`lowerkit.ingress.constant_lists`):
torch-mlir's importer stopped at it with "Heterogeneous lists are not supported" (Swin-T, CoAtNet)."""

from __future__ import annotations

import torch

import lowerkit


class _RelativeBias(torch.nn.Module):
    """Swin's relative position bias in small: a table indexed by a constant index buffer,
    and a buffer concatenated with a computed tensor."""

    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.table = torch.nn.Parameter(torch.randn(7, 3))
        self.register_buffer("index", torch.tensor([6, 0, 3, 3, 1]))
        self.register_buffer("tail", torch.randn(2, 3))

    def forward(self, x):
        bias = self.table[self.index]              # aten.index.Tensor(table, [index])
        return torch.cat([x + bias, self.tail])    # aten.cat([computed, tail])


def test_a_constant_index_and_a_constant_in_cat_compile_and_match_eager():
    model, x = _RelativeBias().eval(), torch.randn(5, 3)
    art = lowerkit.compile(model, (x,), cache=False)
    torch.testing.assert_close(art(x), model(x), rtol=0, atol=0)
