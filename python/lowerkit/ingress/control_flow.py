"""Control flow's higher-order ops (``while_loop``, ``torch.cond``) in a form torch-mlir imports.

``while_loop``: its additional inputs as carried values (`carry_additional_inputs`).
``torch.cond``: a node importer that writes it as ``torch.prim.If`` (`node_importer_class`).

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


_NODE_IMPORTER: list[type] = []


def node_importer_class() -> type:
    """torch-mlir's ``GraphNodeImporter`` that also imports ``torch.cond``, as a
    ``torch.prim.If`` whose two regions call the branch graphs (torch-mlir 20261001 has no
    import of it: "Higher-order operation 'cond' not implemented"). Pass it to ``FxImporter``
    as ``graph_node_importer_cls``."""
    if _NODE_IMPORTER:
        return _NODE_IMPORTER[0]
    from torch_mlir.extras.fx_importer import GraphNodeImporter
    from torch_mlir.ir import Block, FlatSymbolRefAttr, InsertionPoint, Operation

    class ControlFlowNodeImporter(GraphNodeImporter):
        __slots__ = ()

        def _import_hop_cond(self, loc, node, hop):
            pred, true_fn, false_fn, operands = node.args
            value = pred.meta.get("val") if isinstance(pred, torch.fx.Node) else pred
            if not isinstance(value, (torch.Tensor, torch.SymBool)):
                raise NotImplementedError(f"torch.cond on a {type(value).__name__} condition: "
                                          "lowerkit imports one held in a tensor or computed "
                                          "from sizes")
            root = node.graph.owning_module
            branches = [self.fx_importer._graph_module_to_func_name[id(getattr(root, f.target))]
                        for f in (true_fn, false_fn)]
            values = [self._import_argument(loc, v) for v in operands]
            flag = self._import_argument(loc, pred)  # a size's comparison: a !torch.bool
            if isinstance(value, torch.Tensor):
                flag = Operation.create("torch.aten.Bool.Tensor", operands=[flag], loc=loc,
                                        results=[self._cc.torch_bool_type]).result
            results = node.meta["val"]
            results = list(results) if isinstance(results, (tuple, list)) else [results]
            types = [self._cc.value_info_to_type(v) for v in results]
            branch_op = Operation.create("torch.prim.If", results=types, operands=[flag],
                                         regions=2, loc=loc)
            for region, callee in zip(branch_op.regions, branches):
                with InsertionPoint(Block.create_at_start(region, [])):
                    call = Operation.create("func.call", results=types, operands=values,
                                            attributes={"callee": FlatSymbolRefAttr.get(callee)},
                                            loc=loc)
                    Operation.create("torch.prim.If.yield", results=[],
                                     operands=list(call.results), loc=loc)
            self._multi_result_nodes.add(node)  # its users read each result by getitem
            for i, value in enumerate(branch_op.results):
                self.bind_node_value(node, value, i)

    _NODE_IMPORTER.append(ControlFlowNodeImporter)
    return ControlFlowNodeImporter
