"""int64 index math on the portable Vulkan target, which has no Int64 (issue 21, item 1).

IREE emulates i64 loads, stores, adds, compares and selects there (topk and argmax indices,
gathers, embeddings: `test_vulkan.py::test_scalars_and_indices_on_the_portable_vulkan_target`),
but not ``%``, ``//`` or ``abs``. `narrow-index-math` computes those in i32 where it can prove
the values fit; an int64 value it cannot bound keeps the clear error.
"""

from __future__ import annotations

import os
import re
import tempfile

import pytest
import torch

import lowerkit
from lowerkit.passes import narrow_index_math
from lowerkit.runtime.executable import usable_drivers
from lowerkit.runtime.numerics import compare

os.environ.setdefault("XDG_RUNTIME_DIR", tempfile.gettempdir())

needs_vulkan = pytest.mark.skipif(
    "vulkan" not in usable_drivers(),
    reason="IREE's vulkan driver opens no device here (apt-get install mesa-vulkan-drivers libvulkan1)")


def index_math(x, a):
    """``%`` of topk indices, ``//`` of argmax indices, ``abs`` of a clamped int64 input, a
    causal mask from two aranges (as SDPA's ``is_causal`` builds it): each failed to compile on
    the portable target ("failed to legalize operation 'arith.remsi'", "... 'vector.extract'"
    of ``vector<2xi64>`` for the mask, which IREE hoists as an int64 constant)."""
    top = x.topk(3, dim=-1).indices
    causal = torch.arange(16)[None, :] - torch.arange(4)[:, None] <= 0
    return (top % 4, x.argmax(-1) // 3, a.clamp(-1, 2).abs(), x.gather(1, top % 4),
            torch.where(causal, x, 0.0))


@needs_vulkan
def test_index_math_that_fits_compiles_and_matches_eager_on_the_portable_vulkan_target():
    x = torch.randn(4, 16, generator=torch.Generator().manual_seed(0))
    a = torch.arange(-4, 4)
    got, expected = lowerkit.compile(index_math, (x, a), target="vulkan")(x, a), index_math(x, a)
    result = compare(got, expected)
    assert result.ok, result.message


@pytest.mark.slow  # test_targets.py::test_int64_on_the_portable_vulkan_target_is_a_clear_error
@needs_vulkan      # holds the same behaviour for abs in the default suite
def test_int64_math_on_unbounded_values_is_still_the_clear_error():
    """A user's int64 input can hold anything: its ``%`` is not narrowed, and the error says
    what to do."""
    with pytest.raises(lowerkit.UnsupportedError) as info:
        lowerkit.compile(lambda i: i % 3, (torch.arange(8),), target="vulkan", cache=False)
    assert "no Int64" in str(info.value) and "vulkan:rdna3" in str(info.value)


# -- the pass alone, on IREE's linalg (no compile) -------------------------------------------
_MODULE = """
#map = affine_map<(d0) -> (d0)>
#map1 = affine_map<(d0, d1) -> (d0, d1)>
#map2 = affine_map<(d0, d1) -> (d0)>
func.func @main(%arg0: tensor<8xi64>) -> (tensor<8xi64>, tensor<8xi64>, tensor<4xi64>) {
  %c3 = arith.constant 3 : i64
  %c0 = arith.constant 0 : i64
  %e = tensor.empty() : tensor<8xi64>
  %iota = linalg.generic {indexing_maps = [#map], iterator_types = ["parallel"]} outs(%e : tensor<8xi64>) {
  ^bb0(%out: i64):
    %i = linalg.index 0 : index
    %c = arith.index_cast %i : index to i64
    linalg.yield %c : i64
  } -> tensor<8xi64>
  %bounded = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel"]} ins(%iota : tensor<8xi64>) outs(%e : tensor<8xi64>) {
  ^bb0(%in: i64, %out: i64):
    %r = arith.remsi %in, %c3 : i64
    linalg.yield %r : i64
  } -> tensor<8xi64>
  %unbounded = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel"]} ins(%arg0 : tensor<8xi64>) outs(%e : tensor<8xi64>) {
  ^bb0(%in: i64, %out: i64):
    %r = arith.remsi %in, %c3 : i64
    linalg.yield %r : i64
  } -> tensor<8xi64>
  %z = tensor.empty() : tensor<4xi64>
  %zero = linalg.fill ins(%c0 : i64) outs(%z : tensor<4xi64>) -> tensor<4xi64>
  %flags = tensor.empty() : tensor<4x16xi1>
  %count = linalg.generic {indexing_maps = [#map1, #map2], iterator_types = ["parallel", "reduction"]} ins(%flags : tensor<4x16xi1>) outs(%zero : tensor<4xi64>) {
  ^bb0(%in: i1, %out: i64):
    %x = arith.extui %in : i1 to i64
    %s = arith.addi %x, %out : i64
    linalg.yield %s : i64
  } -> tensor<4xi64>
  %rank = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel"]} ins(%count : tensor<4xi64>) outs(%z : tensor<4xi64>) {
  ^bb0(%in: i64, %out: i64):
    %a = math.absi %in : i64
    linalg.yield %a : i64
  } -> tensor<4xi64>
  return %bounded, %unbounded, %rank : tensor<8xi64>, tensor<8xi64>, tensor<4xi64>
}
"""


