"""lower-attention: ``tm_tensor.attention`` (torch-mlir's ``scaled_dot_product_attention``) as
each target's IREE compiles it fastest or at all.

lowerkit keeps ``F.scaled_dot_product_attention`` whole through import (`ingress.decompositions`)
and torch-mlir (``backend-legal-ops``), so that it reaches IREE as one ``tm_tensor.attention``
instead of torch's math decomposition: two batch matmuls around a softmax over the whole
``[heads, L, L]`` score matrix, materialised (4 heads x 1500 x 16: 315 ms a call against 6.6 ms
eager, issue 22). IREE turns one attention op into ``iree_linalg_ext.online_attention``, a
tiled online-softmax loop that never writes the scores out. What each target needs:

* **llvm-cpu** (`for_cpu`): on an x86-64 CPU with AVX2 or AVX-512 and a C++ compiler,
  lowerkit's own kernel (`iree/kernels/attention.cc`, `iree.cpu_kernels`) for the attentions
  it takes (`_kernel_takes`): a ``flow.dispatch`` of a ``stream.executable`` linked with its
  object, and IREE's form below kept beside it for the compile ladder. Otherwise, and as that
  form: IREE's own tile sizes for attention are poor (4 x 1024 x 64: 210 ms
  of CPU time a call; 4 x 1500 x 16: 14-16 ms) and its codegen reduces along the key dimension
  inside vectors. Here the keys are transposed once (``[B, D, S]``, a dispatch of its own behind
  a barrier), so that ``Q @ K^T`` is an
  ordinary broadcast-FMA matmul, and the op carries a ``compilation_info`` with tiles from
  `cpu_tiles` (the same shapes: 16 ms and 10-12 ms; benchmarks/attention.py). IREE refuses
  vector contractions of 512 native vectors; at head dim 64 the good tiles (four rows by
  thirty-two keys) reach that, so a module with these tiles is compiled with the check off
  (`target.CPU_OP_CONFIG_FLAGS`, and tiles of up to 1024 native vectors of the target's CPU:
  4 x 1024 x 64 then 13 ms a call against 22 ms at 512 and 21 ms eager, under load). If IREE
  rejects them anyway, the compile ladder's first fallback drops them.
* **Vulkan** (`decompose`): IREE 3.13's SPIR-V path cannot compile the attention op
  ("online_attention op result #0 must be variadic of ranked tensor", after bufferization),
  so it gets the math form back as linalg: scores, ``linalg.softmax``, a batch matmul.
* **CUDA**: IREE's GPU attention pipeline, as it is.

Runs in IREE's MLIR build, on linalg on tensors (`pipelines/target_fixes.py`).
"""

from __future__ import annotations

import math
import re
from typing import Any

from ..ir import KERNEL_FALLBACK, Build
from ._source_fence import COMPUTE_BARRIER

NAME = "lower-attention"
BUILD = "iree"

_TENSOR = re.compile(r"^tensor<((?:\d+x)+)(\w+)>$")
# IREE's llvm-cpu refuses a vector contraction whose iteration space reaches 512 native
# vectors (LLVMCPUVerifyVectorSizeLegality; 32 KiB with AVX-512, 16 KiB with AVX2): both of
# attention's matmuls span [VM, VK, D] f32.
NATIVE_VECTORS = 512
VECTOR_LIMIT_ELEMENTS = 64 * NATIVE_VECTORS // 4  # AVX-512's; `cpu_tiles` takes the target's
MAX_KEY_TILE = 32       # keys per step of the online softmax (a power of two where S allows)
MAX_ROW_TILE = 4        # query rows per vector tile
ROWS_PER_WORKGROUP = 64


def _shape(type_: Any) -> tuple[list[int], str] | None:
    m = _TENSOR.match(str(type_))
    if not m:
        return None
    return [int(d) for d in m.group(1).rstrip("x").split("x")], m.group(2)


def largest_divisor(n: int, at_most: int, ok=lambda d: True) -> int | None:
    """The largest divisor of ``n`` up to ``at_most`` that ``ok`` accepts (a tile size)."""
    return next((d for d in range(min(n, at_most), 0, -1) if n % d == 0 and ok(d)), None)


