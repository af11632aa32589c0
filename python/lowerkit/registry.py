"""Registries: named pipelines, passes, IRDL dialects and custom-op lowerings, by name.

Nothing registers as a side effect of an import. Built-in entries are listed here as
``"module:attribute"`` strings (a pass of `lowerkit.passes` as its bare module name, made a
stage by ``PythonPassStage.from_module``) and imported on first use, so this module imports
no other part of lowerkit but the errors and the table of pass names. A user's package adds
its own through the ``lowerkit.<kind>`` entry-point group or by calling ``register``. A name
is taken once: registering it again is an error.
"""

from __future__ import annotations

import importlib
from importlib.metadata import entry_points
from typing import Callable, Generic, TypeVar

from .errors import RegistryError
from .passes import PASSES

# How a bare pass module becomes a stage (resolved on first use, like every entry).
PASS_MODULE_FACTORY = "lowerkit.stages.stage:PythonPassStage.from_module"

T = TypeVar("T")


class Registry(Generic[T]):
    """Names to factories of ``T``; factories are called on every ``get``."""

    def __init__(self, kind: str, builtins: dict[str, str]):
        self.kind = kind
        self._lazy: dict[str, str] = dict(builtins)
        self._factories: dict[str, Callable[[], T]] = {}
        self._entry_points_loaded = False

    def _load_entry_points(self) -> None:
        if self._entry_points_loaded:
            return
        self._entry_points_loaded = True
        for ep in entry_points(group=f"lowerkit.{self.kind}"):
            if ep.name in self._lazy or ep.name in self._factories:
                raise RegistryError(
                    f"{self.kind} {ep.name!r} from entry point {ep.value} is already registered"
                )
            self._lazy[ep.name] = ep.value

    def register(self, name: str, factory: Callable[[], T]) -> None:
        self._load_entry_points()
        if name in self._lazy or name in self._factories:
            raise RegistryError(f"{self.kind} {name!r} is already registered")
        self._factories[name] = factory

    def unregister(self, name: str) -> None:
        self._factories.pop(name, None)

    def __contains__(self, name: str) -> bool:
        self._load_entry_points()
        return name in self._lazy or name in self._factories

    def names(self) -> list[str]:
        self._load_entry_points()
        return sorted({*self._lazy, *self._factories})

    def get(self, name: str) -> T:
        return self.factory(name)()

    def factory(self, name: str) -> Callable[..., T]:
        """The factory registered as ``name`` (for factories that take options)."""
        self._load_entry_points()
        if name not in self._factories:
            ref = self._lazy.get(name)
            if ref is None:
                raise RegistryError(
                    f"no {self.kind} named {name!r}; registered: {', '.join(self.names()) or 'none'}"
                )
            self._factories[name] = _resolve(ref)
        return self._factories[name]


def _resolve(ref: str) -> Callable:
    """``"package.module:attr.attr"`` to that object; a bare module name (a pass module) to
    a factory of its stage."""
    module, sep, attr = ref.partition(":")
    if not sep:
        from_module = _resolve(PASS_MODULE_FACTORY)
        return lambda: from_module(importlib.import_module(module))
    obj = importlib.import_module(module)
    for part in attr.split("."):
        obj = getattr(obj, part)
    return obj


pipelines: Registry = Registry(
    "pipelines",
    {
        "torch-to-linalg": "lowerkit.pipelines.torch_to_linalg:build_pipeline",
        "torch-to-linalg-fused": "lowerkit.pipelines.fused_ops:build_pipeline",
        "stage-kinds": "lowerkit.pipelines.stage_kinds:build_pipeline",
        # what a target needs after any pipeline (`build_pipeline(target, after=build)`)
        "target-fixes": "lowerkit.pipelines.target_fixes:build_pipeline",
    },
)

# Python passes (and other single stages) by kebab-case name; a factory takes the pass's
# options as keyword arguments and returns a Stage.
passes: Registry = Registry(
    "passes",
    {
        "lower-custom-ops": "lowerkit.stages.custom_ops:lower_custom_ops",
        "check-no-custom-ops": "lowerkit.stages.crossing:check_no_custom_ops_stage",
        "raise-to-fused": "lowerkit.pipelines.fused_ops:raise_to_fused",
        "lower-fused-to-linalg": "lowerkit.pipelines.fused_ops:lower_fused_to_linalg",
        "fold-double-negation": "lowerkit.pipelines.stage_kinds:fold_double_negation",
        "erase-zero-add": "lowerkit.pipelines.stage_kinds:erase_zero_add",
        "mark-linalg-ops": "lowerkit.pipelines.stage_kinds:mark_linalg_ops",
        "count-ops": "lowerkit.pipelines.stage_kinds:count_ops",
        **{name: f"lowerkit.passes.{module}" for name, module in PASSES.items()},
    },
)

# IRDL dialects by dialect name; a factory returns a lowerkit.dialects.irdl.IRDLDialect.
dialects: Registry = Registry("dialects", {"fused": "lowerkit.dialects.irdl:fused"})

# Lowerings of user-defined PyTorch ops ("namespace::name") to torch-dialect ops; a factory
# returns the lowering function (see lowerkit.stages.custom_ops).
custom_ops: Registry = Registry("custom-ops", {})
