"""Compile-time reporting (issue 7): `lowerkit run` says how long a compile really took, and
when its stage table is the one a cache entry carries. Timings: benchmarks/compile_time.py."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
FACTORY = """
import torch
def good():
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(6, 5), torch.nn.ReLU()).eval(), (torch.randn(2, 6),)
"""


@pytest.mark.slow  # 70 s: three `lowerkit run` processes
def test_run_says_when_the_table_comes_from_the_cache(tmp_path):
    f = tmp_path / "m.py"
    f.write_text(FACTORY)
    env = {**os.environ, "LOWERKIT_CACHE_DIR": str(tmp_path / "cache")}

    def run(*extra: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "lowerkit", "run", f"{f}:good", *extra],
                              capture_output=True, text=True, cwd=ROOT, timeout=300, env=env)

    first, second, forced = run(), run(), run("--no-cache")
    for proc in (first, second, forced):
        assert proc.returncode == 0, proc.stderr
        assert "iree-compile" in proc.stdout and "compiled in" in proc.stdout
    assert "cache hit" not in first.stdout
    assert "compile cache hit" in second.stdout
    assert "cache hit" not in forced.stdout