def cpu_tiles(m: int, s: int, d: int,
              limit: int = VECTOR_LIMIT_ELEMENTS) -> tuple[int, int, int] | None:
    """(rows per workgroup, rows per vector tile, keys per step) for a ``[B, m, d]`` query
    against ``s`` keys, or None to leave the op to IREE's own choice. Measured on a Zen 5 host
    under load (CPU time a call; benchmarks/attention.py has the interleaved runs): 4 x 2048 x
    16 at (64, 4, 32) 15.6 ms against 19.5 ms for IREE's tiles, 4 x 1024 x 64 at (64, 2, 32)
    15.8 ms against 210 ms, 4 x 1500 x 16 at (60, 4, 30) 11.7 ms against 16 ms. ``limit``: the
    f32 elements IREE allows a vector contraction on the target's CPU (`NATIVE_VECTORS`)."""
    if not 1 <= d <= 256:
        return None
    vk = largest_divisor(s, MAX_KEY_TILE, lambda k: k * d < limit)
    if vk is None:
        return None
    vm = largest_divisor(m, MAX_ROW_TILE, lambda r: r * vk * d < limit)
    if vm is None:
        return None
    dm = largest_divisor(m, ROWS_PER_WORKGROUP, lambda r: r % vm == 0) or vm
    return dm, vm, vk


def _attentions(module_op: Any, ir: Any) -> list[Any]:
    found = []

    def visit(op):
        if op.name == "tm_tensor.attention":
            found.append(op)
        return ir.WalkResult.ADVANCE

    module_op.walk(visit)
    return found


def _operands(op: Any, ir: Any) -> tuple[list[Any], Any]:
    """(inputs: q, k, v[, mask], output init) of a ``tm_tensor.attention``."""
    operands = list(op.operands)
    if "operandSegmentSizes" in op.attributes:
        n_in = int(ir.DenseI32ArrayAttr(op.attributes["operandSegmentSizes"])[0])
    else:
        n_in = len(operands) - 1
    return operands[:n_in], operands[n_in]


def _scale(op: Any, ir: Any, d: int) -> float:
    if "scale" in op.attributes:
        return ir.FloatAttr(op.attributes["scale"]).value
    return 1.0 / math.sqrt(d)


def _float(value: float, element: str) -> str:
    return f"{value!r}" if element != "f16" else f"{float(value)!r}"


_MAPS5 = "(d0, d1, d2, d3, d4) -> "
_NEG_INF = {"f32": "0xFF800000", "f16": "0xFC00"}


def _owner_through_reshapes(value: Any) -> Any:
    """The op that computes ``value``, past any reshapes of it (torch-mlir collapses the
    batch and head dims of each attention operand)."""
    owner = value.owner
    while getattr(owner, "name", None) in ("tensor.collapse_shape", "tensor.expand_shape"):
        owner = owner.operands[0].owner
    return owner


def _computed_from_indices(value: Any, ir: Any, depth: int = 8) -> bool:
    """Whether a mask is computed from loop indices and constants alone, which its attention
    dispatch computes as it goes: a causal mask (a ``linalg`` op without inputs, maybe
    reshaped), or the padded keys' mask of `ingress.decompositions._sdpa_padded` (an index
    compared, selected between two constants and broadcast: a chain of ``linalg.generic``s,
    each reading only such values). Read from memory instead, that mask cost a 6 x 1500
    x 64 attention 4.3 ms to write and 8 ms more to read (`lowerkit profile`)."""
    owner = _owner_through_reshapes(value)
    name = getattr(owner, "name", "")
    if name in ("linalg.fill", "arith.constant"):
        return True
    if name != "linalg.generic" or depth == 0:
        return False
    return all(_computed_from_indices(v, ir, depth - 1) for v in _operands(owner, ir)[0])


# How a shared mask is read (`_shared_mask`): one [L, S] mask for every head, or one [S] row of
# key masks (key padding) for every head and query row
ROWS, KEYS = "rows", "keys"


def _shared_mask(value: Any, ir: Any, m: int, s: int) -> "tuple[Any, str] | None":
    """The mask that a broadcast copies to every batch entry and head before it reaches the
    attention (torch-mlir's form of a mask broadcast over heads), with how the attention reads
    it instead, once for all of them; or None. `ROWS`: a ``[1, ..., m, s]`` mask (mask map
    ``(d1, d4)``); the copy, a mask for each head, was a dispatch of its own, 72.5 ms of a
    4 x 4096 x 64 attention's call (`lowerkit profile`). `KEYS`: a ``[1, ..., 1, s]`` mask,
    a key-padding mask (mask map ``(d4)``), which the copy also repeated for every query row:
    104 ms of a 317 ms call at 4 x 4096 x 64."""
    owner = _owner_through_reshapes(value)
    if getattr(owner, "name", None) != "linalg.generic":
        return None
    ins, _ = _operands(owner, ir)
    ops = list(owner.regions[0].blocks[0].operations)
    if (len(ins) != 1 or len(ops) != 1 or ops[0].name != "linalg.yield"
            or ops[0].operands[0] != owner.regions[0].blocks[0].arguments[0]):
        return None  # not a plain copy
    source, shape = ins[0], _shape(ins[0].type)
    maps = [ir.AffineMapAttr(a).value for a in ir.ArrayAttr(owner.attributes["indexing_maps"])]
    n = maps[1].n_dims
    if (shape is None or len(shape[0]) < 2 or any(d != 1 for d in shape[0][:-2])
            or maps[1] != ir.AffineMap.get_identity(n)):
        return None
    last = [str(r) for r in maps[0].results[-2:]]
    if shape[0][-2:] == [m, s] and last == [f"d{n - 2}", f"d{n - 1}"]:
        return source, ROWS
    if shape[0][-2:] == [1, s] and last == ["0", f"d{n - 1}"]:
        return source, KEYS
    return None


