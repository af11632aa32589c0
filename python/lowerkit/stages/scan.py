"""Scan: every op a stage cannot lower, found at once instead of one failure at a time.

MLIR's dialect conversion stops at the first illegal op, so a model with three unsupported
ops would fail three times in a row. Here a stage that fails is re-run on a copy of its input
from which the ops it reported are taken out (an op whose result has the type of one of its
operands is bypassed: its uses get that operand), until the stage passes or nothing more can
be taken out. Every instance of a reported op kind is listed, each with the user's source line.
This serves ``lowerkit check`` (`lowerkit.tools.check`) and the errors of `Stage`
(see `offending_ops`).
"""

from __future__ import annotations

import contextvars
import re
from dataclasses import dataclass
from typing import Any

from ..diagnostics import Diagnostic, source_location
from ..errors import StageError
from ..ir import Build

MAX_ROUNDS = 16
_TORCH_QUALNAME = re.compile(r"'(\w+)::(\w+)'")
_scanning: contextvars.ContextVar = contextvars.ContextVar("lowerkit_coverage_scan", default=False)


@dataclass
class UnsupportedOp:
    """One op instance a stage could not handle."""

    op: str            # the op's kind: its name, or the name a torch.operator stands for
    stage: str
    location: str | None
    message: str

    def __str__(self) -> str:
        return f"{self.location or '<unknown location>'}: '{self.op}' ({self.stage}): {self.message}"


def op_kind(op: Any) -> str:
    """An op's name, or for torch-mlir's opaque ``torch.operator`` the op it stands for."""
    if op.name == "torch.operator" and "name" in op.attributes:
        return op.attributes["name"].value
    return op.name


def ops_of_kinds(module: Any, kinds: set[str]) -> list[Any]:
    found = []
    advance = Build.of(module).ir.WalkResult.ADVANCE

    def visit(op):
        if op_kind(op) in kinds:
            found.append(op)
        return advance

    module.operation.walk(visit)
    return found


def _bypass(ops: list[Any]) -> bool:
    """Take ops out of their module, each replaced by an operand of its result's type."""
    for op in ops:
        if len(op.results) != 1:
            return False
        same = [v for v in op.operands if v.type == op.results[0].type]
        if not same:
            return False
        op.results[0].replace_all_uses_with(same[0])
        op.erase()
    return True


def _kind_named(d: Diagnostic) -> str | None:
    """The op kind a diagnostic is about: its op, or a PyTorch ``ns::name`` it quotes."""
    if d.op:
        return d.op
    m = _TORCH_QUALNAME.search(d.message)
    return f"torch.{m.group(1)}.{m.group(2)}" if m else None


def _instances(stage: str, module: Any, diagnostics: list[Diagnostic]) -> list[UnsupportedOp]:
    """Every instance of the op kinds the diagnostics name, each with its own source line."""
    diagnostics = [Diagnostic(d.message, _kind_named(d), d.location) for d in diagnostics]
    messages = {d.op: d.message for d in diagnostics if d.op}
    out = []
    for op in ops_of_kinds(module, set(messages)):
        kind = op_kind(op)
        out.append(UnsupportedOp(kind, stage, source_location(op.location), first_line(messages[kind])))
    for d in diagnostics:
        if not d.op or d.op not in {u.op for u in out}:
            out.append(UnsupportedOp(d.op or "?", stage, d.location, first_line(d.message)))
    return out


def first_line(message: str) -> str:
    return message.split(": %", 1)[0].splitlines()[0][:200]


def scan_stage(stage: Any, module: Any, first: StageError | None = None) -> tuple[Any, list[UnsupportedOp], StageError | None]:
    """Run ``stage`` on a copy of ``module``, bypassing reported ops until it passes.

    Returns the stage's output (None if it never passed), every unsupported op found, and the
    last error when it stopped on something it could not bypass.
    """
    token = _scanning.set(True)
    try:
        found: list[UnsupportedOp] = []
        pristine = clone_module(module)  # the stage's input, less the ops taken out so far
        error = first
        for _ in range(MAX_ROUNDS):
            if error is None:
                try:
                    return stage(clone_module(pristine)), found, None
                except StageError as e:
                    error = e
            new = _instances(stage.name, pristine, error.diagnostics)
            kinds = {u.op for u in new if u.op != "?"}
            found += [u for u in new if str(u) not in {str(f) for f in found}]
            if not kinds or not _bypass(ops_of_kinds(pristine, kinds)):
                return None, found, error
            error = None
        return None, found, error
    finally:
        _scanning.reset(token)


# The diagnostics by which a stage knowingly refuses an op (an `UnsupportedError`): torch-mlir
# has no definition of the op (its importer kept it opaque, as `torch.operator`), or it is a
# custom op with no lowering registered (`custom_ops`). A known op that a conversion fails on
# is not among them: that is a gap or a bug, a plain `StageError`.
_REFUSAL = re.compile(r"failed to legalize operation 'torch\.operator'|"
                      r"custom op '[\w.:]+' has no lowering|"
                      r"'[\w.]+' along .* is refused on |"
                      r"'[\w.]+' \(the random ops' seed\) .*is refused")


def is_refusal(diagnostics: list[Diagnostic]) -> bool:
    """Whether a failed stage's diagnostics are all deliberate refusals of ops (see _REFUSAL)."""
    return bool(diagnostics) and all(_REFUSAL.match(d.message) for d in diagnostics)


def offending_ops(stage: Any, module: Any, diagnostics: list[Diagnostic]) -> list[Diagnostic]:
    """For a failed stage: its diagnostics plus every other op of this stage that also fails."""
    if _scanning.get() or not any(_kind_named(d) for d in diagnostics):
        return diagnostics
    try:
        _, found, _ = scan_stage(stage, module)
    except Exception:  # the original error matters more than a failed scan
        return diagnostics
    out = [Diagnostic(u.message, u.op, u.location) for u in found]
    return out or diagnostics


def clone_module(module: Any) -> Any:
    """A new module of the same build holding a copy of ``module`` (a Module or its op)."""
    op = module.operation
    ir = Build.of_object(op).ir
    with op.context:
        return ir.Module.parse(op.get_asm(enable_debug_info=True, print_generic_op_form=True))
