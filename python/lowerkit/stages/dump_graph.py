"""A dumped stage as a graph for Google's Model Explorer: ``NN-stage.graph.json``.

Model Explorer folds and unfolds layers by namespace and lays out each layer only when it is
opened, so a 5,000-op stage stays readable; its own MLIR adapter cannot read lowerkit's stages
(it knows few dialects and walks only ``func.func``). lowerkit writes Model Explorer's graph JSON
(one ``GraphCollection`` a file: ``{"label", "graphs": [{"id", "nodes": [...]}]}``) with the
standard library, from the stage's text parsed in IREE's MLIR context, which registers every
dialect from torch to vm. lowerkit never imports Model Explorer (``lowerkit view`` runs it in
a child process).

What the graph shows:

- every function-like op (an op with a ``sym_name``, a ``function_type`` and a body:
  ``func.func``, ``util.func``, ``vm.func``, ``llvm.func``, dispatch functions inside
  executables) is one graph, named by its symbol path (``executable/variant/func``);
- ops are laid out in layers named after the model's modules, from the location the importer
  gave each op (``layer1/0/conv1/convolution_3``, `lowerkit.ingress.locations`); fused
  locations go to the layers' common ancestor;
- an op with regions is a layer of its own, the op pinned at its top and its body inside
  (not linalg's named ops, whose bodies their text does not show either);
- a function with several blocks has a layer per block (``^bb1``), with a node for the block
  that its predecessors' branches point to;
- an op without operands (constants, weights, empty tensors) is drawn in the layer of its
  first user: edges to users in other layers are left out and the user lists the value in its
  attributes (fanning out to every layer, weights made one layout take 89 s);
- ``failed`` marks the ops a failed stage reported (op name and source line) in red; a
  report whose line the stage does not hold marks every op of its name.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable

# Every quoted string of a location, left to right: a name location's name
# (``"layer1/0/conv1/convolution_3"(...)``) or a file location's file (``"f.py":12:0``).
_QUOTED = re.compile(r'"((?:[^"\\]|\\.)*)"(:\d+)?')
_FILE_LOC = re.compile(r'"([^"]+)":(\d+):\d+')
ATTR_LIMIT = 200  # characters of an attribute's text kept on a node
# linalg's named ops (conv, matmul, fill, ...) have a body that their text never shows: drawn
# as one op each, not as layers
SHOWN_BODIES = ("linalg.generic", "linalg.map", "linalg.reduce")
ERROR_STYLE = {"backgroundColor": "#fde3e3", "borderColor": "#c0392b", "hoveredBorderColor": "#7b1c12"}


@dataclass(frozen=True)
class FailedOp:
    """An op a failed stage reported: its name and, where known, the user's ``file:line``."""

    op: str | None
    location: str | None
    message: str


class _LocationNames:
    """The names of a printed location that say where the op itself is: a call site's callee
    (inlining, as IREE's ABI phase does, puts the caller after ``at``), all parts of a fused
    location, no file locations."""

    def __init__(self, text: str):
        self.s = text
        self.i = 0

    def parse(self) -> list[str]:
        s = self.s.strip()
        if s.startswith("loc(") and s.endswith(")"):
            s = s[4:-1]
        self.s, self.i = s, 0
        return self._loc()

    def _expect(self, token: str) -> None:
        if not self.s.startswith(token, self.i):
            raise ValueError(f"expected {token!r} at {self.i}")
        self.i += len(token)

    def _quoted(self) -> str:
        m = _QUOTED.match(self.s, self.i)
        if m is None:
            raise ValueError(f"expected a string at {self.i}")
        self.i = m.end(1) + 1
        return m.group(1)

    def _loc(self) -> list[str]:
        s = self.s
        if s.startswith("callsite(", self.i):
            self.i += len("callsite(")
            callee = self._loc()
            self._expect(" at ")
            self._loc()
            self._expect(")")
            return callee
        if s.startswith("fused", self.i):
            self.i += len("fused")
            if s.startswith("<", self.i):  # metadata: skip to its matching '>'
                depth = 0
                while True:
                    c = s[self.i]
                    if c == '"':
                        self._quoted()
                        continue
                    depth += (c == "<") - (c == ">")
                    self.i += 1
                    if depth == 0:
                        break
            self._expect("[")
            found = []
            while True:
                found += self._loc()
                if s.startswith(", ", self.i):
                    self.i += 2
                    continue
                self._expect("]")
                return found
        if s.startswith("unknown", self.i):
            self.i += len("unknown")
            return []
        text = self._quoted()
        if s.startswith(":", self.i):  # a file location: "f.py":12:0, maybe "to 12:4"
            m = re.compile(r"(:\d+)+( to (\d+:)?\d+)?").match(s, self.i)
            self.i = m.end() if m else self.i
            return []
        if s.startswith("(", self.i):
            self.i += 1
            self._loc()
            self._expect(")")
        return [text]


