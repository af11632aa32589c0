"""`lowerkit run` and the pipeline scripts, as a user calls them from a shell."""

from __future__ import annotations

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
def wrong():
    # the compiled program is checked against a model that differs: --check must fail
    class M(torch.nn.Module):
        calls = 0
        def forward(self, x):
            M.calls += 1
            return x * M.calls
    return M(), (torch.ones(3),)
"""


def _lowerkit(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "lowerkit", *args], capture_output=True,
                          text=True, cwd=ROOT, timeout=300)


def test_run_check_prints_stage_table_and_max_error(tmp_path):
    f = tmp_path / "m.py"
    f.write_text(FACTORY)
    out = tmp_path / "m.lkz"
    proc = _lowerkit("run", f"{f}:good", "--target", "cpu", "--check", "-o", str(out))
    assert proc.returncode == 0, proc.stderr
    for stage in ("torch-import", "torch-backend-contract", "linalg-on-tensors", "iree-compile"):
        assert stage in proc.stdout
    assert "matches eager: max abs error" in proc.stdout
    assert out.exists()


# slow tier (20 s): a CLI child process; `lowerkit run --check` itself runs by default (above)
@pytest.mark.slow
def test_run_check_fails_on_mismatch(tmp_path):
    f = tmp_path / "m.py"
    f.write_text(FACTORY)
    proc = _lowerkit("run", f"{f}:wrong", "--check")
    assert proc.returncode == 1
    assert "mismatch against eager" in proc.stdout


def test_run_reports_bad_factory_without_traceback(tmp_path):
    proc = _lowerkit("run", f"{tmp_path}/absent.py:f")
    assert proc.returncode == 1
    assert "no such file" in proc.stderr and "Traceback" not in proc.stderr


# slow tier (17 s): a CLI child process
@pytest.mark.slow
def test_pipeline_file_runs_as_a_script(tmp_path):
    f = tmp_path / "m.py"
    f.write_text(FACTORY)
    proc = subprocess.run(
        [sys.executable, str(ROOT / "pipelines" / "torch_to_linalg.py"), f"{f}:good",
         "--until", "torch-backend-contract"],
        capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert "torch.aten.relu" in proc.stdout and "linalg" not in proc.stdout


def test_a_factory_in_a_packages_file_imports_its_siblings(tmp_path):
    """``FILE.py:FACTORY`` naming a module of a package (the real-shape set's file) loads it
    as that module, so its relative imports resolve; a file of its own loads alone."""
    from lowerkit.cli._factory import _package_module, load_case

    case = load_case(str(ROOT / "python/lowerkit/zoo/real_shapes.py") + ":sdpa_1500")
    assert case.name == "sdpa_1500" and len(case.args) == 3
    assert _package_module(ROOT / "python/lowerkit/zoo/real_shapes.py") == \
        "lowerkit.zoo.real_shapes"
    alone = tmp_path / "m.py"
    alone.write_text(FACTORY)
    assert _package_module(alone) is None and load_case(f"{alone}:good").name == "good"
    package = tmp_path / "pkg"  # a package that is not the one imported under its name
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "m.py").write_text(FACTORY)
    assert _package_module(package / "m.py") is None
