"""``while_loop``'s additional inputs as carried values, so torch-mlir can import the loop.

A ``torch._higher_order_ops.while_loop`` whose body reads a value from outside it (``i < n``
for an input ``n``) takes that value as an *additional input*: the cond and body graphs
receive it after the carried values, and the body does not return it. torch-mlir's FX
importer (20261001) passes it to ``torch.prim.Loop`` as one more carried value but builds the
loop's region for the carried values only, and the IR fails verification ("region branch
point has 3 operands, but region successor needs 2 inputs"). Carrying it unchanged is the same
loop: here the body returns it as it came in, and the node names it among the carried values.
"""

from __future__ import annotations

import copy

import torch


def _returning_its_inputs(body: torch.fx.GraphModule, carried: int) -> torch.fx.GraphModule:
    """A copy of ``body`` that also returns, unchanged, its inputs after the first
    ``carried`` (the caller's own body graph stays as it is: an eager run may still call it)."""
    body = copy.deepcopy(body)
    inputs = [n for n in body.graph.nodes if n.op == "placeholder"]
    output = body.graph.output_node()
    returned = output.args[0]
    returned = tuple(returned) if isinstance(returned, (tuple, list)) else (returned,)
    output.args = (returned + tuple(inputs[carried:]),)
    body.recompile()
    return body


def carry_additional_inputs(gm: torch.fx.GraphModule) -> int:
    """Rewrite each ``while_loop`` of ``gm`` (and of its subgraphs) whose additional inputs
    are tensors into one that carries them; return how many were rewritten."""
    done = sum(carry_additional_inputs(child) for child in list(gm.children())
               if isinstance(child, torch.fx.GraphModule))
    for node in list(gm.graph.nodes):
        if node.op != "call_function" or node.target is not torch.ops.higher_order.while_loop:
            continue
        cond, body, carried, additional = node.args
        if not additional or not all(
                isinstance(a, torch.fx.Node) and isinstance(a.meta.get("val"), torch.Tensor)
                for a in additional):
            continue
        name = f"{body.target}_carrying"
        while hasattr(gm, name):
            name += "_"
        setattr(gm, name, _returning_its_inputs(getattr(gm, body.target), len(carried)))
        with gm.graph.inserting_before(node):
            new_body = gm.graph.get_attr(name)
        node.args = (cond, new_body, tuple(carried) + tuple(additional), ())
        if not body.users:
            gm.graph.erase_node(body)
        if isinstance(node.meta.get("val"), (tuple, list)):
            node.meta["val"] = tuple(node.meta["val"]) + tuple(a.meta["val"] for a in additional)
        done += 1
    if done:
        gm.recompile()
    return done
