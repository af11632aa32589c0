"""Stage graphs for Model Explorer (`lowerkit.stages.dump_graph`): the JSON format, node
counts against op counts, layers named after the model's modules, no browser."""

from __future__ import annotations

import dataclasses
import importlib.util
import json
from collections import Counter
from pathlib import Path
from urllib.parse import unquote

import pytest
import torch

import lowerkit
from lowerkit.stages import dump_graph
from lowerkit.stages.dump_index import graph_url
from lowerkit.stages.dump_graph import FailedOp, layer_of, location_names, module_graphs, parse_stage

ZOO_MODELS = ("simple_cnn", "mlp")  # the zoo's two smallest models with modules (~10 s both)

# The format, as Model Explorer's graph_builder defines it (checked against the real classes
# where `model_explorer` is installed; this mirror only where it is not).
NODE_KEYS = {"id", "label", "namespace", "subgraphIds", "attrs", "incomingEdges",
             "outputsMetadata", "inputsMetadata", "style", "config"}


def _check_with_graph_builder(collection: dict) -> None:
    """Rebuild the collection from graph_builder's dataclasses: an unknown or missing field
    is a TypeError there, as it is in Model Explorer's own JSON reader. Without Model Explorer
    (the extra lowerkit[view]) the checks of `check_format` stand alone."""
    if importlib.util.find_spec("model_explorer") is None:
        return
    from model_explorer import graph_builder as gb
    kv = lambda items: [gb.KeyValue(**x) for x in items]  # noqa: E731
    graphs = []
    for g in collection["graphs"]:
        nodes = []
        for n in g["nodes"]:
            n = dict(n)
            n["attrs"] = kv(n["attrs"])
            n["incomingEdges"] = [gb.IncomingEdge(**e) for e in n["incomingEdges"]]
            n["outputsMetadata"] = [gb.MetadataItem(m["id"], kv(m["attrs"])) for m in n["outputsMetadata"]]
            n["inputsMetadata"] = [gb.MetadataItem(m["id"], kv(m["attrs"])) for m in n["inputsMetadata"]]
            if "style" in n:
                n["style"] = gb.GraphNodeStyle(**n["style"])
            if "config" in n:
                n["config"] = gb.GraphNodeConfig(**n["config"])
            nodes.append(gb.GraphNode(**n))
        graphs.append(gb.Graph(id=g["id"], nodes=nodes))
    rebuilt = dataclasses.asdict(gb.GraphCollection(label=collection["label"], graphs=graphs))
    assert rebuilt["label"] == collection["label"] and len(rebuilt["graphs"]) == len(graphs)


def check_format(collection: dict) -> None:
    """One GraphCollection: unique graph ids, unique node ids, edges between existing nodes
    and outputs, string attributes, namespaces without empty parts."""
    assert set(collection) == {"label", "graphs"} and isinstance(collection["label"], str)
    ids = [g["id"] for g in collection["graphs"]]
    assert len(ids) == len(set(ids)) and all(ids)
    for g in collection["graphs"]:
        assert set(g) == {"id", "nodes"}
        by_id = {n["id"]: n for n in g["nodes"]}
        assert len(by_id) == len(g["nodes"])
        for n in g["nodes"]:
            assert NODE_KEYS >= set(n) >= NODE_KEYS - {"style", "config"}
            assert isinstance(n["label"], str) and n["label"]
            assert "" not in n["namespace"].split("/") or n["namespace"] == ""
            assert all(isinstance(a["value"], str) for a in n["attrs"])
            for e in n["incomingEdges"]:
                assert e["sourceNodeId"] in by_id and e["sourceNodeId"] != n["id"]
    _check_with_graph_builder(collection)


def ops_in_functions(path: Path) -> Counter:
    """The ops inside function bodies (counted here on their own, for the graphs' nodes),
    less the bodies of linalg's named ops (not in the text either)."""
    counts: Counter = Counter()

    def walk(op, inside):
        if op.name.startswith("linalg.") and op.name not in ("linalg.generic", "linalg.map", "linalg.reduce"):
            return
        for region in op.regions:
            for block in region.blocks:
                for child in block.operations:
                    child = child.operation
                    if inside:
                        counts[child.name] += 1
                    is_function = "function_type" in child.attributes and "sym_name" in child.attributes
                    walk(child, inside or is_function)

    walk(parse_stage(path.read_text()).operation, False)
    return counts


