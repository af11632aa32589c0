"""How long a dumped stage takes to open as a graph in Model Explorer (`lowerkit view`).

    .venv/bin/python benchmarks/graph_view.py resnet50 --repeats 3 --json benchmarks/results/graph-view.json

Dumps the zoo model (``lowerkit.compile(..., dump_dir=...)``, which writes every stage's graph
JSON), starts Model Explorer with ``lowerkit.tools.view.start`` and opens, in headless Chromium
(Debian's ``/usr/bin/chromium`` driven by playwright), the stage whose largest graph has the
most nodes and the stage with the largest graph file, and as a baseline a graph of one node
(Model Explorer's own start in a new tab). Timed, per open, in a new tab of one browser (the
app's files cached, as after a user's first open): from ``page.goto`` of the stage's address
until Model Explorer shows the graph's info panel (op node count, layer count) with no
"Processing graph" message, plus two animation frames: the app started, the JSON fetched from
its server, parsed, processed, the root layer laid out and drawn. Also timed: the server's read
of the JSON alone (``/api/v1/read_text_file``), and the CPU time (user + system) that every
process below this one (Chromium's, Model Explorer's server) spent in the open: on a loaded
machine the wall time grows, the CPU time much less. ``--reuse`` opens an existing dump in
``--dump``.
Needs ``pip install 'lowerkit[view]' playwright`` and ``apt-get install chromium``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
import urllib.parse
import urllib.request
from pathlib import Path

from rich.console import Console
from rich.table import Table

import lowerkit
from lowerkit.tools import view
from lowerkit.tools.bench import run_metadata

CHROMIUM = "/usr/bin/chromium"
LOADED = ("document.body.innerText.includes('layer count') && "
          "!document.body.innerText.includes('Processing graph')")
TWO_FRAMES = "new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)))"


def stage_sizes(folder: Path) -> list[dict]:
    rows = []
    for graph in sorted(folder.glob("*.graph.json")):
        collection = json.loads(graph.read_text())
        sizes = [len(g["nodes"]) for g in collection["graphs"]]
        rows.append({"graph": graph.name, "bytes": graph.stat().st_size, "graphs": len(sizes),
                     "nodes": sum(sizes), "largest_graph_nodes": max(sizes, default=0)})
    return rows


def _children_cpu() -> float:
    """CPU seconds (user + system) of every process below this one, alive now."""
    import psutil  # Model Explorer's own dependency

    total = 0.0
    for child in psutil.Process().children(recursive=True):
        try:
            t = child.cpu_times()
        except psutil.Error:
            continue
        total += t.user + t.system
    return total


def open_seconds(context, url: str) -> tuple[float, float]:
    """(wall, CPU) seconds of one open in a new tab."""
    page = context.new_page()
    try:
        cpu = _children_cpu()
        start = time.perf_counter()
        page.goto(url)
        page.wait_for_function(LOADED, timeout=120_000, polling=20)
        page.evaluate(TWO_FRAMES)
        return time.perf_counter() - start, _children_cpu() - cpu
    finally:
        page.close()


def main(argv: list[str] | None = None) -> int:
    from playwright.sync_api import sync_playwright

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("model", nargs="?", default="resnet50", help="zoo model (default: resnet50)")
    p.add_argument("--repeats", type=int, default=3, help="opens of each stage")
    p.add_argument("--dump", type=Path, help="dump folder (default: a temporary one)")
    p.add_argument("--reuse", action="store_true", help="open the dump already in --dump")
    p.add_argument("--json", type=Path, help="store the run here")
    args = p.parse_args(argv)
    meta = run_metadata()
    folder = args.dump or Path(tempfile.mkdtemp(prefix=f"lowerkit-view-{args.model}-"))
    dump_seconds = None
    if not (args.reuse and (folder / "index.json").exists()):
        model, inputs = lowerkit.zoo.get(args.model).factory()[:2]
        start = time.perf_counter()
        lowerkit.compile(model, inputs, dump_dir=folder)
        dump_seconds = time.perf_counter() - start
    stages = stage_sizes(folder)
    by_graph = max(stages, key=lambda s: s["largest_graph_nodes"])
    by_bytes = max(stages, key=lambda s: s["bytes"])
    scratch = Path(tempfile.mkdtemp(prefix="lowerkit-view-baseline-"))
    one = scratch / "one-node.graph.json"
    one.write_text(json.dumps({"label": "one-node", "graphs": [{"id": "main", "nodes": [
        {"id": "0", "label": "op", "namespace": "", "subgraphIds": [], "attrs": [],
         "incomingEdges": [], "outputsMetadata": [], "inputsMetadata": []}]}]}))
    chosen = {"baseline: one node": {"graph": str(one), "bytes": one.stat().st_size, "graphs": 1,
                                     "nodes": 1, "largest_graph_nodes": 1},
              "largest graph": by_graph, "largest file": by_bytes}
    results = {}
    with view.start(folder) as viewer, sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        context = browser.new_context(viewport={"width": 1600, "height": 1000})
        try:
            open_seconds(context, viewer.stage_url(by_graph["graph"]))  # warm: server, app files
            for why, stage in chosen.items():
                read = []
                for _ in range(args.repeats):
                    q = urllib.parse.quote(str(folder / stage["graph"]))  # (absolute: kept)
                    t = time.perf_counter()
                    with urllib.request.urlopen(f"{viewer.url}/api/v1/read_text_file?path={q}") as r:
                        r.read()
                    read.append(time.perf_counter() - t)
                samples = [open_seconds(context, viewer.stage_url(stage["graph"]))
                           for _ in range(args.repeats)]
                wall = [w for w, _ in samples]
                cpu = [c for _, c in samples]
                results[why] = {**stage, "open_s": wall, "open_median_s": statistics.median(wall),
                                "open_cpu_s": cpu, "open_cpu_median_s": statistics.median(cpu),
                                "server_read_median_s": statistics.median(read)}
        finally:
            browser.close()
    data = {"meta": meta, "model": args.model, "dump_s": dump_seconds, "repeats": args.repeats,
            "stages": stages, "opened": results,
            "timed": "page.goto of the stage's Model Explorer address in a new tab (app files "
                     "cached) to its info panel shown with no 'Processing graph' message, plus "
                     "two animation frames; headless Chromium " + CHROMIUM}
    table = Table(title=f"{args.model}: stages opened in Model Explorer ({args.repeats} opens each)")
    for col in ("", "stage", "graphs", "nodes (largest graph)", "JSON", "server read s",
                "open s (median)", "CPU s"):
        table.add_column(col, justify="left" if col in ("", "stage") else "right")
    for why, r in results.items():
        table.add_row(why, Path(r["graph"]).name, str(r["graphs"]), f"{r['nodes']} ({r['largest_graph_nodes']})",
                      f"{r['bytes'] / 2**20:.1f} MiB", f"{r['server_read_median_s']:.2f}",
                      f"{r['open_median_s']:.2f}", f"{r['open_cpu_median_s']:.2f}")
    Console().print(table)
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(data, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
