"""Instruments watch a pipeline run without being part of it (timing, printing, dumping)."""

from __future__ import annotations

from typing import Any

from ..errors import StageError
from .stage import Stage, StageRecord


class Instrument:
    """Hooks called around every stage; override the ones you need."""

    def before_stage(self, stage: "Stage", module: Any) -> None:
        pass

    def after_stage(self, stage: "Stage", module: Any, record: "StageRecord") -> None:
        pass

    def stage_failed(self, stage: "Stage", error: "StageError") -> None:
        pass
