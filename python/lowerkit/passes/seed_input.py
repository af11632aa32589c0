"""seed-as-input: the random ops' seed is an argument of the public function, given at each call.

torch-mlir lowers ``aten.uniform`` (and with it ``rand``, ``randn``, ``randint``, ``bernoulli``,
training-mode ``dropout``, ``multinomial``) to a counter-based generator keyed by
``torch_c.get_next_seed``, which its ``convert-torch-conversion-to-mlprogram`` turns into one
LCG step of a module global, ``ml_program.global @global_seed``, initialised to 0. Each loaded
context of a vmfb then starts from 0, so every Artifact, every reload and each of the two CPU
drivers lowerkit times (`lowerkit.runtime.executable`) drew the same "random" numbers, call
after call.

This pass gives every public function of such a module one more argument,
``tensor<i64>``, after all others (after the mutated buffers' state too), and stores it into
the global before anything else runs: the random ops of one call then draw their keys from
that seed by torch-mlir's own LCG steps, nested regions (``multinomial``'s loop) included.
The runtime passes a seed drawn from torch's default generator at every call
(`lowerkit.runtime.artifact`), so ``torch.manual_seed`` governs the stream. A module without
the global is left as it is. Runs on linalg on tensors, in either MLIR build (a target fix:
`lowerkit.pipelines.target_fixes`, so that every pipeline gets it).
"""

from __future__ import annotations

from typing import Any

from ..ir import Build

NAME = "seed-as-input"
# the symbol torch-mlir's TorchConversionToMLProgram gives the seed (torch-mlir 20261001)
SEED_GLOBAL = "global_seed"
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


def _stores_argument(func: Any) -> bool:
    """Whether ``func`` begins by storing one of its arguments into the seed global."""
    block = func.regions[0].blocks[0]
    ops = list(block.operations)
    if not ops or ops[0].operation.name != "ml_program.global_store":
        return False
    store = ops[0].operation
    if SEED_GLOBAL not in str(store.attributes["global"]):
        return False
    value = store.operands[0]
    return any(value == arg for arg in block.arguments)


def takes_seed(module_op: Any) -> bool:
    """Whether the compiled program takes a seed after its other arguments (this pass ran on
    a module with random ops): the runtime must then pass one at every call."""
    module_op = getattr(module_op, "operation", module_op)
    return any(_stores_argument(f) for f in _public_functions(module_op))


def _add_seed_argument(func: Any, ir: Any) -> None:
    ctx = func.context
    seed_type = ir.Type.parse(_SEED_TYPE, ctx)
    block = func.regions[0].blocks[0]
    ftype = ir.FunctionType(ir.TypeAttr(func.attributes["function_type"]).value)
    new_type = ir.FunctionType.get(list(ftype.inputs) + [seed_type], list(ftype.results), ctx)
    func.attributes["function_type"] = ir.TypeAttr.get(new_type, ctx)
    if "arg_attrs" in func.attributes:
        attrs = list(ir.ArrayAttr(func.attributes["arg_attrs"]))
        func.attributes["arg_attrs"] = ir.ArrayAttr.get(attrs + [ir.DictAttr.get({}, ctx)], ctx)
    seed = block.add_argument(seed_type, func.location)
    first = list(block.operations)[0].operation
    with ir.InsertionPoint(first), func.location:
        ir.Operation.create("ml_program.global_store", operands=[seed], attributes={
            "global": ir.FlatSymbolRefAttr.get(SEED_GLOBAL, ctx)})


def run(module_op: Any, pass_: Any = None) -> None:
    module_op = getattr(module_op, "operation", module_op)
    ir = Build.of_object(module_op).ir
    if _seed_global(module_op, ir) is None:
        return
    for func in _public_functions(module_op):
        if not _stores_argument(func):
            _add_seed_argument(func, ir)
