"""scaled_dot_product_attention reaches IREE whole (`ingress.decompositions._sdpa`,
torch-mlir's ``tm_tensor.attention``) and takes each target's form (`passes/attention.py`):
on the CPU IREE's attention op with keys transposed and tile sizes, on Vulkan the math form.
Small sizes: the speed at real ones is benchmarks/attention.py's."""

from __future__ import annotations

import os
import re
import tempfile

import pytest
import torch
import torch.nn.functional as F

import lowerkit
from lowerkit import registry
from lowerkit.iree import cpu_kernels
from lowerkit.passes import attention
from lowerkit.runtime.executable import usable_drivers
from lowerkit.runtime.numerics import Tolerance, compare

os.environ.setdefault("XDG_RUNTIME_DIR", tempfile.gettempdir())

# float32 over 40 keys summed in another order than eager's: a few ulp of the output's scale
TOL = Tolerance(1e-5)


@pytest.fixture
def iree_attention(monkeypatch):
    """IREE's own attention op on the CPU, as where lowerkit's kernel does not build (no C++
    compiler, not x86-64): the tests of the forms lowerkit gives that op."""
    monkeypatch.setenv(cpu_kernels.ENV, "0")


def four_attentions(q, k, v, mask, keep):
    """Plain, causal, an additive float mask and a boolean one, in one program."""
    return (F.scaled_dot_product_attention(q, k, v),
            F.scaled_dot_product_attention(q, k, v, is_causal=True),
            F.scaled_dot_product_attention(q, k, v, attn_mask=mask),
            F.scaled_dot_product_attention(q, k, v, attn_mask=keep, scale=0.2))


def _args():
    torch.manual_seed(0)
    q, k, v = (torch.randn(1, 2, 40, 16) for _ in range(3))
    keep = torch.rand(1, 2, 40, 40) > 0.3
    keep[..., 0] = True  # no row entirely masked (eager gives NaN there)
    return q, k, v, torch.randn(1, 2, 40, 40), keep


def test_attention_variants_match_eager_on_cpu():
    """Each attention reaches IREE as one attention op (keys laid out ``[B, D, S]`` once, no
    softmax over materialised scores) and gives eager's answer."""
    args = _args()
    art = lowerkit.compile(four_attentions, args, cache=False)
    ops = next(r.ops for r in art.records if r.name == "lower-attention")
    assert ops.get("iree_linalg_ext.attention") == 4, ops
    assert ops.get("linalg.transpose") == 4, ops
    assert "tm_tensor.attention" not in ops and "linalg.softmax" not in ops, ops
    result = compare(art(*args), four_attentions(*args), tol=TOL)
    assert result.ok, result.message


