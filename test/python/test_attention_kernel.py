"""lowerkit's CPU attention kernel (`iree/kernels/attention.cc`, `iree/cpu_kernels.py`,
`passes/attention.py`): the attentions it takes give eager's answers on AVX-512 and AVX2
code, a causal mask is computed and not read, ingress neither pads nor chunks for it, and a
kernel IREE cannot link falls back to IREE's own attention."""

from __future__ import annotations

import os
import re
import tempfile

import pytest
import torch
import torch.nn.functional as F

import lowerkit
from lowerkit import cache
from lowerkit import target as targets
from lowerkit.iree import cpu_kernels
from lowerkit.runtime.numerics import Tolerance, compare

os.environ.setdefault("XDG_RUNTIME_DIR", tempfile.gettempdir())

# float32 over up to 300 keys, summed in another order than eager's and exponentials from a
# degree-6 polynomial (2e-7 relative): a few ulp of the output's scale
TOL = Tolerance(1e-5)

needs_kernel = pytest.mark.skipif(
    cpu_kernels.attention_object_for(lowerkit.Target.parse("cpu")) is None,
    reason="lowerkit's attention kernel does not build here (no C++ compiler or no AVX2)")


def _avx2_runs_here():
    return cpu_kernels.isa_for(targets.resolve_host_cpu().get("cpu_features", ""),
                               "x86_64") is not None


def _kernel_dispatches(art) -> set[bytes]:
    return set(re.findall(rb"lowerkit_attention_\d+_entry", art.vmfb))


def _iree_attentions(art) -> set[bytes]:
    return {e for e in re.findall(rb"main_dispatch_\d+_[a-z_]+[0-9x]*", art.vmfb)
            if b"attention" in e}


def attentions(q, k, v, q2, k2, v2, rows, keys, per_head, keep, q3, k3, v3):
    """What the kernel takes: plain, causal (square, and fewer rows than keys), a mask shared
    by every head, a key-padding mask, one per head, a bool one with rows whose every key is
    masked, lengths that are no multiple of a vector, and head dims of 64 and 80."""
    return (F.scaled_dot_product_attention(q, k, v),
            F.scaled_dot_product_attention(q, k, v, is_causal=True),
            F.scaled_dot_product_attention(q2, k2, v2, is_causal=True),
            F.scaled_dot_product_attention(q2, k2, v2, attn_mask=rows),
            F.scaled_dot_product_attention(q2, k2, v2, attn_mask=keys),
            F.scaled_dot_product_attention(q2, k2, v2, attn_mask=per_head),
            F.scaled_dot_product_attention(q2, k2, v2, attn_mask=keep, scale=0.3),
            F.scaled_dot_product_attention(q3, k3, v3))


def _args():
    gen = torch.Generator().manual_seed(0)
    r = lambda *s: torch.randn(*s, generator=gen)  # noqa: E731
    q, k, v = r(1, 3, 96, 64), r(1, 3, 96, 64), r(1, 3, 96, 64)
    q2, k2, v2 = r(1, 2, 37, 16), r(1, 2, 53, 16), r(1, 2, 53, 16)
    rows = r(1, 1, 37, 53)
    rows[..., 4, :30] = float("-inf")
    keys = r(1, 1, 1, 53)  # not only 0 and -inf: the kernel scales it to base 2
    keys[..., 45:] = float("-inf")
    keep = torch.rand(1, 2, 37, 53, generator=gen) > 0.4
    # every key masked (eager's safe softmax gives 0), at a block's first row too: its other
    # rows still see keys in every tile
    keep[0, 1, 5] = keep[0, 1, 16] = False
    q3, k3, v3 = r(1, 2, 20, 80), r(1, 2, 300, 80), r(1, 2, 300, 80)
    return (q, k, v, q2, k2, v2, rows, keys, r(1, 2, 37, 53), keep, q3, k3, v3)


def _check(target: str) -> None:
    args = _args()
    expected = attentions(*args)
    art = lowerkit.compile(attentions, args, target=target, cache=False)
    assert art.compile_rung == "fast", art.compile_rung
    assert len(_kernel_dispatches(art)) == 8 and not _iree_attentions(art), \
        (_kernel_dispatches(art), _iree_attentions(art))
    result = compare(art(*args), expected, tol=TOL)
    assert result.ok, result.message


@needs_kernel
def test_the_kernel_computes_every_attention_it_takes_as_eager_does():
    _check("cpu")


@needs_kernel
@pytest.mark.skipif(not _avx2_runs_here(), reason="this CPU runs no x86-64-v3 code")
def test_the_kernel_for_avx2_cpus_computes_them_as_eager_does():
    """x86-64-v3 (AVX2 and FMA): eight query rows per vector, another build of the source."""
    _check("cpu:x86-64-v3")


