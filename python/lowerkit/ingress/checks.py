"""Run-time checks of a program, kept through torch-mlir's importer and IREE's compile.

``torch._assert_async(cond, msg)`` (and the checks lowerkit's own decompositions write the
same way, `decompositions._mask_put`) is in the exported and ``aot_autograd`` graphs as
``aten._assert_async.msg``, but torch-mlir's FX importer (20261001) drops it, and IREE strips
assertions by default: a call that eager refuses would give a silent wrong answer. Its
condition, read as a scalar, goes to ``aten._assert_scalar``, which torch-mlir lowers to
``cf.assert``. The run-time assertions ``torch.export`` and Dynamo put in the graph
themselves (``_assert_scalar``: ``torch._check`` of a scalar read from data, the range of a
length read from data) get the same treatment. Each message starts with
`lowerkit.ir.CHECK_MARK`, so that iree-compile keeps it, and ends with the user's source line.
A failed check raises `lowerkit.errors.CheckError`.
"""

from __future__ import annotations

import re

import torch

from ..ir import CHECK_MARK

aten = torch.ops.aten
_FRAME = re.compile(r'File "([^"]+)", line (\d+)')


def source_line(node: torch.fx.Node) -> str | None:
    """The innermost ``file:line`` of ``node``'s stack trace (the user's line), if any."""
    frames = _FRAME.findall(node.meta.get("stack_trace") or "")
    return f"{frames[-1][0]}:{frames[-1][1]}" if frames else None


def _marked(message: str, node: torch.fx.Node) -> str:
    where = source_line(node)
    return f"{CHECK_MARK}{message}" + (f" ({where})" if where else "")


def keep(graph: torch.fx.Graph) -> None:
    """Each ``_assert_async.msg`` as ``_assert_scalar`` of its condition, and each
    ``_assert_scalar`` marked, in place."""
    for node in graph.find_nodes(op="call_function", target=aten._assert_scalar.default):
        cond, msg = node.args
        if isinstance(msg, str) and not msg.startswith(CHECK_MARK):
            node.args = (cond, _marked(msg, node))
    for node in list(graph.find_nodes(op="call_function", target=aten._assert_async.msg)):
        cond, msg = node.args
        message = _marked(msg, node)
        with graph.inserting_before(node):
            flag = graph.call_function(aten.ne.Scalar, (cond, 0))
            scalar = graph.call_function(aten._local_scalar_dense.default, (flag,))
            check = graph.call_function(aten._assert_scalar.default, (scalar, message))
        flag.meta["val"] = torch.empty((), dtype=torch.bool, device="meta")
        flag.meta["tensor_meta"] = torch.fx.passes.shape_prop._extract_tensor_metadata(
            flag.meta["val"])
        scalar.meta["val"] = 1  # torch-mlir's importer reads a bool's item as aten.Int.Tensor
        for new in (flag, scalar, check):
            new.meta["stack_trace"] = node.meta.get("stack_trace")
        graph.erase_node(node)