_CMPI_SGE, _CMPI_SLE, _CMPI_ULE, _CMPI_UGE = 5, 3, 7, 9  # arith.cmpi predicates


def _causal_mask(value: Any, ir: Any, m: int, s: int) -> bool:
    """Whether a mask is torch-mlir's causal mask for ``is_causal``: a ``linalg.generic``
    without inputs whose element is 0 where the key's index is at most the row's and -inf
    elsewhere (maybe reshaped). lowerkit's kernel computes it instead of reading it, and
    never visits the key tiles after a block's last row."""
    owner = _owner_through_reshapes(value)
    shape = _shape(value.type)
    if (getattr(owner, "name", None) != "linalg.generic" or _operands(owner, ir)[0]
            or shape is None or shape[0][-2:] != [m, s]):
        return False
    n = len(_shape(owner.results[0].type)[0])
    ops = list(owner.regions[0].blocks[0].operations)
    if [o.name for o in ops] != ["linalg.index", "linalg.index", "arith.cmpi", "arith.select",
                                 "linalg.yield"]:
        return False
    dims = {ops[i].results[0]: ir.IntegerAttr(ops[i].attributes["dim"]).value for i in (0, 1)}
    cmp, select = ops[2], ops[3]
    pred = ir.IntegerAttr(cmp.attributes["predicate"]).value
    lhs, rhs = (dims.get(v) for v in cmp.operands)
    row_first = pred in (_CMPI_SGE, _CMPI_UGE) and (lhs, rhs) == (n - 2, n - 1)
    key_first = pred in (_CMPI_SLE, _CMPI_ULE) and (lhs, rhs) == (n - 1, n - 2)
    if not (row_first or key_first) or select.operands[0] != cmp.results[0] \
            or ops[4].operands[0] != select.results[0]:
        return False
    values = []
    for v in select.operands[1:]:
        const = v.owner
        if getattr(const, "name", None) != "arith.constant":
            return False
        values.append(ir.FloatAttr(const.attributes["value"]).value)
    return values[0] == 0.0 and values[1] == -math.inf