@needs_kernel
def test_a_causal_mask_is_computed_by_the_kernel_not_read():
    """torch-mlir's causal mask is recognised and not dispatched: the only dispatch of a
    causal attention is the kernel's, and no IREE attention runs."""
    torch.manual_seed(0)
    q, k, v = (torch.randn(1, 2, 64, 32) for _ in range(3))
    fn = lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True)  # noqa: E731
    art = lowerkit.compile(fn, (q, k, v), cache=False)
    exports = set(re.findall(rb"main_dispatch_\d+_[a-z_]+[0-9x]*", art.vmfb))
    assert _kernel_dispatches(art) and not exports, exports
    assert compare(art(q, k, v), fn(q, k, v), tol=TOL).ok


@needs_kernel
def test_a_mask_from_indices_that_is_not_causal_is_read_as_it_is():
    """A mask computed from indices that looks causal but is not (keys after the row seen,
    the other side of the diagonal) must not be taken for torch's ``is_causal``."""
    torch.manual_seed(0)
    q, k, v = (torch.randn(1, 2, 48, 16) for _ in range(3))

    def fn(q, k, v):
        rows = torch.arange(48).unsqueeze(-1)
        keys = torch.arange(48)
        mask = torch.where(keys >= rows, 0.0, float("-inf"))  # the anti-causal mask
        return F.scaled_dot_product_attention(q, k, v, attn_mask=mask[None, None])

    art = lowerkit.compile(fn, (q, k, v), cache=False)
    assert _kernel_dispatches(art)
    result = compare(art(q, k, v), fn(q, k, v), tol=TOL)
    assert result.ok, result.message


@needs_kernel
def test_with_the_kernel_ingress_neither_pads_nor_chunks():
    """The kernel takes any length and skips the keys a causal row cannot see: Whisper's 1500
    positions reach it unpadded, and a causal attention over 1024 is one attention, not
    chunks of rows."""
    torch.manual_seed(0)
    cases = [(lambda q, k, v: F.scaled_dot_product_attention(q, k, v), 1500),
             (lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True), 1024)]
    for fn, length in cases:
        q, k, v = (torch.randn(1, 2, length, 16) for _ in range(3))
        art = lowerkit.compile(fn, (q, k, v), cache=False)
        stage = next(r for r in art.records if r.name == "lower-attention")
        # one attention (8 for the chunks), over the program's own rows (no pad to 1504)
        assert stage.ops.get("flow.dispatch") == 1 and "tensor.pad" not in stage.ops, stage.ops
        result = compare(art(q, k, v), fn(q, k, v), tol=TOL)
        assert result.ok, (length, result.message)


def _dead_rows():
    """Three masked attentions with rows whose every key is masked (eager gives them 0): a
    mask every head shares, one per head, and a key-padding mask that masks every key."""
    gen = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(1, 2, 40, 16, generator=gen) for _ in range(3))
    rows = torch.randn(1, 1, 40, 40, generator=gen)
    rows[..., 7, :] = float("-inf")
    per_head = torch.randn(1, 2, 40, 40, generator=gen)
    per_head[0, 1, 30, :] = per_head[0, 0, 0, :] = float("-inf")
    keys = torch.full((1, 1, 1, 40), float("-inf"))

    def fn(q, k, v, rows, per_head, keys):
        return tuple(F.scaled_dot_product_attention(q, k, v, attn_mask=m)
                     for m in (rows, per_head, keys))

    args = (q, k, v, rows, per_head, keys)
    expected = fn(*args)
    assert expected[0][0, :, 7].abs().max() == 0 and expected[2].abs().max() == 0
    return fn, args, expected


@needs_kernel
def test_rows_whose_every_key_is_masked_cost_no_dispatch_of_their_own():
    """The kernel gives such rows 0 itself, so ingress adds no check of the mask (a reduction
    over all of it, and a fill of the output): the kernel's dispatches are the program's
    only ones, and the dead rows come out 0 as in eager."""
    fn, args, expected = _dead_rows()
    art = lowerkit.compile(fn, args, cache=False)
    exports = set(re.findall(rb"main_dispatch_\d+_[a-z_]+[0-9x]*", art.vmfb))
    assert len(_kernel_dispatches(art)) == 3 and not exports, exports
    result = compare(art(*args), expected, tol=TOL)
    assert result.ok, result.message