@pytest.fixture(scope="module")
def zoo_dumps(tmp_path_factory):
    out = {}
    for name in ZOO_MODELS:
        model, args = lowerkit.zoo.get(name).factory()[:2]
        folder = tmp_path_factory.mktemp(name)
        lowerkit.compile(model, args, dump_dir=folder)
        out[name] = folder
    return out


@pytest.mark.slow  # with the next test, 57 s: dumps of two zoo models
def test_every_stage_of_two_zoo_models_is_a_graph_in_model_explorers_format(zoo_dumps):
    for name, folder in zoo_dumps.items():
        index = json.loads((folder / "index.json").read_text())
        stages = [s for s in index["stages"] if s["file"].endswith(".mlir")]
        assert len(stages) >= 20, name  # torch, linalg, every IREE phase to vm
        checked = set()
        for s in stages:
            graph = folder / s["graph"]
            collection = json.loads(graph.read_text())
            text = (folder / s["file"]).read_text()
            if text in checked:  # a stage that changed nothing: the same graph, renamed
                continue
            checked.add(text)
            check_format(collection)
            assert collection["label"] == s["file"][: -len(".mlir")]
            assert s["graph_ids"] == dump_graph.graph_ids(collection) and s["graph_ids"], s["file"]
            # one node per op inside a function, and no op left out or drawn twice
            nodes = Counter(n["label"] for g in collection["graphs"] for n in g["nodes"]
                            if {"key": "kind", "value": "op"} in n["attrs"])
            assert nodes == ops_in_functions(folder / s["file"]), s["file"]
            # ... which are the stage's ops less the functions and what lies outside them
            assert all(nodes[op] <= n for op, n in s["ops"].items()), s["file"]
            # (a phase's ops are counted on its text, where stream's terminator is implied)
            assert not set(nodes) - set(s["ops"]) - {"stream.yield"}, s["file"]
        kinds = {g["id"] for s in stages if "vm" in s["name"]
                 for g in json.loads((folder / s["graph"]).read_text())["graphs"]}
        assert kinds, "the vm stage has its functions as graphs"
        sources = json.loads(next(folder.glob("*-iree-executable-sources.graph.json")).read_text())
        assert any("/" in g["id"] for g in sources["graphs"]), "dispatch functions inside executables"


@pytest.mark.slow
def test_layer_names_survive_to_the_flow_stage(zoo_dumps):
    """Ops fold by the model's modules from torch to flow: most dispatches sit in a layer named
    after a module path of the model."""
    for name, folder in zoo_dumps.items():
        model, _ = lowerkit.zoo.get(name).factory()[:2]
        paths = {n.replace(".", "/") for n, _ in model.named_modules() if n}
        for stage in ("torch-import", "linalg-on-tensors", "iree-flow"):
            collection = json.loads(next(folder.glob(f"*-{stage}.graph.json")).read_text())
            kind = {"iree-flow": "flow.dispatch"}.get(stage)
            main = max(collection["graphs"], key=lambda g: sum(
                n["label"] == kind if kind else len(n["label"]) > 0 for n in g["nodes"]))
            ops = [n for n in main["nodes"] if {"key": "kind", "value": "op"} in n["attrs"]
                   and (kind is None or n["label"] == kind)]
            named = [n for n in ops if n["namespace"].split("/linalg.")[0] in paths]
            # 0.55: mlp's softmax sits in no module (29 of its 71 linalg ops); its weights,
            # once 6 named constants, are IREE parameters now (42/71 named; inline 48/77)
            assert len(named) >= 0.55 * len(ops) and ops, (name, stage, len(named), len(ops))


def test_location_names_take_the_callee_and_fused_parts():
    callsite = 'loc(callsite("blocks/2/conv1/convolution_1"("/m.py":3:0) at "stem/0/conv"("/m.py":1:0)))'
    assert location_names(callsite) == ["blocks/2/conv1/convolution_1"]
    assert layer_of(callsite) == "blocks/2/conv1"
    fused = 'loc(fused<{k = "v"}>["blocks/0/conv1/conv"("/a.py":1:0), "blocks/0/bn1/add"("/a.py":2:0 to 2:9)])'
    assert layer_of(fused) == "blocks/0"
    assert layer_of('loc("/a.py":1:0)') == "" and layer_of("loc(unknown)") == ""
    assert layer_of('loc("relu_3"("/a.py":1:0))') == ""  # an op of the top-level forward


