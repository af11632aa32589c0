"""seed-as-input: the random ops' seed is an argument of the public function, given at each call.

torch-mlir lowers ``aten.uniform`` (and with it ``rand``, ``randn``, ``randint``, ``bernoulli``,
training-mode ``dropout``, ``multinomial`` with replacement, as decomposed) to a counter-based generator keyed by
``torch_c.get_next_seed``, which its ``convert-torch-conversion-to-mlprogram`` turns into one
LCG step of a module global, ``ml_program.global @global_seed``, initialised to 0. Each loaded
context of a vmfb then starts from 0, so every Artifact, every reload and each of the two CPU
drivers lowerkit times (`lowerkit.runtime.executable`) drew the same "random" numbers, call
after call.

This pass gives every public function of such a module one more argument, ``tensor<i64>``
marked ``{lowerkit.seed}``, after all others (after the mutated buffers' state too), and threads
it through the function in place of the global: the first load reads the argument, each later
load the value last stored, and the global is gone. The random ops of one call then draw their
keys from that seed by torch-mlir's own LCG steps, and the function stays pure (concurrent calls
of one context share no seed). The runtime passes a seed drawn from torch's default generator
at every call (`lowerkit.runtime.artifact`), so ``torch.manual_seed`` governs the stream. A
module without the global is left as it is. Refused with the op's location (an
`UnsupportedError`): a seed read inside a nested region or another function (torch-mlir's own
``aten.multinomial`` lowering reads it in a loop; no program reached it here), and any random op on a target without
64-bit arithmetic (``refuse_on``: IREE's portable ``vulkan``), since torch-mlir's generator
computes in i64 and f64 (iree-compile failed on an f64 constant). Runs on linalg on tensors,
in either MLIR build (a target fix: `lowerkit.pipelines.target_fixes`, so that every pipeline
gets it).
"""

from __future__ import annotations

from typing import Any

from ..ir import Build

NAME = "seed-as-input"
# the symbol torch-mlir's TorchConversionToMLProgram gives the seed (torch-mlir 20261001)
SEED_GLOBAL = "global_seed"
SEED_ATTR = "lowerkit.seed"  # marks the seed argument
_LOAD, _STORE = "ml_program.global_load", "ml_program.global_store"
_SEED_TYPE = "tensor<i64>"


def _symbol(op: Any, ir: Any) -> str:
    return ir.StringAttr(op.attributes["sym_name"]).value


def _seed_global(module_op: Any, ir: Any) -> Any | None:
    for op in module_op.regions[0].blocks[0].operations:
        op = op.operation
        if op.name == "ml_program.global" and _symbol(op, ir) == SEED_GLOBAL:
            return op
    return None


def _public_functions(module_op: Any) -> list[Any]:
    return [op.operation for op in module_op.regions[0].blocks[0].operations
            if op.operation.name == "func.func" and "sym_visibility" not in op.operation.attributes
            and op.operation.regions[0].blocks]


def _is_seed_access(op: Any) -> bool:
    return op.name in (_LOAD, _STORE) and SEED_GLOBAL in str(op.attributes["global"])


def takes_seed(module_op: Any) -> bool:
    """Whether the compiled program takes a seed after its other arguments (this pass ran on
    a module with random ops): the runtime must then pass one at every call."""
    module_op = getattr(module_op, "operation", module_op)
    return any(op.operation.name == "func.func" and _marked(op.operation)
               for op in module_op.regions[0].blocks[0].operations)


def _marked(func: Any) -> bool:
    return "arg_attrs" in func.attributes and SEED_ATTR in str(func.attributes["arg_attrs"])


def _add_seed_argument(func: Any, ir: Any) -> Any:
    """The new last argument of ``func``, marked ``{lowerkit.seed}``."""
    ctx = func.context
    seed_type = ir.Type.parse(_SEED_TYPE, ctx)
    block = func.regions[0].blocks[0]
    ftype = ir.FunctionType(ir.TypeAttr(func.attributes["function_type"]).value)
    new_type = ir.FunctionType.get(list(ftype.inputs) + [seed_type], list(ftype.results), ctx)
    func.attributes["function_type"] = ir.TypeAttr.get(new_type, ctx)
    attrs = (list(ir.ArrayAttr(func.attributes["arg_attrs"])) if "arg_attrs" in func.attributes
             else [ir.DictAttr.get({}, ctx) for _ in ftype.inputs])
    marked = ir.DictAttr.get({SEED_ATTR: ir.UnitAttr.get(ctx)}, ctx)
    func.attributes["arg_attrs"] = ir.ArrayAttr.get(attrs + [marked], ctx)
    return block.add_argument(seed_type, func.location)


def _thread(func: Any, ir: Any) -> None:
    """The seed argument in place of the global's loads and stores, in program order."""
    current = _add_seed_argument(func, ir)
    for op in list(func.regions[0].blocks[0].operations):
        op = op.operation
        if not _is_seed_access(op):
            continue
        if op.name == _LOAD:
            op.results[0].replace_all_uses_with(current)
        else:
            current = op.operands[0]
        op.erase()


def _nested_accesses(module_op: Any, ir: Any) -> list[Any]:
    """Loads and stores of the seed that are not in a public function's entry block."""
    found = []

    def visit(op):
        if _is_seed_access(op):
            parent = op.parent
            if parent is None or parent.name != "func.func" \
                    or "sym_visibility" in parent.attributes:
                found.append(op)
        return ir.WalkResult.ADVANCE

    module_op.walk(visit)
    return found


def _first_access(module_op: Any, ir: Any) -> Any:
    found = []

    def visit(op):
        if _is_seed_access(op):
            found.append(op)
            return ir.WalkResult.INTERRUPT
        return ir.WalkResult.ADVANCE

    module_op.walk(visit)
    return found[0] if found else None


def run(module_op: Any, pass_: Any = None, refuse_on: str = "") -> None:
    """``refuse_on``: the name of a target without 64-bit arithmetic, on which random ops are
    refused (empty: none)."""
    module_op = getattr(module_op, "operation", module_op)
    ir = Build.of_object(module_op).ir
    seed = _seed_global(module_op, ir)
    if seed is None:
        return
    refused = []
    if refuse_on:
        first = _first_access(module_op, ir)
        if first is not None:
            refused.append((first, f"is refused on '{refuse_on}': torch-mlir's generator "
                            "computes in 64-bit integers and floats, which the device lacks; "
                            "compile for 'vulkan:llvmpipe' or a named GPU"))
    else:
        refused = [(op, "inside a nested region or a private function is refused: lowerkit "
                    "passes the seed to the public function at each call (seed-as-input), and "
                    "threads it only through that function's body")
                   for op in _nested_accesses(module_op, ir)]
    for op, why in refused:
        op.location.emit_error(f"'{op.name}' (the random ops' seed) {why}")
    if refused:
        if pass_ is None:
            raise RuntimeError("seed-as-input: " + refused[0][1])
        pass_.signal_pass_failure()
        return
    for func in _public_functions(module_op):
        if not _marked(func):
            _thread(func, ir)
    seed.erase()
