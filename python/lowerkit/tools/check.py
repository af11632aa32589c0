"""``lowerkit check``: every op of a program that a pipeline, the target's fixes and IREE cannot
lower, found in one run, each with the user's source line.

It walks the same stages `lowerkit.compile` runs for the target (the pipeline, then the
``target-fixes`` pipeline, the crossing placed by `with_crossing`), so a program that checks
clean is the program ``compile`` builds. A stage that fails is scanned (`lowerkit.stages.scan`)
to list every op it refuses rather than the first.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .. import registry
from ..errors import StageError
from ..iree import bridge, compiler, parameters
from ..ir import Build
from ..stages.crossing import with_crossing
from ..stages.pipeline import Pipeline
from ..stages.scan import UnsupportedOp, clone_module, first_line, scan_stage
from ..target import Target


@dataclass
class CoverageReport:
    """What ``check`` found: unsupported ops and the stages that ran."""

    unsupported: list[UnsupportedOp] = field(default_factory=list)
    passed: list[str] = field(default_factory=list)
    stopped_at: str | None = None  # a stage that failed for a reason that could not be bypassed
    errors: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.unsupported and self.stopped_at is None

    def table(self, title: str = "ops the pipeline cannot lower"):
        from rich.table import Table

        table = Table(title=title)
        # a file:line stays on one line (to be found, clicked, grepped); the message wraps
        longest = max((len(u.location or "-") for u in self.unsupported), default=1)
        for col in ("#", "op", "stage", "source", "why"):
            table.add_column(col, overflow="fold", min_width=longest if col == "source" else None)
        for i, u in enumerate(self.unsupported, 1):
            table.add_row(str(i), u.op, u.stage, u.location or "-", u.message)
        return table


def stages_for(module: Any, pipeline: Pipeline, target: "Target | str | None") -> list:
    """The leaf stages ``compile`` runs on ``module``: the pipeline's, then (given a target)
    the target's fixes, with the crossing where it falls."""
    stages = list(pipeline.leaf_stages())
    if target is not None:
        after = Build.IREE if any(s.build is Build.IREE for s in stages) else Build.of(module)
        fixes = registry.pipelines.factory("target-fixes")(target=Target.parse(target), after=after)
        stages += list(fixes.leaf_stages())
        if parameters.has_weight_arguments(module):  # as compile: weights become parameters
            stages.append(parameters.stage()[0])
    return list(with_crossing(stages, Build.of(module)))


def check_program(module: Any, pipeline: Pipeline, *, target: "Target | str | None" = None
                  ) -> CoverageReport:
    """All the ops of ``module`` (torch dialect) that ``pipeline`` (and, given a target, its
    fixes and IREE) cannot lower, with their source lines."""
    report = CoverageReport()
    current = module
    for stage in stages_for(module, pipeline, target):
        try:
            current = stage(clone_module(current))
            report.passed.append(stage.name)
            continue
        except StageError as e:
            result, found, error = scan_stage(stage, current, e)
        report.unsupported += found
        if result is None:
            report.stopped_at = stage.name
            if error is not None:
                report.errors.append(str(error))
            return report
        current = result
    if target is not None and not report.unsupported:
        try:
            compiler.compile_to_vmfb(bridge.to_iree_bytecode(current), Target.parse(target))
            report.passed.append(compiler.STAGE)
        except StageError as e:
            report.unsupported += [UnsupportedOp(d.op or "?", compiler.STAGE, d.location,
                                                 first_line(d.message)) for d in e.diagnostics if d.op]
            if not any(d.op for d in e.diagnostics):
                report.stopped_at = compiler.STAGE
                report.errors.append(str(e))
    return report
