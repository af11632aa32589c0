"""The dump's report: index data from entries, and the HTML page in a real (headless) browser."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections import Counter
from pathlib import Path

import pytest
import torch

import lowerkit
from lowerkit.stages.dump import DumpEntry
from lowerkit.stages.dump_index import build_index, render_html, write_report


def _entries(tmp_path: Path) -> list[DumpEntry]:
    a = tmp_path / "00-a.mlir"
    b = tmp_path / "01-b.mlir"
    a.write_text("x" * 10)
    b.write_text("y" * 20)
    return [
        DumpEntry(0, "a", a, "stage", "torch-mlir", 0.002,
                  Counter({"torch.aten.mm": 2, "func.func": 1, "func.return": 1})),
        DumpEntry(1, "b", b, "phase", "iree", 0.004,
                  Counter({"linalg.matmul": 2, "func.func": 1, "func.return": 1,
                           "flow.executable.export": 3})),
    ]


def test_index_diff_counts_and_html(tmp_path):
    index = build_index(_entries(tmp_path), title="m", target="cpu")
    a, b = index["stages"]
    assert a["dialects"] == {"torch": 2, "func": 2} and a["functions"] == 1 and a["size"] == 10
    assert b["appeared"] == ["flow.executable.export", "linalg.matmul"]
    assert b["disappeared"] == ["torch.aten.mm"]
    assert b["dispatches"] == 3 and index["dispatches"] == 3
    assert index["total_seconds"] == pytest.approx(0.006)
    page = render_html(index)
    assert "http" not in page.replace("http-equiv", "")  # nothing loaded from the network
    assert page.count('class="bar dialect"') == 5 and "href='01-b.mlir'" in page
    write_report(tmp_path, _entries(tmp_path), title="m", error="stage 'b' failed")
    saved = json.loads((tmp_path / "index.json").read_text())
    assert saved["ok"] is False and "stage &#x27;b&#x27; failed" in (tmp_path / "index.html").read_text()


def _chromium() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser")


@pytest.mark.browser
def test_report_renders_in_headless_chromium(tmp_path):
    browser = _chromium()
    if browser is None:
        pytest.skip("needs Debian's chromium: apt-get install -y chromium")
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.ReLU(), torch.nn.Linear(8, 2))
    dump = tmp_path / "dump"
    lowerkit.compile(model, (torch.randn(2, 8),), dump_dir=dump)
    page = (dump / "index.html").as_uri()
    flags = [browser, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
             "--disable-background-networking", "--disable-component-update", "--disable-sync",
             f"--user-data-dir={tmp_path / 'profile'}"]
    shot = Path(os.environ.get("LOWERKIT_SCREENSHOT") or tmp_path / "report.png")
    subprocess.run([*flags, f"--screenshot={shot}", "--window-size=1280,2400", page],
                   check=True, capture_output=True, timeout=120)
    assert shot.exists() and shot.stat().st_size > 20_000  # a page drawn, not a blank one
    dom = subprocess.run([*flags, "--dump-dom", page], check=True, capture_output=True,
                         text=True, timeout=120).stdout
    for text in ("torch-backend-contract", "linalg-on-tensors", "iree-dispatch-creation",
                 "iree-vm", "iree-executables", "Time per stage", "dispatches"):
        assert text in dom, text
    assert dom.count('class="bar dialect"') >= 10 and 'class="chip add"' in dom
