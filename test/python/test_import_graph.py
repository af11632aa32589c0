"""lowerkit's modules import one another without a cycle, and the MLIR-only tools stay light.

The graph is read from the source (every ``import``, at the top or inside a function, except
those under ``if TYPE_CHECKING:``), so a cycle hidden in a function-local import counts too.
The shipped pipelines (``pipelines/``) are part of the package as ``lowerkit.pipelines``.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SOURCES = {"lowerkit": ROOT / "python" / "lowerkit", "lowerkit.pipelines": ROOT / "pipelines"}


def modules(sources: dict[str, Path]) -> dict[str, tuple[Path, bool]]:
    """Module name -> (file, whether it is a package's ``__init__``)."""
    found: dict[str, tuple[Path, bool]] = {}
    for prefix, root in sources.items():
        for path in sorted(root.rglob("*.py")):
            parts = list(path.relative_to(root).with_suffix("").parts)
            is_init = parts[-1] == "__init__"
            if is_init:
                parts.pop()
            name = ".".join([prefix, *parts])
            found.setdefault(name, (path, is_init))
    return found


def _under_type_checking(tree: ast.AST) -> set[int]:
    skip: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            for inner in node.body:
                skip |= {id(n) for n in ast.walk(inner)}
    return skip


def import_graph(sources: dict[str, Path]) -> dict[str, set[str]]:
    """Each module's imports of other lowerkit modules."""
    mods = modules(sources)
    graph: dict[str, set[str]] = {name: set() for name in mods}
    for name, (path, is_init) in mods.items():
        tree = ast.parse(path.read_text(), str(path))
        skip = _under_type_checking(tree)
        package = name if is_init else name.rpartition(".")[0]
        for node in ast.walk(tree):
            if id(node) in skip:
                continue
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    anchor = package.split(".")
                    anchor = anchor[:len(anchor) - node.level + 1]
                    base = ".".join([*anchor, base] if base else anchor)
                # `from pkg import sub` imports the module pkg.sub where there is one
                targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in mods else base
                           for a in node.names]
            for target in targets:
                if target in mods and target != name:
                    graph[name].add(target)
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                out.append(sorted(component))

    sys.setrecursionlimit(max(sys.getrecursionlimit(), 10_000))
    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def test_no_import_cycle_between_lowerkits_modules():
    graph = import_graph(SOURCES)
    assert len(graph) > 60 and graph["lowerkit.api"], "the graph reads the package"
    assert cycles(graph) == []


def test_a_planted_cycle_is_found(tmp_path):
    """The check itself: a cycle through a function-local import is caught, one under
    TYPE_CHECKING is not a cycle."""
    pkg = tmp_path / "lowerkit"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "sub" / "__init__.py").write_text("")
    (pkg / "a.py").write_text("from .sub import b\n")
    (pkg / "sub" / "b.py").write_text("def f():\n    from ..c import g\n")
    (pkg / "c.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
                              "    from . import a\n")
    assert cycles(import_graph({"lowerkit": pkg})) == []
    (pkg / "c.py").write_text("def g():\n    from lowerkit import a\n")
    assert cycles(import_graph({"lowerkit": pkg})) == [["lowerkit.a", "lowerkit.c", "lowerkit.sub.b"]]


@pytest.mark.parametrize("code", [
    "from lowerkit.tools import opt; opt.main(['--list'])",
    "from lowerkit.tools import opt; opt.main(['--pipeline=stage-kinds', INPUT])",
    "import lowerkit; lowerkit.registry.pipelines.get('torch-to-linalg'); lowerkit.Pipeline",
])
def test_mlir_only_work_does_not_import_torch(code, tmp_path):
    """lowerkit-opt reads MLIR and runs passes: importing torch (seconds a call) would
    dominate every lit test."""
    mlir = tmp_path / "in.mlir"
    mlir.write_text("func.func @f(%a: f32) -> f32 {\n  %0 = arith.negf %a : f32\n"
                    "  %1 = arith.negf %0 : f32\n  return %1 : f32\n}\n")
    probe = (f"import sys\nINPUT = {str(mlir)!r}\n{code}\n"
             "heavy = sorted(m for m in ('torch', 'torch.fx') if m in sys.modules)\n"
             "assert not heavy, f'imported {heavy}'\n")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