@needs_kernel
def test_ireess_form_zeroes_dead_rows_where_the_kernel_does_not_take_the_mask(monkeypatch):
    """Ingress leaves dead rows to the kernel wherever the kernel could take the attention;
    if the pass then keeps IREE's form (here: told the kernel takes nothing), that form
    zeroes them, where IREE's attention alone gives NaN."""
    from lowerkit.passes import attention

    monkeypatch.setattr(attention, "_kernel_takes", lambda *a, **k: False)
    fn, args, expected = _dead_rows()
    art = lowerkit.compile(fn, args, cache=False)
    assert not _kernel_dispatches(art) and _iree_attentions(art)
    result = compare(art(*args), expected, tol=TOL)
    assert result.ok, result.message


@needs_kernel
@pytest.mark.parametrize("masked", [False, True], ids=["plain", "dead-rows"])
def test_a_kernel_iree_cannot_link_falls_back_to_ireess_attention(monkeypatch, tmp_path,
                                                                   masked):
    """The compile ladder's first rung calls IREE's form of the same attention, kept beside
    the kernel's call, when iree-compile rejects the kernel (here an object that is no ELF):
    the compile warns, never fails, and gives eager's answer, 0 in dead rows included."""
    from lowerkit.iree import compiler

    monkeypatch.setattr(compiler, "_WARNED", set())  # warned once a process: not before here
    bad = tmp_path / "not-an-object.o"
    bad.write_bytes(b"not an ELF object")
    monkeypatch.setattr(cpu_kernels, "attention_object_for",
                        lambda target: cpu_kernels.KernelObject(bad, "x86-64-v4", 16))
    torch.manual_seed(0)
    if masked:
        fn, args, expected = _dead_rows()
    else:
        args = tuple(torch.randn(1, 2, 32, 16) for _ in range(3))
        fn = lambda q, k, v: F.scaled_dot_product_attention(q, k, v)  # noqa: E731
        expected = fn(*args)
    with pytest.warns(UserWarning, match="IREE's tile sizes"):
        art = lowerkit.compile(fn, args, cache=False)
    assert art.compile_rung == "fast, IREE's tile sizes"
    assert not _kernel_dispatches(art) and _iree_attentions(art)
    result = compare(art(*args), expected, tol=TOL)
    assert result.ok, result.message


def test_the_isa_follows_the_target_cpu():
    """AVX-512 (F, BW, DQ, VL): sixteen rows a vector; AVX2 and FMA: eight; neither, or not
    x86-64: no kernel (IREE's own attention)."""
    v3 = "+avx,+avx2,+bmi,+bmi2,+f16c,+fma,+lzcnt,+movbe"
    avx512 = v3 + ",+avx512f,+avx512bw,+avx512cd,+avx512dq,+avx512vl"
    assert cpu_kernels.isa_for(avx512, "x86_64-unknown-unknown-eabi-elf") == ("x86-64-v4", 16)
    assert cpu_kernels.isa_for(v3, "x86_64-unknown-linux-gnu") == ("x86-64-v3", 8)
    assert cpu_kernels.isa_for("+avx,+avx2,+fma", "x86_64-unknown-linux-gnu") is None  # no BMI
    assert cpu_kernels.isa_for("+avx,+sse4.2", "x86_64-unknown-linux-gnu") is None
    assert cpu_kernels.isa_for(avx512, "aarch64-unknown-linux-gnu") is None


def test_turning_the_kernels_off_changes_the_compile_caches_key(monkeypatch):
    """A program compiled with the kernels must not answer for one compiled without them."""
    on = cache.toolchain_versions()
    monkeypatch.setenv(cpu_kernels.ENV, "0")
    assert cpu_kernels.attention_object_for(lowerkit.Target.parse("cpu")) is None
    assert cache.toolchain_versions() != on


def test_without_a_compiler_attention_keeps_ireess_op(monkeypatch):
    """A machine without a C++ compiler builds no kernel: the attention is IREE's op, padded
    to its tiles as before, and the answer is eager's."""
    monkeypatch.setattr(cpu_kernels, "_compiler", lambda: None)
    assert cpu_kernels.attention_object_for(lowerkit.Target.parse("cpu")) is None
    torch.manual_seed(0)
    q, k, v = (torch.randn(1, 2, 1500, 16) for _ in range(3))
    fn = lambda q, k, v: F.scaled_dot_product_attention(q, k, v)  # noqa: E731
    art = lowerkit.compile(fn, (q, k, v), cache=False)
    assert not _kernel_dispatches(art) and _iree_attentions(art)
    assert compare(art(q, k, v), fn(q, k, v), tol=TOL).ok


