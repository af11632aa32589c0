"""Op locations that name the model's own modules: ``layer1/0/conv1/convolution_3``.

torch-mlir's FX importer gives each op the file:line of its stack trace. lowerkit wraps that
location in a name location built from the FX node's ``nn_module_stack`` (the path of the
submodule that ran it, with ``/`` between its parts) and the node's name, so that a graph
view can fold a lowered program by the model's modules. The file:line stays inside, so error
messages still name the user's line (`lowerkit.diagnostics.source_location`).
"""

from __future__ import annotations

import re
from typing import Any

# Modules lowerkit wraps a user's program in (`importer._TensorLeavesProgram.inner`,
# `importer._StatefulProgram.program`): their attribute names are not the user's.
WRAPPER_PREFIXES = ("program", "inner")

_INDEX = re.compile(r"\[(?:'([^']*)'|(\d+))\]")  # getattr/getitem forms: ``layers[0]``, ``d['a']``


def module_path(node: Any) -> str:
    """The path of the innermost module that ran ``node``, as ``layer1/0/conv1`` ("" at the top)."""
    stack = node.meta.get("nn_module_stack") or {}
    if not stack:
        return ""
    qualified = list(stack.values())[-1][0]  # (path, type), outermost first
    qualified = _INDEX.sub(lambda m: "." + (m.group(1) or m.group(2)), str(qualified))
    parts = [p for p in qualified.split(".") if p and not p.startswith("L[")]
    for prefix in WRAPPER_PREFIXES:
        if parts and parts[0] == prefix:
            parts = parts[1:]
    return "/".join(parts)


def node_name(node: Any) -> str:
    """``module/path/fx_node`` (or ``fx_node`` for an op of the top-level forward)."""
    path = module_path(node)
    return f"{path}/{node.name}" if path else node.name


def name_node_locations(importer: Any) -> Any:
    """Make ``importer`` (torch-mlir's ``FxImporter``) name each op's location after its
    module path and FX node, around the file:line location torch-mlir builds."""
    from torch_mlir.extras.fx_importer import ContextCache
    from torch_mlir.ir import Location

    class NamingContextCache(ContextCache):
        """torch-mlir's cache (slotted: its method cannot be replaced on the instance)."""

        __slots__ = ()

        def get_node_location(self, node):
            loc = super().get_node_location(node)
            if node.op != "call_function":
                return loc
            child = loc if loc is not None else Location.unknown(context=self._c)
            return Location.name(node_name(node), childLoc=child, context=self._c)

    # torch-mlir keeps its ContextCache in ``_cc``: the one place that builds op locations
    importer._cc.__class__ = NamingContextCache
    return importer