def _cpu_function(name: str, types: list[str], out: str, element: str, shapes: list[list[int]],
                  scale: float, tiles: tuple[int, int, int], loc: str,
                  fuse_mask: bool = True, shared_mask: str | None = None,
                  zero_dead_rows: bool = False) -> str:
    """A private function: keys transposed, then the attention op with ``compilation_info``;
    IREE inlines it. Barriers keep the op's operands and result as they are here: dispatch
    formation would otherwise fold the transpose back, or fold reshapes around the op into it
    (a grouped-query ``repeat_interleave`` split the batch dim: six loops where the tile sizes
    name five, and vectors over IREE's limit; `llama_tiny_prefill`). They are
    ``compute_barrier``s, not ``util.optimization_barrier``s, which would split the call's
    execution at each (`_source_fence.COMPUTE_BARRIER`). The mask keeps its
    producer when it is computed from indices alone (a causal mask: computed inside the
    attention dispatch, never stored); any other mask is read from memory (``fuse_mask``
    False): a broadcast fused in was 0.65 of the output's scale off (a ``[B, 1, L, S]`` mask,
    torch-mlir's e2e ``ScaledDotProductAttentionMaskModule_basic``). ``shared_mask``: the mask
    operand is one mask for every batch entry (`_shared_mask`): `ROWS`, ``[1, ..., L, S]``
    read as ``[L, S]``; `KEYS`, ``[1, ..., 1, S]`` read as ``[S]``. ``zero_dead_rows``: rows
    whose every key the mask masks come out 0, as eager's safe softmax gives them, where
    ingress left that to the kernel (`_dead_rows_zeroed`)."""
    (b, m, d), (_, s, _), (_, _, n) = shapes[:3]
    kt = f"tensor<{b}x{d}x{s}x{element}>"
    dm, vm, vk = tiles
    info = ("#iree_codegen.compilation_info<lowering_config = #iree_cpu.lowering_config<"
            f"distribution = [1, {dm}, {n}, 0, 0], vector_common_parallel = [1, {vm}, {n}, 0, 0], "
            f"vector_reduction = [0, 0, 0, 0, {vk}]>, translation_info = "
            "#iree_codegen.translation_info<pipeline = #iree_cpu.pipeline<LinalgExtTileAndVectorize>>>")
    maps = [f"affine_map<{_MAPS5}(d0, d1, d3)>", f"affine_map<{_MAPS5}(d0, d3, d4)>",
            f"affine_map<{_MAPS5}(d0, d4, d2)>", f"affine_map<{_MAPS5}()>"]
    args = ["%q", "%k", "%v"]
    ins = ["%qb", "%ktb", "%vb", "%scale"]
    in_types = [types[0], kt, types[2], element]
    mask_read = {ROWS: (f"tensor<{m}x{s}x{element}>", "d1, d4"),
                 KEYS: (f"tensor<{s}x{element}>", "d4")}.get(shared_mask)
    if len(types) == 4:
        maps.append(f"affine_map<{_MAPS5}({mask_read[1] if mask_read else 'd0, d1, d4'})>")
        args.append("%mask")
        ins.append("%maskb")  # or the mask as read, when fused: below
        in_types.append(mask_read[0] if mask_read else types[3])
    maps.append(f"affine_map<{_MAPS5}(d0, d1, d2)>")
    params = ", ".join(f"{a}: {t}" for a, t in zip(args, types))
    collapse, masked = "", "%mask"
    rank = types[3].count("x") if shared_mask else 0
    kept = 2 if shared_mask == ROWS else 1  # the dims the attention reads
    if rank > kept:  # a shared [1, ..., L, S] mask read as [L, S], [1, ..., 1, S] as [S]
        groups = [list(range(rank - kept + 1))] + [[d] for d in range(rank - kept + 1, rank)]
        reassociation = ", ".join("[" + ", ".join(map(str, g)) + "]" for g in groups)
        collapse = (f"  %mask2 = tensor.collapse_shape %mask [{reassociation}] : "
                    f"{types[3]} into {mask_read[0]} {loc}\n")
        masked = "%mask2"
    if len(types) == 4 and fuse_mask:
        ins[4] = masked
    zeroed, result = "", "%o"
    if zero_dead_rows and len(types) == 4:
        zeroed, result = _dead_rows_zeroed(masked, in_types[4], out, loc), "%z"
    return f"""func.func private @{name}({params}) -> {out} {{
  %scale = arith.constant {_float(scale, element)} : {element} {loc}
  %kt0 = tensor.empty() : {kt} {loc}
  %kt = linalg.transpose ins(%k : {types[1]}) outs(%kt0 : {kt}) permutation = [0, 2, 1] {loc}
  %ktb = {COMPUTE_BARRIER} %kt : {kt} -> {kt} {loc}
  %qb = {COMPUTE_BARRIER} %q : {types[0]} -> {types[0]} {loc}
  %vb = {COMPUTE_BARRIER} %v : {types[2]} -> {types[2]} {loc}
{collapse}{"" if fuse_mask or len(types) < 4 else f"  %maskb = {COMPUTE_BARRIER} {masked} : {in_types[4]} -> {in_types[4]} {loc}"}
  %o0 = tensor.empty() : {out} {loc}
  %o = iree_linalg_ext.attention <indexing_maps = [{", ".join(maps)}]> {{compilation_info = {info}}} ins({", ".join(ins)} : {", ".join(in_types)}) outs(%o0 : {out}) {{
  ^bb0(%a: f32 {loc}):
    iree_linalg_ext.yield %a : f32 {loc}
  }} -> {out} {loc}
{zeroed}
  %ob = {COMPUTE_BARRIER} {result} : {out} -> {out} {loc}
  return %ob : {out} {loc}
}}"""