def location_names(location: str) -> list[str]:
    """Names of a location's own name locations (see `_LocationNames`)."""
    try:
        return _LocationNames(location).parse()
    except (ValueError, IndexError):  # a form not known here: every name in it
        return [name for name, line in _QUOTED.findall(location) if not line]


def layer_of(location: str) -> str:
    """The module path a location names (``layer1/0/conv1``), "" where it names none; the
    common ancestor of several (a fused location)."""
    paths = [name.rsplit("/", 1)[0].split("/") if "/" in name else []
             for name in location_names(location)]
    if not paths:
        return ""
    common = paths[0]
    for p in paths[1:]:
        n = 0
        while n < min(len(common), len(p)) and common[n] == p[n]:
            n += 1
        common = common[:n]
    return "/".join(common)


def _join(*parts: str) -> str:
    return "/".join(p for p in parts if p)


def _kv(key: str, value: Any) -> dict:
    text = str(value)
    if len(text) > ATTR_LIMIT:
        text = text[:ATTR_LIMIT] + "…"
    return {"key": key, "value": text}


def _is_function(op: Any) -> bool:
    attrs = op.attributes
    return ("sym_name" in attrs and "function_type" in attrs and len(op.regions) == 1)


def _symbol(op: Any) -> str | None:
    attrs = op.attributes
    if "sym_name" not in attrs:
        return None
    return str(attrs["sym_name"]).strip('"')


def _op_names(op: Any) -> set[str]:
    """The names a diagnostic may call an op by: its own, and for torch-mlir's placeholder of
    an op it has no definition of (``torch.operator``), the ATen op's."""
    names = {op.name}
    if op.name == "torch.operator" and "name" in op.attributes:
        names.add(str(op.attributes["name"]).strip('"'))
    return names


def _matches(op: Any, location: str, failed: Iterable[FailedOp]) -> FailedOp | None:
    names = _op_names(op)
    for f in failed:
        if f.op is not None and f.op not in names:
            continue
        if f.location is not None:
            lines = {f"{m.group(1)}:{m.group(2)}" for m in _FILE_LOC.finditer(location)}
            if f.location not in lines:
                continue
        elif f.op is None:
            continue
        return f
    return None


