"""torch-mlir's importer's failures told as lowerkit's: the stage, and where known the op and
the user's source line.

The importer (20261001) fails on some programs with a bare ``KeyError``: a quantized tensor's
dtype (``torch.qint8``), which has no MLIR type there, read "KeyError: torch.qint8" with no word
of which op made it. The node is found again from the graph.
"""

from __future__ import annotations

import torch

from ..errors import IngressError
from .checks import source_line


def _first_node_giving(graph: torch.fx.Graph, dtype: torch.dtype) -> torch.fx.Node | None:
    """The first node whose value has ``dtype``, or that names it (``quantize_per_tensor``'s
    fake value is float32 in ``aot_autograd``'s graph: its dtype argument tells)."""
    for node in graph.nodes:
        val = node.meta.get("val")
        values = val if isinstance(val, (tuple, list)) else (val,)
        if any(isinstance(v, torch.Tensor) and v.dtype == dtype for v in values) or \
                any(a is dtype for a in (*node.args, *node.kwargs.values())):
            return node
    return None


def import_failure(error: Exception, graph: torch.fx.Graph) -> IngressError:
    """``error``, raised by torch-mlir's importer on ``graph``, as an `IngressError`."""
    message = f"stage 'torch-import' failed: {type(error).__name__}: {error}"
    if isinstance(error, KeyError) and error.args and isinstance(error.args[0], torch.dtype):
        dtype = error.args[0]
        message = f"stage 'torch-import' failed: torch-mlir's importer has no type for {dtype}"
        node = _first_node_giving(graph, dtype)
        if node is not None:
            where = source_line(node)
            target = getattr(node.target, "__name__", str(node.target))
            message += f": {target} gives a {dtype} tensor" + (f" at {where}" if where else "")
    return IngressError(message)
