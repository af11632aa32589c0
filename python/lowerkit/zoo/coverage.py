"""Coverage of the zoo: how far each model gets through lowerkit, and how close it is to eager.

A model passes through ``torch-import``, the pipeline's stages, ``iree-compile``, ``run`` and
``check``; `check_model` reports the last stage reached, the error where it stopped, and the
error against eager PyTorch when it ran, judged relative to each output's scale by the entry's
tolerance (`lowerkit.runtime.numerics`).
"""

from __future__ import annotations

import time
import traceback
from dataclasses import dataclass, field

import torch

import lowerkit  # the public API, as a user calls it (and as a test patches it)

from ..errors import IngressError, StageError
from ..runtime.numerics import compare
from ..tools.executor import Item, Job, Outcome
from . import ZooModel

# the stages a model goes through, in order, as named in `CoverageResult.stage`
STAGES = ("torch-import", "torch-backend-contract", "linalg-on-tensors", "iree-compile", "run",
          "check")


@dataclass
class CoverageResult:
    """One model's result: passed, the stage it reached (or failed in), error and timings."""

    name: str
    ok: bool
    stage: str                    # the failing stage, or "check" when it passed
    max_abs_error: float | None = None
    message: str = ""
    compile_seconds: float = 0.0
    stage_seconds: dict[str, float] = field(default_factory=dict)
    max_rel_error: float | None = None   # worst |actual - eager| / scale over the outputs
    rung: str | None = None       # the compile ladder's rung that built it (None: no compile)

    def to_json(self) -> dict:
        return dict(self.__dict__)


def _failing_stage(e: Exception) -> str:
    if isinstance(e, StageError):
        return e.stage
    if isinstance(e, IngressError):
        return "torch-import"
    return "unknown"


def check_model(entry: ZooModel, target: str = "cpu", **compile_options) -> CoverageResult:
    """Compile ``entry`` for ``target``, run it on its example inputs, compare with eager."""
    model, args, kwargs = entry.make()
    with torch.no_grad():
        expected = model(*args, **kwargs)
    start = time.perf_counter()
    try:
        art = lowerkit.compile(model, args, kwargs, target=target, **compile_options)
    except Exception as e:  # noqa: BLE001 - every failure is a coverage result
        return CoverageResult(entry.name, False, _failing_stage(e), None, _summary(e),
                              time.perf_counter() - start)
    seconds = time.perf_counter() - start
    stages = {r.name: r.seconds for r in art.records}
    try:
        actual = art(*args, **kwargs)
    except Exception as e:  # noqa: BLE001
        return CoverageResult(entry.name, False, "run", None, _summary(e), seconds, stages,
                              rung=art.compile_rung)
    result = compare(actual, expected, tol=entry.tol)
    return CoverageResult(entry.name, result.ok, "check", result.max_abs_error,
                          "" if result.ok else result.message, seconds, stages,
                          result.max_rel_error, art.compile_rung)


@dataclass
class CompileResult:
    """A compile without a run, for a CPU that need not be the host's (``cpu:znver4``)."""

    target: str
    ok: bool
    stage: str                    # the failing stage, or "iree-compile" when it compiled
    rung: str | None = None
    message: str = ""
    seconds: float = 0.0

    def to_json(self) -> dict:
        return dict(self.__dict__)


def compile_for(entry: ZooModel, targets: list[str], **compile_options) -> list[CompileResult]:
    """Compile ``entry`` for each target (any CPU LLVM knows, e.g. ``cpu:sapphirerapids``)
    without running it: what another host would compile. The program is imported once; each
    target lowers a copy of it."""
    import dataclasses

    from ..api import compile_imported
    from ..ingress.importer import import_program

    model, args, kwargs = entry.make()
    start = time.perf_counter()
    try:
        imported = import_program(model, args, kwargs, None)
    except Exception as e:  # noqa: BLE001 - every failure is a result
        seconds = time.perf_counter() - start
        return [CompileResult(t, False, _failing_stage(e), None, _summary(e), seconds)
                for t in targets]
    imported_seconds = time.perf_counter() - start

    def copy():
        from torch_mlir import ir

        with imported.module.context:
            module = ir.Module.parse(imported.module.operation.get_asm(binary=True))
        return dataclasses.replace(imported, module=module)

    results = []
    for t in targets:
        start = time.perf_counter()
        try:
            art = compile_imported(copy, target=t, **compile_options)
        except Exception as e:  # noqa: BLE001
            results.append(CompileResult(t, False, _failing_stage(e), None, _summary(e),
                                         imported_seconds + time.perf_counter() - start))
            continue
        results.append(CompileResult(t, True, "iree-compile", art.compile_rung, "",
                                     imported_seconds + time.perf_counter() - start))
    return results


def _summary(e: Exception) -> str:
    text = f"{type(e).__name__}: {e}".strip()
    if not str(e):
        text += " " + traceback.format_exc(limit=2)
    return " ".join(text.split())[:400]


@dataclass(frozen=True)
class ZooJob(Job):
    """`check_model` as a job of `lowerkit.tools.executor`: one item a zoo model (its name)."""

    target: str = "cpu"
    # the entries by name, when the caller has them (else a name of either zoo is looked up)
    models: dict = field(default_factory=dict, compare=False, hash=False)

    name = "zoo"

    def run(self, item: Item) -> Outcome:
        from .ecosystem import find

        r = check_model(self.models.get(item.key) or find(item.key), self.target)
        return Outcome(item.key, "ok" if r.ok else "fail", "passed" if r.ok else "failed",
                       r.stage, r.message, data=r.to_json())


def result_of(outcome: Outcome) -> CoverageResult:
    """A `CoverageResult` from an executor outcome (a crash or a timeout has none of its own:
    its stage is the outcome's status)."""
    if "ok" in outcome.data:
        fields = CoverageResult.__dataclass_fields__
        values = {k: v for k, v in outcome.data.items() if k in fields}
        values.update(name=outcome.key, stage=outcome.stage, message=outcome.message)
        return CoverageResult(**values)
    return CoverageResult(outcome.key, False, outcome.status, None, outcome.message,
                          outcome.run.get("seconds") or 0.0)
