"""What a non-editable install gets: every folder of the package, the shipped pipelines and
the IRDL dialects (the wheel itself is built and run by scripts/check-wheel)."""

from __future__ import annotations

import shutil
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def packaging_problems(root: Path) -> list[str]:
    """What pyproject.toml leaves out of the wheel, read against the source tree."""
    setup = tomllib.loads((root / "pyproject.toml").read_text())["tool"]["setuptools"]
    listed = set(setup["packages"])
    package_dir = setup["package-dir"]
    found = {"lowerkit.pipelines"} if (root / package_dir["lowerkit.pipelines"]).is_dir() else set()
    base = root / package_dir[""]
    for init in (base / "lowerkit").rglob("__init__.py"):
        found.add(".".join(init.parent.relative_to(base).parts))
    problems = [f"package {p} is not in pyproject's packages" for p in sorted(found - listed)]
    problems += [f"pyproject lists {p}, which has no __init__.py" for p in sorted(listed - found)]
    data = setup.get("package-data", {}).get("lowerkit.dialects", [])
    dialects = sorted((root / "dialects").glob("*.mlir"))
    shipped = {p.name for pattern in data for p in (base / "lowerkit" / "dialects").glob(pattern)}
    problems += [f"dialect {d.name} is not shipped as package data" for d in dialects
                 if d.name not in shipped]
    return problems


def test_pyproject_ships_every_package_and_dialect():
    assert packaging_problems(ROOT) == []


def test_a_package_left_out_is_found(tmp_path):
    """Planted faults: a new subpackage missing from the list, and a dialect outside the
    package data."""
    copy = tmp_path / "repo"
    shutil.copytree(ROOT / "python", copy / "python", symlinks=True,
                    ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
    shutil.copytree(ROOT / "pipelines", copy / "pipelines")
    shutil.copytree(ROOT / "dialects", copy / "dialects")
    shutil.copy(ROOT / "pyproject.toml", copy / "pyproject.toml")
    assert packaging_problems(copy) == []
    (copy / "python" / "lowerkit" / "newpart").mkdir()
    (copy / "python" / "lowerkit" / "newpart" / "__init__.py").write_text("")
    text = (copy / "pyproject.toml").read_text()
    (copy / "pyproject.toml").write_text(text.replace('"definitions/*.mlir"', '"definitions/f*.txt"'))
    assert packaging_problems(copy) == [
        "package lowerkit.newpart is not in pyproject's packages",
        "dialect fused.mlir is not shipped as package data",
    ]
