"""Rewrite-pattern stages: Python patterns (greedy or dialect conversion) and PDL modules.

A pattern is a Python function of ``(op, rewriter)`` on one root op name, as MLIR's Python
``rewrite`` module takes it: it returns nothing when it rewrote the op and a truthy value to
say "no match". Patterns run in either build; the stage picks that build's ``rewrite`` module.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any, Callable, Sequence

from ..dialects.irdl import load_dialects
from ..ir import Build, parse_module_source
from .pattern import Pattern, pattern  # noqa: F401  (patterns are written with this module)
from .stage import Stage


def rewrite_module(build: Build) -> ModuleType:
    """MLIR's Python ``rewrite`` module of ``build``."""
    return importlib.import_module(
        "torch_mlir.rewrite" if build is Build.TORCH_MLIR else "iree.compiler.rewrite"
    )


@dataclass(repr=False)
class GreedyRewriteStage(Stage):
    """Apply Python patterns (and folding) greedily until nothing changes."""

    name: str
    patterns: Sequence[Pattern]
    build: Build = Build.TORCH_MLIR
    max_iterations: int | None = None

    dialects: Sequence[str] = ()  # IRDL dialects (by name) loaded before the stage runs

    def apply(self, module: Any) -> Any:
        load_dialects(module.context, self.dialects)
        rw = rewrite_module(self.build)
        patterns = rw.RewritePatternSet()
        for p in self.patterns:
            patterns.add(p.root, p.fn, p.benefit)
        config = None
        if self.max_iterations is not None:
            config = rw.GreedyRewriteConfig()
            config.max_iterations = self.max_iterations
        rw.apply_patterns_and_fold_greedily(module, patterns.freeze(), config)
        return module


@dataclass(repr=False)
class ConversionStage(Stage):
    """A dialect conversion: ops of ``illegal`` dialects/ops must be rewritten by ``patterns``.

    ``partial=True`` leaves ops that are neither legal nor illegal alone; a full conversion
    fails on any op not declared legal. Names with a dot are ops, without one dialects.
    """

    name: str
    patterns: Sequence[Pattern]
    illegal: Sequence[str] = ()
    legal: Sequence[str] = ()
    partial: bool = True
    build: Build = Build.TORCH_MLIR
    type_conversions: Sequence[Callable[[Any], Any]] = ()

    dialects: Sequence[str] = ()  # IRDL dialects (by name) loaded before the stage runs

    def apply(self, module: Any) -> Any:
        load_dialects(module.context, self.dialects)
        rw = rewrite_module(self.build)
        target = rw.ConversionTarget()
        for name in self.legal:
            (target.add_legal_op if "." in name else target.add_legal_dialect)(name)
        for name in self.illegal:
            (target.add_illegal_op if "." in name else target.add_illegal_dialect)(name)
        converter = rw.TypeConverter()
        # The binding does not keep conversion callables alive: hold them for the whole run.
        conversions = [_identity_type, *self.type_conversions]  # identity first: later ones win
        for conv in conversions:
            converter.add_conversion(conv)
        patterns = rw.RewritePatternSet()
        for p in self.patterns:
            patterns.add_conversion(p.root, p.fn, converter, p.benefit)
        run = rw.apply_partial_conversion if self.partial else rw.apply_full_conversion
        run(module.operation, target, patterns.freeze())
        del conversions
        return module


def _identity_type(t: Any) -> Any:
    return t


@dataclass(repr=False)
class PDLStage(Stage):
    """A PDL pattern module (text, a ``.mlir`` path, or a builder ``fn(context) -> Module``)
    applied greedily; ``rewrites``/``constraints`` are the Python functions it calls by name."""

    name: str
    pdl: "str | Path | Callable[[Any], Any]"
    rewrites: dict[str, Callable] = field(default_factory=dict)
    constraints: dict[str, Callable] = field(default_factory=dict)
    build: Build = Build.TORCH_MLIR

    dialects: Sequence[str] = ()  # IRDL dialects (by name) loaded before the stage runs

    def pdl_module(self, context: Any) -> Any:
        return parse_module_source(self.build, self.pdl, context)

    def apply(self, module: Any) -> Any:
        load_dialects(module.context, self.dialects)
        rw = rewrite_module(self.build)
        source = self.pdl_module(module.context)  # kept alive until the patterns have run
        pdl = rw.PDLModule(source)
        for name, fn in self.rewrites.items():
            pdl.register_rewrite_function(name, fn)
        for name, fn in self.constraints.items():
            pdl.register_constraint_function(name, fn)
        rw.apply_patterns_and_fold_greedily(module, pdl.freeze())
        del source
        return module