def test_cpu_tiles_stay_under_ireess_vector_limit():
    """Each CPU's limit: the tiles compile for AVX2 CPUs too (test_attention_compiles_for_avx2)."""
    for m, s, d in [(40, 40, 16), (1500, 1500, 16), (2048, 2048, 64), (4096, 4096, 128),
                    (77, 333, 80), (197, 197, 64)]:
        for limit in (attention.VECTOR_LIMIT_ELEMENTS, attention.VECTOR_LIMIT_ELEMENTS // 2):
            dm, vm, vk = attention.cpu_tiles(m, s, d, limit)  # AVX-512's limit, AVX2's
            assert vm * vk * d < limit, (m, s, d, vm, vk)
            assert m % vm == 0 and s % vk == 0 and dm % vm == 0 and m % dm == 0
    assert attention.cpu_tiles(64, 64, 512) is None  # left to IREE's own choice


@pytest.mark.skipif("vulkan" not in usable_drivers(),
                    reason="IREE's vulkan driver opens no device here")
def test_attention_variants_match_eager_on_vulkan():
    args = _args()
    art = lowerkit.compile(four_attentions, args, target="vulkan:llvmpipe", cache=False)
    result = compare(art(*args), four_attentions(*args), tol=TOL)
    assert result.ok, result.message


def _row_tile(target: str) -> str:
    """The query rows per vector tile `lower-attention` picks for ``target`` (head dim 64)."""
    from iree.compiler import ir

    t = "tensor<2x64x64xf32>"
    text = (f"func.func @main(%q: {t}, %k: {t}, %v: {t}) -> {t} {{\n"
            f"  %0 = tensor.empty() : {t}\n"
            f"  %1 = tm_tensor.attention ins(%q, %k, %v : {t}, {t}, {t}) outs(%0 : {t}) -> {t}\n"
            f"  return %1 : {t}\n}}")
    stage = next(s for s in registry.pipelines.factory("target-fixes")(target=target).stages
                 if s.name == "lower-attention")
    with ir.Context():
        module = stage.apply(ir.Module.parse(text))
        return re.search(r"vector_common_parallel = \[1, (\d+),", str(module)).group(1)


def test_attention_tiles_follow_the_target_cpu(iree_attention):
    """x86-64-v3 (AVX2) registers hold half of AVX-512's: half the query rows per tile."""
    assert (_row_tile("cpu:znver4"), _row_tile("cpu:x86-64-v3")) == ("4", "2")


def test_attention_compiles_for_avx2(iree_attention):
    """AVX2's tiles compile at the fast rung: IREE's large-vector check, which they reach, is
    off for a module carrying lowerkit's tile sizes (`target.CPU_OP_CONFIG_FLAGS`)."""
    q = torch.randn(1, 2, 64, 64)
    art = lowerkit.compile(lambda q, k, v: F.scaled_dot_product_attention(q, k, v), (q, q, q),
                           target="cpu:x86-64-v3", cache=False)
    assert art.compile_rung == "fast"


def test_a_tile_size_iree_rejects_falls_back_to_ireess_own(monkeypatch, iree_attention):
    """The compile ladder's first fallback drops lowerkit's `compilation_info` (never fail):
    tiles over IREE's large-vector limit, with its check left on, are refused."""
    from lowerkit.iree import compiler

    monkeypatch.setattr(attention, "cpu_tiles", lambda m, s, d, limit=0: (m, m, s))  # too big
    monkeypatch.setattr(compiler, "op_config_flags", lambda bytecode, target: ())
    monkeypatch.setattr(compiler, "_WARNED", set())  # warned once a process: not before here
    args = _args()[:3]
    fn = lambda q, k, v: F.scaled_dot_product_attention(q, k, v)  # noqa: E731
    with pytest.warns(UserWarning, match="IREE's tile sizes"):
        art = lowerkit.compile(fn, args, cache=False)
    assert art.compile_rung == "fast, IREE's tile sizes"
    result = compare(art(*args), fn(*args), tol=TOL)
    assert result.ok, result.message


def test_a_bool_mask_on_torchs_math_path_masks():
    """Heads shared by keys and values (Falcon's multi-query attention) take torch's math form,
    which adds its mask: a bool mask must become 0/-inf first, not 0/1 (a wrong answer)."""
    gen = torch.Generator().manual_seed(3)
    q = torch.randn(1, 4, 8, 8, generator=gen)
    k, v = (torch.randn(1, 1, 8, 8, generator=gen) for _ in range(2))
    keep = torch.ones(8, 8, dtype=torch.bool).tril()[None, None]

    def mqa(q, k, v, keep):
        return F.scaled_dot_product_attention(q, k, v, attn_mask=keep)

    result = compare(lowerkit.compile(mqa, (q, k, v, keep))(q, k, v, keep), mqa(q, k, v, keep))
    assert result.ok, result.message


def _masked_attentions(q, k, v, keep, neg_inf, per_batch, q2, k2, v2, padded):
    """Masks as real programs write them: a bool one with rows whose every key is masked
    (eager's safe softmax gives 0 there), a float one holding -inf, one broadcast over the
    heads (``[B, 1, L, S]``), and a left-padding mask over 256 keys whose first 128 are
    masked (a whole tile of the CPU's online softmax), bool and -inf."""
    return (F.scaled_dot_product_attention(q, k, v, attn_mask=keep),
            F.scaled_dot_product_attention(q, k, v, attn_mask=neg_inf),
            F.scaled_dot_product_attention(q, k, v, attn_mask=per_batch),
            F.scaled_dot_product_attention(q2, k2, v2, attn_mask=padded),
            F.scaled_dot_product_attention(q2, k2, v2, attn_mask=torch.zeros(
                padded.shape).masked_fill(~padded, float("-inf"))))


@pytest.mark.parametrize("target", [
    "cpu", pytest.param("vulkan:llvmpipe", marks=pytest.mark.skipif(
        "vulkan" not in usable_drivers(), reason="IREE's vulkan driver opens no device here"))])
def test_masks_as_eager_reads_them(target):
    """torch-mlir's e2e ``ScaledDotProductAttentionBoolMaskModule_basic`` gave NaN and
    ``...MaskModule_basic`` (a ``[2, 1, 8, 12]`` mask) was 0.65 of its scale off on the CPU."""
    torch.manual_seed(0)
    q, k = torch.randn(2, 3, 8, 16), torch.randn(2, 3, 12, 16)
    v = torch.randn(2, 3, 12, 20)  # a value width other than the query's
    keep = torch.rand(2, 3, 8, 12) > 0.5
    keep[0, 1, 3] = keep[1, 2, 7] = False  # every key masked
    neg_inf = torch.zeros(2, 3, 8, 12).masked_fill(~keep, float("-inf"))
    q2, k2, v2 = torch.randn(1, 2, 4, 16), torch.randn(1, 2, 256, 16), torch.randn(1, 2, 256, 16)
    padded = torch.ones(1, 1, 4, 256, dtype=torch.bool)
    padded[..., :128] = False
    padded = padded.expand(1, 2, 4, 256).contiguous()
    args = (q, k, v, keep, neg_inf, torch.randn(2, 1, 8, 12), q2, k2, v2, padded)
    expected = _masked_attentions(*args)
    assert not any(torch.isnan(e).any() for e in expected)  # eager: 0 for the masked rows
    art = lowerkit.compile(_masked_attentions, args, target=target, cache=False)
    result = compare(art(*args), expected, tol=TOL)
    assert result.ok, result.message


def test_a_prime_sequence_length_is_padded_with_its_padded_keys_masked(iree_attention):
    """ViT's 197 tokens have no divisor for IREE to tile the key loop by (one key a step: 5 ms
    where 224 took 1.1). The kept op sees 224 keys and rows, the 27 padded keys masked from
    indices, and the output is eager's (a padded key left unmasked would take part in every
    softmax)."""
    from lowerkit.runtime.numerics import compare

    torch.manual_seed(0)
    q, k, v = (torch.randn(1, 4, 197, 64) for _ in range(3))
    fn = lambda q, k, v: F.scaled_dot_product_attention(q, k, v)  # noqa: E731
    imported = lowerkit.import_program(fn, (q, k, v))
    text = str(imported.module)
    assert "[1,4,224,64]" in text and "torch.aten.scaled_dot_product_attention" in text, text[:2000]
    art = lowerkit.compile(fn, (q, k, v), cache=False)
    assert compare(art(q, k, v), fn(q, k, v)).ok
    # lengths whose tile is a multiple of 16 keys are not padded
    q2 = torch.randn(1, 4, 192, 64)
    assert "224" not in str(lowerkit.import_program(fn, (q2, q2, q2)).module)


def test_a_long_length_without_a_vector_multiple_tile_is_padded_and_masked_in_the_dispatch(iree_attention):
    """Whisper's 1500 positions tile by 30 keys, not a multiple of the vector width, and that
    attention took 53.5 ms a call where 1504 keys took 29.6 (6 heads, head dim 64): 1500 is
    padded to 1504, and the padded keys' mask, computed from indices, is computed inside the
    attention dispatch, not written out and read (no broadcast dispatch beside it)."""
    import re

    from lowerkit.runtime.numerics import compare

    torch.manual_seed(0)
    q, k, v = (torch.randn(1, 2, 1500, 32) for _ in range(3))
    fn = lambda q, k, v: F.scaled_dot_product_attention(q, k, v)  # noqa: E731
    assert "[1,2,1504,32]" in str(lowerkit.import_program(fn, (q, k, v)).module)
    art = lowerkit.compile(fn, (q, k, v), cache=False)
    exports = set(re.findall(rb"main_dispatch_\d+_[a-z_]+[0-9x]*", art.vmfb))
    assert any(b"attention" in e for e in exports), exports
    assert not any(b"broadcast" in e for e in exports), exports
    assert compare(art(q, k, v), fn(q, k, v)).ok


def test_a_packed_in_projection_stays_a_plain_matmul_on_the_cpu():
    """nn.MultiheadAttention's in-projection is one matmul viewed as [rows, 3, d] and
    transposed; IREE folded the transpose into the matmul (``matmul_like_3x197x768x768``, off
    the data-tiled microkernel path: half the ViT-B blocks' call). `fence-transposed-matmul-
    results` keeps it a plain ``[rows, 3 d]`` matmul."""
    import re

    from lowerkit.runtime.numerics import compare

    torch.manual_seed(0)
    mha = torch.nn.MultiheadAttention(64, 4, batch_first=True).eval()
    x = torch.randn(1, 20, 64)
    fn = lambda x: mha(x, x, x, need_weights=False)[0]  # noqa: E731
    art = lowerkit.compile(fn, (x,), cache=False)
    exports = {e.decode() for e in re.findall(rb"main_dispatch_\d+_matmul_like_[0-9x]+", art.vmfb)}
    assert any(e.endswith("_20x192x64") for e in exports), exports
    assert not any("_3x20x64x64" in e for e in exports), exports
    with torch.no_grad():
        assert compare(art(x), fn(x)).ok


def _stream_executions(fn, args) -> int:
    art = lowerkit.compile(fn, args, cache=False, iree_phases=True)
    return next(p["ops"].get("stream.cmd.execute", 0) for p in art.compile_stats["phases"]
                if p["name"] == "stream")


def test_attentions_fences_do_not_split_the_call():
    """The fences around the CPU attention and a transposed matmul result keep dispatches
    apart without splitting the call's execution: a ``util.optimization_barrier`` there made
    IREE return to the host between dispatches (two ViT-B blocks: 9 executions a call, about
    10 ms of 41). The attention block runs in as many executions as one linear layer."""
    torch.manual_seed(0)
    mha = torch.nn.MultiheadAttention(64, 4, batch_first=True).eval()
    x = torch.randn(1, 20, 64)
    linear = torch.nn.Linear(64, 64).eval()
    assert _stream_executions(lambda x: mha(x, x, x, need_weights=False)[0], (x,)) \
        == _stream_executions(linear, (x,))


def _mask_read_once_for_one_batch_entry(mask_of) -> None:
    """A 4-head attention of 64 query rows over 96 keys with the mask ``mask_of(batch)``: for a
    batch of one no broadcast dispatch copies the mask before the attention, for a batch of two
    (a mask per batch entry) one does; eager's answer both times. Fewer rows than keys, and a
    mask that is not symmetric, so that a read along the wrong dim is caught."""
    import re

    torch.manual_seed(0)
    fn = lambda q, k, v, m: F.scaled_dot_product_attention(q, k, v, attn_mask=m)  # noqa: E731
    for batch, copied in ((1, False), (2, True)):
        q, k, v = torch.randn(batch, 4, 64, 32), torch.randn(batch, 4, 96, 32), torch.randn(
            batch, 4, 96, 32)
        mask = mask_of(batch)
        art = lowerkit.compile(fn, (q, k, v, mask), cache=False)
        exports = set(re.findall(rb"main_dispatch_\d+_[a-z_]+[0-9x]*", art.vmfb))
        assert any(b"attention" in e for e in exports), exports
        assert any(b"broadcast" in e for e in exports) == copied, (batch, exports)
        result = compare(art(q, k, v, mask), fn(q, k, v, mask), tol=TOL)
        assert result.ok, (batch, result.message)


def test_a_mask_shared_by_every_head_is_read_once_not_copied_to_each(iree_attention):
    """A ``[1, 1, L, S]`` float mask reaches IREE broadcast to every head, and that copy was a
    dispatch of its own (72.5 ms of a 4 x 4096 x 64 attention's call): the attention now reads
    the one mask for all heads. A mask that differs per batch entry (``[2, 1, L, S]``) keeps
    its copy. Both give eager's answer."""
    def mask_of(batch):
        mask = torch.randn(batch, 1, 64, 96)
        mask[..., 5, :40] = float("-inf")
        return mask

    _mask_read_once_for_one_batch_entry(mask_of)


def test_a_key_padding_mask_is_read_once_not_copied_to_every_row_and_head(iree_attention):
    """A ``[1, 1, 1, S]`` key-padding mask reached IREE broadcast to every head and query row
    (104 ms of a 317 ms call at 4 x 4096 x 64): the attention now reads the one row of key
    masks for all of them. One that differs per batch entry (``[2, 1, 1, S]``) keeps its copy.
    Both give eager's answer."""
    def mask_of(batch):
        mask = torch.randn(batch, 1, 1, 96)
        mask[..., 70:] = float("-inf")  # padded keys
        return mask

    _mask_read_once_for_one_batch_entry(mask_of)


def test_a_long_causal_attention_goes_in_chunks_of_rows_over_the_keys_they_see(iree_attention):
    """IREE's attention computes every key tile of every row, the masked ones too: a causal
    attention over 1024 positions or more goes as one attention per chunk of query rows, each
    over the keys up to its last row, its mask computed inside the dispatch. A length that
    does not split into whole key tiles stays one attention. Both give eager's answer."""
    import re

    from lowerkit.ingress import decompositions

    torch.manual_seed(0)
    fn = lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True)  # noqa: E731
    for length, attentions in ((1024, decompositions.SDPA_CAUSAL_CHUNKS), (1000, 1)):
        q, k, v = (torch.randn(1, 2, length, 16) for _ in range(3))
        art = lowerkit.compile(fn, (q, k, v), cache=False)
        exports = set(re.findall(rb"main_dispatch_\d+_[a-z_]+[0-9x]*", art.vmfb))
        keys = {e.rsplit(b"x", 1)[1] for e in exports if b"attention" in e}
        assert len(keys) == attentions, (length, exports)  # each chunk over its own keys
        assert not any(b"broadcast" in e for e in exports), exports
        result = compare(art(q, k, v), fn(q, k, v), tol=TOL)
        assert result.ok, (length, result.message)