def _dead_rows_zeroed(mask: str, mask_type: str, out: str, loc: str) -> str:
    """``%z``: the attention's output ``%o`` with 0 in each row whose every key ``mask`` masks
    (-inf), as eager's safe softmax gives it, and as lowerkit's kernel computes it; IREE's
    attention gives NaN there. Ingress leaves this to the kernel (`ingress.decompositions._sdpa`),
    so IREE's form of an attention the kernel could take does it here. ``mask_type``: ``[S]``,
    ``[L, S]``, or ``[B or 1, L or 1, S]``."""
    (b, m, _), _ = _shape(out)
    dims, element = _shape(mask_type)
    # the leading dims: none for [S], the rows for [L, S]; a dim of 1 is broadcast
    lead = ["d1"] if len(dims) == 2 else [
        "0" if size == 1 else dim for size, dim in zip(dims[:-1], ("d0", "d1"))]
    read = ", ".join([*lead, "d2"])
    dead = f"tensor<{b}x{m}xi1>"
    maps3 = "(d0, d1, d2) -> "
    return f"""  %dead_true = arith.constant true {loc}
  %dead_init = tensor.empty() : {dead} {loc}
  %dead_fill = linalg.fill ins(%dead_true : i1) outs(%dead_init : {dead}) -> {dead} {loc}
  %dead = linalg.generic {{indexing_maps = [affine_map<{maps3}({read})>, affine_map<{maps3}(d0, d1)>], iterator_types = ["parallel", "parallel", "reduction"]}} ins({mask} : {mask_type}) outs(%dead_fill : {dead}) {{
  ^bb0(%x: {element} {loc}, %all: i1 {loc}):
    %ninf = arith.constant {_NEG_INF[element]} : {element} {loc}
    %is = arith.cmpf oeq, %x, %ninf : {element} {loc}
    %still = arith.andi %all, %is : i1 {loc}
    linalg.yield %still : i1 {loc}
  }} -> {dead} {loc}
  %zeroed = tensor.empty() : {out} {loc}
  %z = linalg.generic {{indexing_maps = [affine_map<{maps3}(d0, d1, d2)>, affine_map<{maps3}(d0, d1)>, affine_map<{maps3}(d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel"]}} ins(%o, %dead : {out}, {dead}) outs(%zeroed : {out}) {{
  ^bb0(%x: f32 {loc}, %d: i1 {loc}, %_: f32 {loc}):
    %zero = arith.constant 0.0 : f32 {loc}
    %r = arith.select %d, %zero, %x : f32 {loc}
    linalg.yield %r : f32 {loc}
  }} -> {out} {loc}"""


# The function holding IREE's form of an attention that lowerkit's kernel computes is named so;
# the kernel's call names it (`ir.KERNEL_FALLBACK`)
FALLBACK_SUFFIX = "_iree"
# How lowerkit's CPU kernel reads a mask (`iree/kernels/attention.cc`)
CAUSAL = "causal"
KERNEL_MASK_KINDS = {None: 0, KEYS: 1, ROWS: 2, "batch": 2, CAUSAL: 3}
KERNEL_MAX_HEAD_DIM = 128
KERNEL_ROWS_PER_GROUP = 64  # query rows per workgroup


