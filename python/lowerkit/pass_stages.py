"""Stage factories for the passes in `lowerkit.passes`, as the ``passes`` registry lists them.

Those modules hold plain ``run(op, pass_)`` functions with a ``NAME``; here each becomes a
named `PythonPassStage`, so ``lowerkit-opt --pass=NAME`` and pipelines build the same stage.
"""

from __future__ import annotations

import importlib
from types import ModuleType
from typing import Callable

from .build import Build
from .stage import PythonPassStage

# pass name -> module in lowerkit.passes; the torch-dialect fixes first, in pipeline order
MODULES = {
    "widen-unsigned": "widen_unsigned",
    "rewrite-bool-mask-index-put": "bool_mask_index_put",
    "batch-unbatched-pooling": "unbatched_pooling",
    "rewrite-unit-window-pooling": "unit_window_pooling",
    "trim-conv-overhang": "conv_overhang",
    "pad-pool-overhang": "pool_overhang",
    "gather-adaptive-max-pool": "adaptive_max_pool",
    "replace-empty-results": "empty_results",
    "fold-empty-cat": "empty_cat",
    "crop-negative-pad": "negative_pad",
    "normalize-unit-slices": "unit_slices",
    "fold-empty-contractions": "empty_contractions",
    "widen-narrow-io": "narrow_io",
    # IREE's build (each module's BUILD): target fixes for Vulkan
    "fence-reductions": "reduction_fence",
    "guard-zero-divisors": "zero_divisor",
    "fence-pad-sources": "pad_fence",
    "fence-strided-slices": "strided_slice_fence",
}


def python_pass(module: ModuleType) -> PythonPassStage:
    """The stage of one pass module (its ``NAME``, ``run`` and first docstring line)."""
    return PythonPassStage(module.NAME, module.run, build=Build(getattr(module, "BUILD", "torch-mlir")),
                           description=module.__doc__.splitlines()[0])


def factory(name: str) -> Callable[[], PythonPassStage]:
    def make() -> PythonPassStage:
        return python_pass(importlib.import_module(f"lowerkit.passes.{MODULES[name]}"))

    make.__name__ = MODULES[name]
    return make


def registry_entries() -> dict[str, str]:
    """``name -> "lowerkit.pass_stages:<module>"`` for the ``passes`` registry."""
    return {name: f"lowerkit.pass_stages:{module}" for name, module in MODULES.items()}


def __getattr__(attr: str) -> Callable[[], PythonPassStage]:
    # "lowerkit.pass_stages:widen_unsigned" resolves to the factory of that pass
    for name, module in MODULES.items():
        if module == attr:
            return factory(name)
    raise AttributeError(attr)
