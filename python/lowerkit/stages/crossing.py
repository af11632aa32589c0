"""The crossing as a stage, and the one rule for where it goes.

A module moves from torch-mlir's build to IREE's once, just before the first IREE stage that
meets a torch-mlir module. `with_crossing` is that rule; `Pipeline.run`, ``lowerkit check``
(`lowerkit.tools.check`) and ``lowerkit-opt`` all walk their stages through it.
"""

from __future__ import annotations

from typing import Any, Iterable, Iterator

from ..iree import bridge
from ..ir import Build
from .stage import FunctionStage, Stage


class CrossingStage(Stage):
    """The move from torch-mlir's build to IREE's (`lowerkit.iree.bridge`), recorded and
    instrumented like any stage."""

    name = bridge.CROSSING_STAGE
    build = Build.IREE

    def apply(self, module: Any) -> Any:
        return bridge.torch_mlir_to_iree(module)

    def __call__(self, module: Any) -> Any:
        # not Stage.__call__: that refuses a module of the other build, which this one takes
        return self.apply(module)


def with_crossing(stages: Iterable[Stage], build: Build) -> Iterator[Stage]:
    """``stages`` as run on a module of ``build``: a `CrossingStage` goes before the first IREE
    stage that would meet a torch-mlir module."""
    for stage in stages:
        if stage.build is Build.IREE and build is Build.TORCH_MLIR:
            yield CrossingStage()
            build = Build.IREE
        yield stage


def check_no_custom_ops_stage() -> FunctionStage:
    """The crossing's precondition as a stage, to end a pipeline that lowers custom dialects."""

    def check(module):
        bridge.check_no_custom_ops(module, "check-no-custom-ops")

    return FunctionStage("check-no-custom-ops", check)