class _GraphBuilder:
    """The nodes of one function-like op."""

    def __init__(self, func: Any, graph_id: str, failed: tuple[FailedOp, ...]):
        self.graph_id = graph_id
        self.failed = failed
        self.nodes: list[dict] = []
        self.sources: dict[Any, tuple[str, str]] = {}  # mlir Value -> (node id, output id)
        self.leaves: list[dict] = []  # operand-less op nodes, placed after their users
        self.found: set[FailedOp] = set()  # the failures that marked an op here
        self._locations: dict[Any, tuple[str, str]] = {}  # location attribute -> (text, layer)
        self._build(func)

    def _node(self, label: str, namespace: str, **extra: Any) -> dict:
        node = {"id": str(len(self.nodes)), "label": label, "namespace": namespace,
                "subgraphIds": [], "attrs": [], "incomingEdges": [], "outputsMetadata": [],
                "inputsMetadata": [], **extra}
        self.nodes.append(node)
        return node

    def _outputs(self, node: dict, values: Any) -> None:
        for i, v in enumerate(values):
            self.sources[v] = (node["id"], str(i))
            node["outputsMetadata"].append({"id": str(i), "attrs": [_kv("tensor_shape", v.type)]})

    def _build(self, func: Any) -> None:
        blocks = list(func.regions[0].blocks)
        block_nodes: dict[Any, dict] = {}
        for i, block in enumerate(blocks):
            layer = f"^bb{i}" if len(blocks) > 1 else ""
            if i == 0:
                if len(block.arguments):
                    node = self._node("inputs", layer, attrs=[_kv("kind", "arguments")])
                    self._outputs(node, block.arguments)
            else:
                node = self._node(f"^bb{i}", layer, attrs=[_kv("kind", "block")])
                self._outputs(node, block.arguments)
                block_nodes[block] = node
        for i, block in enumerate(blocks):
            layer = f"^bb{i}" if len(blocks) > 1 else ""
            for op in block.operations:
                node = self._op(op.operation, layer)
                for successor in op.operation.successors:
                    target = block_nodes.get(successor)
                    if target is not None:
                        target["incomingEdges"].append(
                            {"sourceNodeId": node["id"], "sourceNodeOutputId": "branch",
                             "targetNodeInputId": str(len(target["incomingEdges"]))})
        self._place_leaves()

    def _location(self, op: Any) -> tuple[str, str]:
        """The op's location as text and the layer it names, once per distinct location (a
        HAL op's location fuses hundreds: printing it is the slow part)."""
        key = op.location.attr
        found = self._locations.get(key)
        if found is None:
            text = str(op.location)
            found = self._locations[key] = (text, layer_of(text))
        return found

    def _op(self, op: Any, layer: str, outer: str | None = None) -> dict:
        """``layer``: where the op goes; ``outer``: the module layer of the op whose region
        holds it (its body, in the same module, stays flat; ops of other modules get theirs)."""
        location, named = self._location(op)
        namespace = layer if named == outer else _join(layer, named)
        has_body = any(len(r.blocks) for r in op.regions) and (
            not op.name.startswith("linalg.") or op.name in SHOWN_BODIES)
        node = self._node(op.name, namespace)
        if has_body:  # the op is a layer: itself at the top, its regions inside
            node["namespace"] = _join(namespace, f"{op.name}_{node['id']}")
            node["config"] = {"pinToGroupTop": True}
        node["attrs"].append(_kv("kind", "op"))
        node["attrs"].append(_kv("location", location))
        attributes = op.attributes
        for i in range(len(attributes)):
            attribute = attributes[i]
            node["attrs"].append(_kv(attribute.name, attribute.attr))
        self._outputs(node, op.results)
        for i, value in enumerate(op.operands):
            source = self.sources.get(value)
            if source is not None:
                node["incomingEdges"].append({"sourceNodeId": source[0],
                                              "sourceNodeOutputId": source[1],
                                              "targetNodeInputId": str(i)})
        if len(op.operands) == 0 and not has_body and len(op.results):
            self.leaves.append(node)
        bad = _matches(op, location, self.failed) if self.failed else None
        if bad is not None:
            node["style"] = dict(ERROR_STYLE)
            node["attrs"].append(_kv("error", bad.message))
            self.found.add(bad)
        if has_body:
            inner = node["namespace"]
            regions = [r for r in op.regions if len(r.blocks)]
            for r, region in enumerate(regions):
                blocks = list(region.blocks)
                for b, block in enumerate(blocks):
                    sub = _join(inner, f"region{r}" if len(regions) > 1 else "",
                                f"^bb{b}" if len(blocks) > 1 else "")
                    for k, arg in enumerate(block.arguments):  # read from the op at the top
                        self.sources[arg] = (node["id"], f"region{r}.bb{b}.arg{k}")
                    for inner_op in block.operations:
                        self._op(inner_op.operation, sub, named)
        return node

    def _place_leaves(self) -> None:
        """Operand-less ops go to their first user's layer; edges to other layers go."""
        users: dict[str, list[dict]] = {}
        for node in self.nodes:
            for edge in node["incomingEdges"]:
                users.setdefault(edge["sourceNodeId"], []).append(node)
        for leaf in self.leaves:
            found = users.get(leaf["id"], [])
            if not found:
                continue
            leaf["namespace"] = found[0]["namespace"]
            for user in found:
                if user["namespace"] == leaf["namespace"]:
                    continue
                kept = []
                for edge in user["incomingEdges"]:
                    if edge["sourceNodeId"] == leaf["id"]:
                        user["attrs"].append(_kv(f"input {edge['targetNodeInputId']}",
                                                 _leaf_text(leaf)))
                    else:
                        kept.append(edge)
                user["incomingEdges"] = kept

    def graph(self) -> dict:
        return {"id": self.graph_id, "nodes": self.nodes}


