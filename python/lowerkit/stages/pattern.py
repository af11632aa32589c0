"""Pattern: one Python rewrite on one root op name, as MLIR's Python ``rewrite`` module takes it.

Apart from the stages that apply patterns (`lowerkit.stages.rewrite`) so that a replay script
(`lowerkit.stages.replay`) can rebuild a pattern without importing the stage engine.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable


@dataclass
class Pattern:
    """One rewrite: ``fn(op, rewriter)`` on ops named ``root``; falsy return = rewritten.

    For a conversion pattern ``fn`` is ``fn(op, adaptor, type_converter, rewriter)``.
    """

    root: str
    fn: Callable[..., Any]
    benefit: int = 1


def pattern(root: str, benefit: int = 1) -> Callable[[Callable], Pattern]:
    """Decorator: ``@pattern("torch.aten.gelu")`` turns a function into a `Pattern`."""
    return lambda fn: Pattern(root, fn, benefit)
