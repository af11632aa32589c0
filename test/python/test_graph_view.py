"""``lowerkit view`` in a real browser: ResNet-18's linalg and flow stages open in Model
Explorer (headless Chromium), folded by the model's modules. In the slow tier; it skips,
saying why, without Debian's chromium, playwright or the extra ``lowerkit[view]``.

    LOWERKIT_SLOW=1 LOWERKIT_SCREENSHOT_DIR=docs/images pytest test/python/test_graph_view.py
"""

from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path
from urllib.parse import quote, unquote

import pytest

import lowerkit

pytestmark = [pytest.mark.browser, pytest.mark.slow]

LOADED = ("document.body.innerText.includes('layer count') && "
          "!document.body.innerText.includes('Processing graph')")


def _with_open_layers(url: str, layers: list[str]) -> str:
    """The same address with these layers (namespaces) opened."""
    base, data = url.split("?data=", 1)
    state = json.loads(unquote(data))
    state["uiState"] = {"paneStates": [{
        "deepestExpandedGroupNodeIds": [f"{name}___group___" for name in layers],
        "selectedNodeId": "", "selectedGraphId": "main", "selectedCollectionLabel": "",
        "widthFraction": 1}]}
    return f"{base}?data={quote(json.dumps(state))}"


def test_resnet18_linalg_and_flow_graphs_fold_by_module(tmp_path):
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        pytest.skip("needs Debian's chromium: apt-get install -y chromium")
    sync_api = pytest.importorskip("playwright.sync_api", reason="needs pip install playwright")
    from lowerkit.tools import view

    if not view.available():
        pytest.skip(view.INSTALL_HINT)
    shots = Path(os.environ.get("LOWERKIT_SCREENSHOT_DIR") or tmp_path)
    shots.mkdir(parents=True, exist_ok=True)
    model, args = lowerkit.zoo.get("resnet18").factory()[:2]
    dump = tmp_path / "dump"
    lowerkit.compile(model, args, dump_dir=dump)

    with view.start(dump) as viewer, sync_api.sync_playwright() as pw:
        assert viewer.url.startswith("http://127.0.0.1:")
        index = (dump / "index.html").read_text()
        assert f"{viewer.url}/?data=" in index and "compare with" in index
        browser = pw.chromium.launch(executable_path=chromium, args=["--no-sandbox"])
        page = browser.new_page(viewport={"width": 1600, "height": 1000})
        for stage, layers in (("linalg-on-tensors", ["blocks", "blocks/0", "blocks/1"]),
                              ("iree-flow", ["blocks", "blocks/0", "blocks/1"])):
            graph = next(dump.glob(f"*-{stage}.graph.json"))
            main = max(json.loads(graph.read_text())["graphs"], key=lambda g: len(g["nodes"]))
            page.goto(_with_open_layers(viewer.stage_url(graph.name), layers))
            page.wait_for_function(LOADED, timeout=120_000)
            time.sleep(1.0)  # the opened layers' layout
            page.screenshot(path=str(shots / f"resnet18-{stage}.png"))
            text = page.evaluate("document.body.innerText")
            assert f"{len(main['nodes'])} nodes" in text  # the stage's main function, whole
            layers_shown = int(text.split("layer count")[1].split()[0])
            modules = {n["namespace"].split("/")[0] for n in main["nodes"]} - {""}
            assert {"stem", "blocks", "head"} <= modules and layers_shown >= 10
            # layers are the model's modules: a search finds the block's conv1 as a layer
            page.fill("input[placeholder*='Search']", "blocks/0/conv1")
            page.keyboard.press("Enter")
            page.wait_for_function("document.body.innerText.includes('<root> / blocks / 0 / conv1')",
                                   timeout=30_000)
            assert (shots / f"resnet18-{stage}.png").stat().st_size > 30_000
        # two panes: a stage beside the one before it
        flow = next(dump.glob("*-iree-flow.graph.json"))
        before = sorted(dump.glob("*.graph.json"))[sorted(dump.glob("*.graph.json")).index(flow) - 1]
        page.goto(viewer.stage_url(before.name, flow.name))
        page.wait_for_function(LOADED, timeout=120_000)
        text = page.evaluate("document.body.innerText")
        assert flow.stem.removesuffix(".graph") in text and before.stem.removesuffix(".graph") in text
        browser.close()
    assert viewer.process.poll() is not None  # the server stops with the viewer