def test_the_pass_narrows_only_what_provably_fits():
    """An iota, its ``% 3``, a count of 16 flags and its ``abs`` are done in i32 (the iota
    reaches the ``%`` as an i32 tensor); the ``% 3`` of the function's own int64 argument is
    not."""
    from iree.compiler import ir

    with ir.Context():
        module = ir.Module.parse(_MODULE)
        assert narrow_index_math.narrow(module.operation) == 4
        assert module.operation.verify()
        text = str(module)
    assert len(re.findall(r"arith\.remsi %\w+, %\w+ : i64", text)) == 1  # the argument's
    assert len(re.findall(r"arith\.remsi %\w+, %\w+ : i32", text)) == 1  # the iota's
    assert re.search(r"math\.absi %\w+ : i32", text) and not re.search(r"math\.absi %\w+ : i64", text)
    assert re.search(r"arith\.index_cast %\w+ : index to i32", text)
    assert re.search(r"arith\.addi %\w+, %\w+ : i32", text)  # the count
    assert "-> tensor<8xi32>" in text


def test_ranges_of_index_arithmetic():
    """The bounds the proof rests on: a sum of 16 flags is at most 16, a clamp bounds an
    unknown value, ``%`` by 3 of a non-negative value is in [0, 2]."""
    from iree.compiler import ir

    with ir.Context():
        module = ir.Module.parse(_MODULE)
        ranges = narrow_index_math.Ranges(ir)
        func = module.body.operations[0]
        results = {i: v for i, v in enumerate(list(func.regions[0].blocks[0].operations)[-1].operands)}
        assert ranges.tensor(results[0]) == (0, 2)
        assert ranges.tensor(results[1]) is None  # x % 3 of any int64 x
        assert ranges.tensor(results[2]) == (0, 16)


_PADDED = """
#map = affine_map<(d0) -> (d0)>
func.func @main() -> tensor<10xi64> {
  %c3 = arith.constant 3 : i64
  %big = arith.constant 1099511627776 : i64
  %e = tensor.empty() : tensor<8xi64>
  %iota = linalg.generic {indexing_maps = [#map], iterator_types = ["parallel"]} outs(%e : tensor<8xi64>) {
  ^bb0(%out: i64):
    %i = linalg.index 0 : index
    %c = arith.index_cast %i : index to i64
    linalg.yield %c : i64
  } -> tensor<8xi64>
  %p = tensor.pad %iota low[1] high[1] {
  ^bb0(%x: index):
    tensor.yield %big : i64
  } : tensor<8xi64> to tensor<10xi64>
  %e2 = tensor.empty() : tensor<10xi64>
  %r = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel"]} ins(%p : tensor<10xi64>) outs(%e2 : tensor<10xi64>) {
  ^bb0(%in: i64, %out: i64):
    %m = arith.remsi %in, %c3 : i64
    linalg.yield %m : i64
  } -> tensor<10xi64>
  return %r : tensor<10xi64>
}
"""


def test_a_padding_value_that_does_not_fit_keeps_the_op_wide():
    """A pad's values are its source's and the value its body yields (2**40 here): the ``% 3``
    of the padded iota stays i64."""
    from iree.compiler import ir

    with ir.Context():
        module = ir.Module.parse(_PADDED)
        narrow_index_math.narrow(module.operation)
        assert re.search(r"arith\.remsi %\w+, %\w+ : i64", str(module))


def test_the_int64_hint_reads_types_not_attributes():
    """A failure to legalize a byte compare names its predicate as ``8 : i64``; the hint that
    the GPU lacks Int64 is for i64 values only (it once misled on exactly that)."""
    from lowerkit.iree.compiler import _hint
    from lowerkit.target import Target

    portable = Target.parse("vulkan")
    byte_compare = ("failed to legalize operation 'arith.cmpi': %4 = \"arith.cmpi\"(%1, %2) "
                    "<{predicate = 8 : i64}> : (vector<4xi8>, vector<4xi8>) -> vector<4xi1>")
    long_add = "failed to legalize operation 'arith.addi': %4 = \"arith.addi\"(%1, %2) : (i64, i64) -> i64"
    assert _hint(byte_compare, portable) == ""
    assert "no Int64" in _hint(long_add, portable)