def _kernel_function(name: str, types: list[str], out: str, shapes: list[list[int]],
                     scale: float, mask: "str | None", kernel: Any, loc: str) -> str:
    """A private function dispatching lowerkit's CPU attention kernel (`iree.cpu_kernels`),
    and the ``stream.executable`` that calls it, linked with its object. Workgroup (x, y)
    computes the x-th group of `KERNEL_ROWS_PER_GROUP` query rows of batch entry y (the
    other order, batch entries first, took a 4 x 4096 x 64 attention's dispatch from 94 to 99
    ms, and with a shared ``[L, S]`` mask from 118 to 163; `lowerkit profile`). ``mask``:
    None, `KEYS` (one ``[S]`` row for every query row and batch entry), `ROWS` (one
    ``[L, S]`` mask for every batch entry), ``"batch"`` (``[B, L, S]``) or `CAUSAL` (the mask
    operand, torch-mlir's causal mask, is not read: the kernel computes it)."""
    (b, m, d), (_, s, _), _ = shapes[:3]
    kind = KERNEL_MASK_KINDS[mask]
    read = len(types) == 4 and mask != CAUSAL  # the kernel reads a mask
    stride = m * s if mask == "batch" else 0
    groups = -(-m // KERNEL_ROWS_PER_GROUP)
    names = ["q", "k", "v"] + (["mask"] if read else []) + ["o"]
    dispatched = types[:4 if read else 3]
    sizes = [math.prod(_shape(t)[0]) for t in dispatched] + [b * m * d]
    mem = "memref<?xf32>"
    binds = "\n".join(
        f"      %n{x} = arith.constant {n} : index {loc}\n"
        f"      %m{x} = stream.binding.subspan %b{x}[%c0] : !stream.binding -> {mem}{{%n{x}}} {loc}"
        for x, n in zip(names, sizes))
    entry = "lowerkit_attention_masked_f32" if read else "lowerkit_attention_f32"
    scalars = ["%L", "%S", "%D", "%kind"] + (["%stride"] if read else []) + [
        "%scale", "%rows", "%x", "%y"]
    scalar_types = ["index"] * (5 if read else 4) + ["f32"] + ["index"] * 3
    arg_types = ", ".join([mem] * len(names) + scalar_types)
    params = ", ".join(f"{a}: {t}" for a, t in zip(["%q", "%k", "%v", "%mask"], types))
    # behind barriers, as IREE's attention's operands are (`_cpu_function`): a mask computed
    # from constants alone, hoisted into an initializer, reached the dispatch as another
    # hoisted tensor about half the time ("invalid Read access range ... of resource
    # %__hoisted_tensor_48xi1", an anti-causal mask built from two aranges)
    fenced = "".join(f"  %{x}f = {COMPUTE_BARRIER} %{x} : {t} -> {t} {loc}\n"
                     for x, t in zip(names[:-1], dispatched))
    operands = ", ".join(f"%{x}f" for x in names[:-1])
    objects = ('#hal.executable.objects<{#hal.executable.target<"llvm-cpu", '
               f'"embedded-elf-x86_64"> = [#hal.executable.object<{{path = "{kernel.path}"}}>]}}>')
    return f"""stream.executable private @{name}_kernel attributes {{hal.executable.objects = {objects}}} {{
  stream.executable.export public @{name}_entry workgroups() -> (index, index, index) {{
    %gx = arith.constant {groups} : index {loc}
    %gy = arith.constant {b} : index {loc}
    %c1 = arith.constant 1 : index {loc}
    stream.return %gx, %gy, %c1 : index, index, index {loc}
  }} {loc}
  builtin.module {{
    func.func private @{entry}({arg_types}) attributes {{hal.import.static}} {loc}
    func.func @{name}_entry({", ".join(f"%b{x}: !stream.binding" for x in names)}) {{
      %c0 = arith.constant 0 : index {loc}
{binds}
      %L = arith.constant {m} : index {loc}
      %S = arith.constant {s} : index {loc}
      %D = arith.constant {d} : index {loc}
      %kind = arith.constant {kind} : index {loc}
      %stride = arith.constant {stride} : index {loc}
      %scale = arith.constant {_float(scale, "f32")} : f32 {loc}
      %rows = arith.constant {KERNEL_ROWS_PER_GROUP} : index {loc}
      %x = stream.dispatch.workgroup.id[0] : index {loc}
      %y = stream.dispatch.workgroup.id[1] : index {loc}
      func.call @{entry}({", ".join([f"%m{x}" for x in names] + scalars)}) : ({arg_types}) -> () {loc}
      return {loc}
    }} {loc}
  }} {loc}
}} {loc}
func.func private @{name}({params}) -> {out} {{
{fenced}  %o = flow.dispatch @{name}_kernel::@{name}_entry({operands}) : ({", ".join(dispatched)}) -> {out} {loc}
  return %o : {out} {loc}
}}"""


def _decomposed_function(name: str, types: list[str], out: str, element: str,
                         shapes: list[list[int]], scale: float, loc: str) -> str:
    """A private function: ``softmax(scale * Q @ K^T + mask) @ V`` in linalg."""
    (b, m, d), (_, s, _), (_, _, n) = shapes[:3]
    st = f"tensor<{b}x{m}x{s}x{element}>"
    args = ["%q", "%k", "%v"] + (["%mask"] if len(types) == 4 else [])
    params = ", ".join(f"{a}: {t}" for a, t in zip(args, types))
    id3 = "affine_map<(d0, d1, d2) -> (d0, d1, d2)>"
    if len(types) == 4 and types[3].endswith("xi1>"):
        ninf = {"f32": "0xFF800000", "f16": "0xFC00"}[element]
        masked = f"""  %ninf = arith.constant {ninf} : {element} {loc}
  %sm = linalg.generic {{indexing_maps = [{id3}, {id3}, {id3}], iterator_types = ["parallel", "parallel", "parallel"]}} ins(%ss, %mask : {st}, {types[3]}) outs(%se : {st}) {{
  ^bb0(%x: {element} {loc}, %keep: i1 {loc}, %o: {element} {loc}):
    %y = arith.select %keep, %x, %ninf : {element} {loc}
    linalg.yield %y : {element} {loc}
  }} -> {st} {loc}"""
    elif len(types) == 4:
        masked = f"""  %sm = linalg.generic {{indexing_maps = [{id3}, {id3}, {id3}], iterator_types = ["parallel", "parallel", "parallel"]}} ins(%ss, %mask : {st}, {types[3]}) outs(%se : {st}) {{
  ^bb0(%x: {element} {loc}, %a: {element} {loc}, %o: {element} {loc}):
    %y = arith.addf %x, %a : {element} {loc}
    linalg.yield %y : {element} {loc}
  }} -> {st} {loc}"""
    else:
        masked = ""
    result = "%sm" if masked else "%ss"
    return f"""func.func private @{name}({params}) -> {out} {{
  %zero = arith.constant 0.0 : {element} {loc}
  %scale = arith.constant {_float(scale, element)} : {element} {loc}
  %se = tensor.empty() : {st} {loc}
  %sz = linalg.fill ins(%zero : {element}) outs(%se : {st}) -> {st} {loc}
  %s = linalg.generic {{indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel", "reduction"]}} ins(%q, %k : {types[0]}, {types[1]}) outs(%sz : {st}) {{
  ^bb0(%x: {element} {loc}, %y: {element} {loc}, %acc: {element} {loc}):
    %p = arith.mulf %x, %y : {element} {loc}
    %r = arith.addf %acc, %p : {element} {loc}
    linalg.yield %r : {element} {loc}
  }} -> {st} {loc}
  %ss = linalg.generic {{indexing_maps = [{id3}, {id3}], iterator_types = ["parallel", "parallel", "parallel"]}} ins(%s : {st}) outs(%se : {st}) {{
  ^bb0(%x: {element} {loc}, %o: {element} {loc}):
    %y = arith.mulf %x, %scale : {element} {loc}
    linalg.yield %y : {element} {loc}
  }} -> {st} {loc}
{masked}
  %pe = tensor.empty() : {st} {loc}
  %p = linalg.softmax dimension(2) ins({result} : {st}) outs(%pe : {st}) -> {st} {loc}
  %oe = tensor.empty() : {out} {loc}
  %oz = linalg.fill ins(%zero : {element}) outs(%oe : {out}) -> {out} {loc}
  %o = linalg.batch_matmul ins(%p, %v : {st}, {types[2]}) outs(%oz : {out}) -> {out} {loc}
  return %o : {out} {loc}
}}"""


def kernel_takes_shapes(rows: int, d: int, n: int) -> bool:
    """Whether lowerkit's CPU kernel takes an attention of ``rows`` query rows over all batch
    entries, head dim ``d`` and values ``n`` wide (ingress asks too: it pads and chunks for
    IREE's tiles what the kernel will not take, `ingress.decompositions._sdpa`). A single row
    keeps IREE's own tiles (`_rewrite`)."""
    return rows > 1 and n == d <= KERNEL_MAX_HEAD_DIM


def _kernel_takes(types: list[str], shapes: list[list[int]], shared: Any,
                  causal: bool) -> bool:
    """Whether lowerkit's CPU kernel computes this attention: float32 throughout, shapes it
    takes (`kernel_takes_shapes`), and no mask, the causal one, or a float one that is shared
    (`_shared_mask`) or ``[B, L, S]``."""
    (b, m, d), (_, s, _), (_, _, n) = shapes[:3]
    if not kernel_takes_shapes(b * m, d, n) or not all(t.endswith("xf32>") for t in types[:3]):
        return False
    return (len(types) == 3 or causal or (types[3].endswith("xf32>") and (
        shared is not None or _shape(types[3]) == ([b, m, s], "f32"))))


def _rewrite(module_op: Any, how: str, limit: int = VECTOR_LIMIT_ELEMENTS,
             kernel: Any = None) -> int:
    """Replace each ``tm_tensor.attention`` that ``how`` (``cpu`` or ``decompose``) applies to
    by a call of a private function holding its new form; returns how many. ``kernel``: the
    object of lowerkit's CPU attention kernel (`iree.cpu_kernels.attention_object`), or a
    function answering it, used where it applies (`_kernel_takes`)."""
    ir = Build.of_object(module_op).ir
    body = module_op.regions[0].blocks[0]
    done = 0
    attentions = _attentions(module_op, ir)
    if attentions and callable(kernel):  # built or looked up only for a program with one
        kernel = kernel()
    for index, op in enumerate(attentions):
        inputs, _init = _operands(op, ir)
        parsed = [_shape(v.type) for v in inputs]
        out_shape = _shape(op.results[0].type)
        if any(p is None for p in parsed) or out_shape is None or len(parsed) not in (3, 4):
            continue
        shapes = [p[0] for p in parsed]
        element = parsed[0][1]
        if any(len(sh) != 3 for sh in shapes) or parsed[1][1] != element \
                or parsed[2][1] != element:
            continue
        (b, m, d), (_, s, _), _ = shapes[:3]
        types = [str(v.type) for v in inputs]
        out = str(op.results[0].type)
        loc = str(op.location)
        name = f"lowerkit_attention_{index}"
        scale = _scale(op, ir, d)
        with_fallback = False
        if how == "cpu":
            tiles = cpu_tiles(m, s, d, limit)
            if element != "f32" or tiles is None or shapes[2][2] != d or b * m == 1:
                # values narrower than the keys (head dims 6 and 4) came out 0.4-1.0 of the
                # output's scale off with these tiles (fuzz campaign seed 2112, programs 62-68),
                # and so did a single query row of a batch of one (0.2-0.9: one [1, 1, 32]
                # query against 5 keys, seed 2113, programs 437-439); IREE's own tiles get
                # both right, so those keep them
                continue
            fuse = len(inputs) < 4 or _computed_from_indices(inputs[3], ir)
            shared = None if fuse else _shared_mask(inputs[3], ir, m, s)
            causal = kernel is not None and len(inputs) == 4 and _causal_mask(
                inputs[3], ir, m, s)
            if kernel is not None and fuse and len(inputs) == 4 and not causal:
                # a mask computed from indices is computed inside IREE's attention dispatch,
                # but the kernel reads it from memory: once for all heads where it is shared
                shared = _shared_mask(inputs[3], ir, m, s)
                if shared is not None and not _kernel_takes(
                        [*types[:3], str(shared[0].type)], shapes, shared, causal):
                    shared = None  # IREE's form reads it as it did
            if shared is not None:  # one mask for all: read before the broadcast copies it
                inputs = [*inputs[:3], shared[0]]
                types[3] = str(shared[0].type)
                fuse = _computed_from_indices(inputs[3], ir)
            # where the kernel could take it, ingress left the rows whose every key is
            # masked to the kernel: IREE's form zeroes them itself, as the kernel's fallback
            # or where the kernel did not take the mask after all
            text = _cpu_function(name, types, out, element, shapes, scale, tiles, loc,
                                 fuse_mask=fuse, shared_mask=shared and shared[1],
                                 zero_dead_rows=kernel is not None and kernel_takes_shapes(
                                     b * m, d, shapes[2][2]))
            if kernel is not None and _kernel_takes(types, shapes, shared, causal):
                # lowerkit's kernel; IREE's op kept beside it, with the same operands, for
                # the compile ladder's first rung (`iree.compiler.without_op_configs`)
                fallback = text.replace(f"@{name}(", f"@{name}{FALLBACK_SUFFIX}(", 1)
                mask = (CAUSAL if causal else shared[1] if shared
                        else "batch" if len(types) == 4 else None)
                text = _kernel_function(name, types, out, shapes, scale, mask, kernel, loc)
                text += "\n" + fallback
                with_fallback = True
        else:
            if element not in ("f32", "f16"):
                continue
            text = _decomposed_function(name, types, out, element, shapes, scale, loc)
        with module_op.context:
            parsed = ir.Module.parse(text)  # kept alive while its functions are cloned out
            with ir.InsertionPoint(body):
                for fn in parsed.body.operations:
                    fn.clone()
            with ir.InsertionPoint(op), op.location:
                attributes = {"callee": ir.FlatSymbolRefAttr.get(name)}
                if with_fallback:
                    attributes[KERNEL_FALLBACK] = ir.FlatSymbolRefAttr.get(name + FALLBACK_SUFFIX)
                call = ir.Operation.create(
                    "func.call", results=[op.results[0].type], operands=inputs,
                    attributes=attributes)
        op.results[0].replace_all_uses_with(call.results[0])
        op.erase()
        done += 1
    return done


def for_cpu(module_op: Any, native_vector_bytes: int = 64,
            native_vectors: int = NATIVE_VECTORS, kernel: Any = None) -> int:
    """llvm-cpu: keys transposed and IREE's attention op with `cpu_tiles`' tile sizes, for a
    CPU whose widest register holds ``native_vector_bytes``, vectors of up to
    ``native_vectors`` of them (`target.CPU_OP_CONFIG_NATIVE_VECTORS`: the compile then turns
    IREE's large-vector check off, `iree.compiler.op_config_flags`)."""
    return _rewrite(module_op, "cpu", native_vector_bytes * native_vectors // 4, kernel)


def decompose(module_op: Any, pass_: Any = None) -> int:
    """Targets without IREE's attention (Vulkan): the math form in linalg, inlined as IREE
    would inline it, so that the target's later fixes see its reductions beside their readers
    in the caller: `fence-reductions` could not fence a softmax's sum read from inside the
    function (campaign seed 2119, program 854: an attention's last matmul read by a one-tap
    one-channel convolution, 24 of the output's scale off on the portable Vulkan target)."""
    done = _rewrite(module_op, "decompose")
    if done:
        Build.of_object(module_op).passmanager.PassManager.parse(
            "builtin.module(inline, symbol-dce)", module_op.context).run(module_op)
    return done


def run(module_op: Any, pass_: Any = None) -> None:
    for_cpu(module_op, pass_)
