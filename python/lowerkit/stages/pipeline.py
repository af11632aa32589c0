"""Pipeline: a sequence of stages that is itself a stage.

Running a pipeline records, for every stage, its time and op histogram (and, on request, the
module it produced), can stop after a named stage (``until=``), and calls instruments before
and after each stage. A module moves from torch-mlir's build to IREE's at most once, where the
first IREE stage follows a torch-mlir one.
"""

from __future__ import annotations

import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Iterable, Iterator, Sequence

from ..errors import PipelineError, StageError
from ..ir import Build, module_asm, op_histogram
from .crossing import with_crossing
from .instrument import Instrument
from .stage import Stage, StageRecord, check_stage_name


@dataclass
class Lowering:
    """The result of running a pipeline: the final module and a record per stage."""

    module: Any
    records: list[StageRecord] = field(default_factory=list)

    def record(self, name: str) -> StageRecord:
        for r in self.records:
            if r.name == name:
                return r
        raise KeyError(f"no stage named {name!r}; stages: {[r.name for r in self.records]}")


class Pipeline(Stage):
    """A named sequence of stages (or pipelines) run one after another."""

    def __init__(self, name: str, stages: Sequence[Stage], description: str = ""):
        self.name = check_stage_name(name)
        self.stages = list(stages)
        self.description = description
        if not self.stages:
            raise ValueError(f"pipeline {name!r} has no stages")
        self.build = self.stages[0].build
        builds = [s.build for s in self.leaf_stages()]
        if Build.IREE in builds:
            first = builds.index(Build.IREE)
            if Build.TORCH_MLIR in builds[first:]:
                raise ValueError(
                    f"pipeline {name!r} runs a torch-mlir stage after an IREE stage; a module "
                    "crosses from torch-mlir to IREE once and never back"
                )
        names = [s.name for s in self.leaf_stages()]
        dupes = [n for n, c in Counter(names).items() if c > 1]
        if dupes:
            raise ValueError(f"pipeline {name!r} has stages with the same name: {dupes}")

    def leaf_stages(self) -> Iterator[Stage]:
        for s in self.stages:
            if isinstance(s, Pipeline):
                yield from s.leaf_stages()
            else:
                yield s

    @property
    def stage_names(self) -> list[str]:
        return [s.name for s in self.leaf_stages()]

    def _last_leaf_named(self, until: str) -> str:
        if until in self.stage_names:
            return until
        for s in self.stages:
            if isinstance(s, Pipeline):
                if s.name == until:
                    return s.stage_names[-1]
                try:
                    return s._last_leaf_named(until)
                except KeyError:
                    pass
        raise KeyError(until)

    def run(
        self,
        module: Any,
        *,
        until: str | None = None,
        instruments: Iterable[Instrument] = (),
        keep_ir: bool = False,
    ) -> Lowering:
        """Run the stages in order; stop after the stage (or nested pipeline) ``until``."""
        stop = None
        if until is not None:
            try:
                stop = self._last_leaf_named(until)
            except KeyError:
                raise PipelineError(
                    f"pipeline {self.name!r} has no stage {until!r}; stages: "
                    f"{', '.join(self.stage_names)}"
                ) from None
        instruments = list(instruments)
        result = Lowering(module)
        for stage in with_crossing(self.leaf_stages(), Build.of(module)):
            result.module = self._timed(stage, result, instruments, keep_ir)
            if stage.name == stop:
                break
        return result

    def _timed(self, stage: Stage, result: Lowering, instruments: list, keep_ir: bool) -> Any:
        for inst in instruments:
            inst.before_stage(stage, result.module)
        start = time.perf_counter()
        try:
            module = stage(result.module)
        except StageError as e:
            for inst in instruments:
                inst.stage_failed(stage, e)
            raise
        seconds = time.perf_counter() - start
        record = StageRecord(
            stage.name, stage.build, seconds, op_histogram(module),
            module_asm(module) if keep_ir else None,
        )
        result.records.append(record)
        for inst in instruments:
            inst.after_stage(stage, module, record)
        return module

    def apply(self, module: Any) -> Any:
        return self.run(module).module

    def __call__(self, module: Any) -> Any:
        return self.run(module).module

    def __repr__(self) -> str:
        return f"Pipeline({self.name!r}, {self.stage_names})"
