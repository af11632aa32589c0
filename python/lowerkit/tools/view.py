"""``lowerkit view DUMP_DIR``: a dump's stage graphs in Google's Model Explorer.

Model Explorer (pip ``ai-edge-model-explorer``, the extra ``lowerkit[view]``) runs as a child
process serving on 127.0.0.1: its Flask server and libraries never share a process with
torch or IREE, and lowerkit never imports it. The dump's ``index.html`` is written again with
links for this server: each stage's graph, and two panes comparing it with the stage before.
"""

from __future__ import annotations

import importlib.util
import json
import os
import socket
import subprocess
import sys
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from ..errors import LowerkitError
from ..stages import dump_graph, dump_index

HOST = dump_index.VIEW_HOST
DEFAULT_PORT = dump_index.VIEW_PORT
INSTALL_HINT = ("Model Explorer is not installed: pip install 'lowerkit[view]' "
                "(or pip install ai-edge-model-explorer)")


def available() -> bool:
    """Whether Model Explorer can be run (found, not imported)."""
    return importlib.util.find_spec("model_explorer") is not None


def ensure_graphs(directory: Path) -> list[Path]:
    """The dump's stage graphs, written now for any ``.mlir`` that lacks one (a dump made
    with ``graphs=False`` or by an older lowerkit)."""
    out = []
    for mlir in sorted(directory.glob("*.mlir")):
        graph = dump_graph.graph_path(mlir)
        if not graph.exists():
            dump_graph.write_graph(mlir)
        out.append(graph)
    return out


def _free_port(start: int) -> int:
    for port in range(start, start + 100):
        with socket.socket() as s:
            try:
                s.bind((HOST, port))
            except OSError:
                continue
            return port
    raise LowerkitError(f"no free port on {HOST} from {start} to {start + 99}")


@dataclass
class Viewer:
    """A running Model Explorer server for one dump (stop it with `stop`)."""

    directory: Path
    url: str
    process: subprocess.Popen
    log: Path

    def stage_url(self, *graphs: str | os.PathLike) -> str:
        """The address that opens these graph files of the dump (two: side by side)."""
        panes = []
        for g in graphs:
            path = self.directory / g
            panes.append((path, dump_graph.graph_ids(json.loads(path.read_text()))))
        return dump_index.graph_url(self.url, *panes)

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()

    def __enter__(self) -> "Viewer":
        return self

    def __exit__(self, *exc) -> None:
        self.stop()


def start(directory: str | os.PathLike, port: int | None = None, *,
          timeout: float = 120.0) -> Viewer:
    """Start Model Explorer for ``directory`` (a dump) and write its index with links to it."""
    directory = Path(directory).resolve()
    if not directory.is_dir():
        raise LowerkitError(f"lowerkit view: {directory} is not a folder (give a dump's folder)")
    if not list(directory.glob("*.mlir")):
        raise LowerkitError(f"lowerkit view: {directory} holds no stage (.mlir); make one with "
                            "`lowerkit dump FILE.py:FACTORY --out DIR`")
    if not available():
        raise LowerkitError(INSTALL_HINT)
    ensure_graphs(directory)
    port = _free_port(port or DEFAULT_PORT)
    url = f"http://{HOST}:{port}"
    log = directory / "model-explorer.log"
    with open(log, "ab") as sink:
        process = subprocess.Popen(
            [sys.executable, "-m", "model_explorer", "--host", HOST, "--port", str(port),
             "--no_open_in_browser"], stdout=sink, stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL)
    viewer = Viewer(directory, url, process, log)
    deadline = time.monotonic() + timeout
    while True:
        if process.poll() is not None:
            raise LowerkitError(f"Model Explorer exited ({process.returncode}) before serving; "
                                f"its output is in {log}")
        try:
            with urllib.request.urlopen(url + "/", timeout=2):
                break
        except OSError:
            if time.monotonic() > deadline:
                viewer.stop()
                raise LowerkitError(f"Model Explorer did not answer on {url} within "
                                    f"{timeout:.0f} s; its output is in {log}") from None
            time.sleep(0.25)
    index = directory / "index.json"
    if index.exists():
        data = json.loads(index.read_text())
        for row in data["stages"]:  # a dump from before graphs: the ones written just now
            graph = dump_graph.graph_path(directory / row["file"])
            if row["file"].endswith(".mlir") and not row.get("graph") and graph.exists():
                row["graph"] = graph.name
                row["graph_ids"] = dump_graph.graph_ids(json.loads(graph.read_text()))
        (directory / "index.html").write_text(dump_index.render_html(
            data, viewer=url, folder=directory))
    return viewer