MULTI_BLOCK = """
func.func @choose(%a: tensor<4xf32>, %c: i1) -> tensor<4xf32> {
  %cst = arith.constant 1.0 : f32
  %e = tensor.empty() : tensor<4xf32>
  %m = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>],
       iterator_types = ["parallel"]} ins(%a : tensor<4xf32>) outs(%e : tensor<4xf32>) {
  ^bb0(%x: f32, %o: f32):
    %y = arith.mulf %x, %cst : f32 loc("a/mul_1"("/m.py":5:0))
    linalg.yield %y : f32 loc("a/mul_1"("/m.py":5:0))
  } -> tensor<4xf32> loc("a/mul_1"("/m.py":5:0))
  cf.cond_br %c, ^bb1(%m : tensor<4xf32>), ^bb2 loc("b/c/neg_2"("/m.py":6:0))
^bb1(%r: tensor<4xf32>):
  %n = arith.negf %cst : f32 loc("b/c/neg_2"("/m.py":6:0))
  return %r : tensor<4xf32>
^bb2:
  return %a : tensor<4xf32>
}
util.func public @other(%x: i32) -> i32 {
  util.return %x : i32
}
"""


def test_regions_blocks_and_constants():
    collection = module_graphs(parse_stage(MULTI_BLOCK), "t")
    check_format(collection)
    graphs = {g["id"]: g for g in collection["graphs"]}
    assert set(graphs) == {"choose", "other"}  # func.func and util.func
    nodes = graphs["choose"]["nodes"]
    by_label = {}
    for n in nodes:
        by_label.setdefault(n["label"], []).append(n)
    # the generic is a layer of its own, its body inside, the op pinned at its top
    generic = by_label["linalg.generic"][0]
    assert generic["namespace"].startswith("^bb0/a/linalg.generic_") and generic["config"]["pinToGroupTop"]
    assert by_label["arith.mulf"][0]["namespace"] == generic["namespace"]
    # one layer per block; branches point at the blocks they jump to
    bb1, bb2 = by_label["^bb1"][0], by_label["^bb2"][0]
    branch = by_label["cf.cond_br"][0]
    assert branch["namespace"] == "^bb0/b/c" and by_label["arith.negf"][0]["namespace"] == "^bb1/b/c"
    assert [e["sourceNodeId"] for e in bb1["incomingEdges"]] == [branch["id"]]
    assert [e["sourceNodeId"] for e in bb2["incomingEdges"]] == [branch["id"]]
    # the constant sits with its first user (the multiply in the generic's layer); its edge
    # to a user in another layer (the negation in ^bb1) is left out and named on the user
    cst = by_label["arith.constant"][0]
    assert cst["namespace"] == generic["namespace"]
    neg = by_label["arith.negf"][0]
    assert not neg["incomingEdges"] and any(a["key"] == "input 0" and "arith.constant" in a["value"]
                                            for a in neg["attrs"])
    assert by_label["tensor.empty"][0]["namespace"] == generic["namespace"]


def test_failed_ops_are_marked():
    failed = [FailedOp("arith.negf", "/m.py:6", "cannot negate")]
    collection = module_graphs(parse_stage(MULTI_BLOCK), "t", failed)
    marked = [n for g in collection["graphs"] for n in g["nodes"] if "style" in n]
    assert [n["label"] for n in marked] == ["arith.negf"]
    assert {"key": "error", "value": "cannot negate"} in marked[0]["attrs"]
    def marked_by(*failed):
        graphs = module_graphs(parse_stage(MULTI_BLOCK), "t", failed)["graphs"]
        return sorted(n["label"] for g in graphs for n in g["nodes"] if "style" in n)

    # the op at that line only, not every op of the line nor every op of the name elsewhere
    assert marked_by(FailedOp("arith.mulf", "/m.py:5", "x")) == ["arith.mulf"]
    # a line the stage does not hold (iree-compile's own files): every op of the name
    assert marked_by(FailedOp("arith.negf", "/dumped/dispatch.mlir:2", "x")) == ["arith.negf"]
    assert marked_by(FailedOp("math.erfc", "/m.py:5", "x")) == []