@needs_kernel
def test_an_attention_the_kernel_does_not_take_is_still_padded_for_ireess_tiles():
    """A head dim over `KERNEL_MAX_HEAD_DIM` stays IREE's op, so ingress still pads Whisper's
    1500 positions to its tiles (unpadded, its key loop would go 30 keys a step)."""
    torch.manual_seed(0)
    q, k, v = (torch.randn(1, 1, 1500, 160) for _ in range(3))
    fn = lambda q, k, v: F.scaled_dot_product_attention(q, k, v)  # noqa: E731
    art = lowerkit.compile(fn, (q, k, v), cache=False)
    stage = next(r for r in art.records if r.name == "lower-attention")
    assert "flow.dispatch" not in stage.ops and "tensor.pad" in stage.ops, stage.ops
    assert compare(art(q, k, v), fn(q, k, v), tol=TOL).ok


@needs_kernel
@pytest.mark.parametrize("target", ["cpu", pytest.param("cpu:x86-64-v3", marks=pytest.mark.skipif(
    not _avx2_runs_here(), reason="this CPU runs no x86-64-v3 code"))])
def test_a_nan_in_a_query_or_a_key_reaches_the_output_as_eagers_does(target):
    """A NaN score must not weigh 0: a NaN in a query row makes that row NaN, one in a key
    makes every row of its head NaN, as eager gives them (never a silent number); on
    AVX-512 (vscalefps' exponential, two vectors of rows) and AVX2 code."""
    torch.manual_seed(0)
    q, k, v = (torch.randn(1, 2, 40, 16) for _ in range(3))
    q[0, 0, 3, 5] = float("nan")
    q[0, 0, 27, 1] = float("nan")  # in the second vector of rows of a two-vector block
    k[0, 1, 21, 2] = float("nan")
    fn = lambda q, k, v: F.scaled_dot_product_attention(q, k, v)  # noqa: E731
    art = lowerkit.compile(fn, (q, k, v), target=target, cache=False)
    assert _kernel_dispatches(art)
    expected = fn(q, k, v)
    assert torch.isnan(expected[0, 0, 3]).all() and torch.isnan(expected[0, 1]).all()
    assert torch.isnan(expected[0, 0, 27]).all()
    result = compare(art(q, k, v), expected, tol=TOL)
    assert result.ok, result.message


@needs_kernel
def test_any_row_count_and_head_dim_in_two_vectors_of_rows():
    """With AVX-512 the kernel takes 32 rows at a time (`block2`, head dims 16, 32 and 64),
    the rest 16 at a time: row counts that leave the second vector partly empty (21, 53, 91),
    keys that are no multiple of its 8-key step, plain, causal and key-padding masked, match
    eager on every row. A mask read from memory whose tiles are all -inf for one vector of
    rows and not the other (the keys after each row masked) must not skip them."""
    gen = torch.Generator().manual_seed(0)
    cases = []
    for rows, keys, d in ((21, 21, 32), (53, 53, 64), (91, 37, 16), (53, 70, 32)):
        q = torch.randn(1, 2, rows, d, generator=gen)
        k, v = (torch.randn(1, 2, keys, d, generator=gen) for _ in range(2))
        pad = torch.randn(1, 1, 1, keys, generator=gen)  # not only 0 and -inf: scaled to base 2
        pad[..., keys - 5:] = float("-inf")
        later = torch.randn(1, 1, rows, keys, generator=gen).masked_fill(
            torch.ones(rows, keys, dtype=torch.bool).triu(1), float("-inf"))
        cases.append((q, k, v, pad, later))

    def fn(*flat):
        out = []
        for q, k, v, pad, later in zip(*[iter(flat)] * 5):
            out += [F.scaled_dot_product_attention(q, k, v),
                    F.scaled_dot_product_attention(q, k, v, attn_mask=pad),
                    F.scaled_dot_product_attention(q, k, v, attn_mask=later)]
            if q.shape[2] <= k.shape[2]:  # torch's is_causal: aligned at the top left
                out.append(F.scaled_dot_product_attention(q, k, v, is_causal=True))
        return tuple(out)

    args = tuple(t for case in cases for t in case)
    art = lowerkit.compile(fn, args, cache=False)
    assert len(_kernel_dispatches(art)) == 15 and not _iree_attentions(art)
    result = compare(art(*args), fn(*args), tol=TOL)
    assert result.ok, result.message


def test_the_kernels_head_dim_bound_is_the_passes():
    """The C++ kernel's MAX_D and `passes.attention.KERNEL_MAX_HEAD_DIM` are one bound written
    in two languages: a wider head let through by the pass would overrun the kernel's arrays."""
    from lowerkit.passes import attention

    source = (cpu_kernels.SOURCES / "attention.cc").read_text()
    bound = re.search(r"^#define MAX_D (\d+)", source, re.M)
    assert bound and int(bound[1]) == attention.KERNEL_MAX_HEAD_DIM, bound