def _leaf_text(leaf: dict) -> str:
    value = next((a["value"] for a in leaf["attrs"] if a["key"] == "value"), "")
    return f"{leaf['label']} {value}".strip()


def _functions(op: Any, prefix: str = ""):
    """(symbol path, op) of every function-like op under ``op``, outermost first."""
    for region in op.regions:
        for block in region.blocks:
            for child in block.operations:
                child = child.operation
                name = _symbol(child)
                path = _join(prefix, name or "")
                if _is_function(child):
                    if len(child.regions[0].blocks):
                        yield path, child
                elif len(child.regions):
                    yield from _functions(child, path)


def module_graphs(module: Any, label: str, failed: Iterable[FailedOp] = ()) -> dict:
    """A Model Explorer ``GraphCollection`` (as plain data) of an IREE-build module."""
    failed = tuple(failed)
    builders = [_GraphBuilder(func, path or func.name, failed)
                for path, func in _functions(module.operation)]
    found = {f for b in builders for f in b.found}
    lost = [f for f in failed if f not in found and f.op is not None and f.location is not None]
    if lost:  # a line this stage does not hold (iree-compile names its dumped files): by op alone
        again = tuple(f for f in failed if f not in lost) + tuple(
            FailedOp(f.op, None, f.message) for f in lost)
        builders = [_GraphBuilder(func, path or func.name, again)
                    for path, func in _functions(module.operation)]
    return {"label": label, "graphs": [b.graph() for b in builders]}


def parse_stage(text: str) -> Any:
    """A stage's MLIR text (any dialect from torch to vm) as a module of IREE's build."""
    from iree.compiler import ir

    context = ir.Context()
    context.allow_unregistered_dialects = True  # lowerkit's IRDL dialects print generically
    return ir.Module.parse(text, context)


def graph_path(mlir: Path) -> Path:
    """Where a stage's graph goes: ``NN-stage.graph.json`` beside ``NN-stage.mlir``."""
    return mlir.with_name(mlir.stem + ".graph.json")


def graph_ids(collection: dict) -> list[str]:
    """A collection's graph ids, the largest graph first (the one Model Explorer opens)."""
    return [g["id"] for g in sorted(collection["graphs"], key=lambda g: -len(g["nodes"]))]


def write_graph(mlir: Path, out: Path | None = None, *, failed: Iterable[FailedOp] = ()) -> dict:
    """Write the graph JSON of the stage in ``mlir`` (beside it unless ``out`` is given);
    return the collection written."""
    mlir = Path(mlir)
    out = Path(out) if out is not None else graph_path(mlir)
    module = parse_stage(mlir.read_text())
    collection = module_graphs(module, out.name[: -len(".graph.json")], failed)
    out.write_text(json.dumps(collection, separators=(",", ":")))
    return collection
