"""Element types a target cannot store, and the text of the op that converts them.

`widen-narrow-io` (at a public function's boundary) and `widen-narrow-storage` (inside it) both
map a narrow element type to the 32-bit one it travels as, and both write the elementwise
``linalg.generic`` that converts a tensor between the two. Works in either MLIR build.
"""

from __future__ import annotations

from typing import Any

from ..ir import Build


def conversion(elem: str, widths: frozenset[int]) -> tuple[str, str, str] | None:
    """``(wide type, widening op, narrowing op)`` for a narrow element type, else None."""
    if elem == "i1" and 8 not in widths:  # bools are stored as bytes
        return "i32", "arith.extui", "arith.trunci"
    if elem in ("i8", "i16") and int(elem[1:]) not in widths:
        return "i32", "arith.extsi", "arith.trunci"
    if elem in ("f16", "bf16") and 16 not in widths:
        return "f32", "arith.extf", "arith.truncf"
    return None


def tensor_parts(type_: Any) -> tuple[list[str], str] | None:
    """``(dims as text, element type)`` of a ranked tensor type."""
    ir = Build.of_object(type_).ir
    if type_.typeid != ir.RankedTensorType.static_typeid:
        return None
    t = ir.RankedTensorType(type_)
    dims = ["?" if t.is_dynamic_dim(i) else str(t.get_dim_size(i)) for i in range(t.rank)]
    return dims, str(t.element_type)


def tensor_text(dims: list[str], elem: str) -> str:
    return "tensor<" + "".join(f"{d}x" for d in dims) + elem + ">"


class ConversionWriter:
    """Builds the text of a function converting tensors, one SSA value a line (`widen-narrow-io`'s
    public wrapper, `widen-narrow-storage`'s helpers)."""

    def __init__(self):
        self.lines: list[str] = []
        self.n = 0

    def fresh(self) -> str:
        self.n += 1
        return f"%v{self.n}"

    def convert(self, value: str, dims: list[str], src: str, dst: str, op: str) -> str:
        rank = len(dims)
        sizes = []
        for i, d in enumerate(dims):
            if d == "?":
                c, s = self.fresh(), self.fresh()
                self.lines += [f"{c} = arith.constant {i} : index",
                               f"{s} = tensor.dim {value}, {c} : {tensor_text(dims, src)}"]
                sizes.append(s)
        empty, out = self.fresh(), self.fresh()
        ids = ", ".join(f"d{i}" for i in range(rank))
        amap = f"affine_map<({ids}) -> ({ids})>"
        iters = ", ".join(['"parallel"'] * rank)
        self.lines += [
            f"{empty} = tensor.empty({', '.join(sizes)}) : {tensor_text(dims, dst)}",
            f"{out} = linalg.generic {{indexing_maps = [{amap}, {amap}], iterator_types = [{iters}]}}"
            f" ins({value} : {tensor_text(dims, src)}) outs({empty} : {tensor_text(dims, dst)}) {{",
            f"^bb0(%in: {src}, %out: {dst}):",
            f"  %c = {op} %in : {src} to {dst}",
            f"  linalg.yield %c : {dst}",
            f"}} -> {tensor_text(dims, dst)}",
        ]
        return out