class _Digamma(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(4, 4)

    def forward(self, x):
        return torch.digamma(self.lin(x))  # LINE digamma


def test_a_failed_stage_has_its_input_drawn_with_the_failing_op_marked(tmp_path):
    torch.manual_seed(0)
    with pytest.raises(lowerkit.StageError):
        lowerkit.compile(_Digamma(), (torch.rand(2, 4),), dump_dir=tmp_path)
    graph = next(tmp_path.glob("*-torch-backend-contract.error.graph.json"))
    collection = json.loads(graph.read_text())
    check_format(collection)
    marked = [n for g in collection["graphs"] for n in g["nodes"] if "style" in n]
    assert [n["label"] for n in marked] == ["torch.operator"]
    assert any(a["key"] == "name" and "digamma" in a["value"] for a in marked[0]["attrs"])
    assert any(a["key"] == "error" and "legalize" in a["value"] for a in marked[0]["attrs"])
    assert marked[0]["namespace"] == ""  # the top-level forward's op; the Linear's are in "lin"
    assert {n["namespace"] for g in collection["graphs"] for n in g["nodes"]} >= {"lin"}
    index = json.loads((tmp_path / "index.json").read_text())
    assert index["stages"][-1]["graph"] == graph.name
    page = (tmp_path / "index.html").read_text()
    assert page.count("class='graph'") == sum(1 for s in index["stages"] if s["graph"])


def test_compare_link_opens_each_stage_in_its_own_pane():
    url = graph_url("http://127.0.0.1:8080", ("/d/15-a.graph.json", ["main"]),
                    ("/d/16-b.graph.json", ["main", "other"]))
    data = json.loads(unquote(url.split("?data=", 1)[1]))
    assert [m["url"] for m in data["models"]] == ["/d/15-a.graph.json", "/d/16-b.graph.json"]
    panes = data["uiState"]["paneStates"]
    assert [(p["selectedCollectionLabel"], p["selectedGraphId"]) for p in panes] == [
        ("15-a", "main"), ("16-b", "main (2)")]  # Model Explorer renames the second "main"
    one = json.loads(unquote(graph_url("http://h:1", ("/d/x.graph.json", ["f"])).split("?data=")[1]))
    assert one == {"models": [{"url": "/d/x.graph.json"}]}


def test_view_without_model_explorer_says_what_to_install(tmp_path, monkeypatch, capsys):
    from lowerkit.cli import main as cli_main
    from lowerkit.tools import view

    (tmp_path / "01-s.mlir").write_text("func.func @f() { return }\n")
    monkeypatch.setattr(view, "available", lambda: False)

    def never(*a, **k):
        raise AssertionError("Model Explorer must not be started")

    monkeypatch.setattr(view.subprocess, "Popen", never)
    assert cli_main(["view", str(tmp_path)]) == 1
    err = capsys.readouterr().err
    assert "pip install 'lowerkit[view]'" in err
    assert cli_main(["view", str(tmp_path / "nowhere")]) == 1
    assert "not a folder" in capsys.readouterr().err


def test_ops_iree_compile_rejects_are_marked_on_its_input(tmp_path):
    """iree-compile's diagnostics name lines of its dumped executables, not the stage's: the
    ops are then found by name."""
    from test_failures import TwoErf, _use_erfc

    pipe = lowerkit.Pipeline("erfc-for-iree", [lowerkit.resolve_pipeline(None),
                                               lowerkit.FunctionStage("use-erfc", _use_erfc)])
    with pytest.raises(lowerkit.StageError):
        lowerkit.compile(TwoErf(), (torch.rand(4, 4),), pipeline=pipe, dump_dir=tmp_path)
    graph = json.loads(next(tmp_path.glob("*-iree-compile.error.graph.json")).read_text())
    marked = [n["label"] for g in graph["graphs"] for n in g["nodes"] if "style" in n]
    assert marked == ["math.erfc", "math.erfc"]
