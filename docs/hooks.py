"""MkDocs hook: the pages that describe code are written from the code at build time.

A page holding ``<!-- generated:NAME -->`` gets that marker replaced by what ``GENERATORS[NAME]``
returns: the CLI's help from its argparse parsers, the registry's passes and pipelines, each
pass's reason from its module docstring. Generated at build, they cannot go stale the way a
copied list would.
"""

from __future__ import annotations

import argparse
import ast
import importlib
import os
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "python" / "lowerkit"
MARKER = re.compile(r"<!-- generated:([\w-]+) -->")


def _help(parser: argparse.ArgumentParser) -> str:
    return "```text\n" + parser.format_help().rstrip() + "\n```\n"


def cli() -> str:
    """Each ``lowerkit`` subcommand's help, built from the parser the command itself builds."""
    os.environ["COLUMNS"] = "100"  # argparse wraps to the terminal: fix it, for a stable page
    from lowerkit import cli as lowerkit_cli
    from lowerkit.tools import opt

    out = ["## `lowerkit`\n", _help(argparse.ArgumentParser(
        prog="lowerkit", description=lowerkit_cli.__doc__.splitlines()[0]))]
    for name, text in lowerkit_cli.COMMANDS.items():
        parser = argparse.ArgumentParser(prog=f"lowerkit {name}", description=text)
        importlib.import_module(f"lowerkit.cli.{name}").add_arguments(parser)
        out += [f"### `lowerkit {name}`\n", _help(parser)]
    out += ["## `lowerkit-opt`\n", _help(opt.make_parser())]
    return "\n".join(out)


def _docstring(module: str) -> str:
    """A pass module's docstring, read without importing it (no MLIR build needed)."""
    path = PACKAGE.joinpath(*module.split(".")[1:]).with_suffix(".py")
    return ast.get_docstring(ast.parse(path.read_text())) or ""


def _build(module: str) -> str:
    path = PACKAGE.joinpath(*module.split(".")[1:]).with_suffix(".py")
    m = re.search(r'^BUILD\s*=\s*"([\w-]+)"', path.read_text(), re.M)
    return m.group(1) if m else "torch-mlir"


def _pass_modules() -> dict[str, str]:
    from lowerkit.passes import PASSES

    return {name: f"lowerkit.passes.{module}" for name, module in PASSES.items()}


def passes() -> str:
    """The registry's pipelines and passes, with each one's description."""
    from lowerkit import registry

    rows = ["| pipeline | built by |", "| --- | --- |"]
    for name in registry.pipelines.names():
        ref = registry.pipelines._lazy.get(name, "(entry point)")
        rows.append(f"| `{name}` | `{ref}` |")
    rows += ["", "| pass | build | what it does |", "| --- | --- | --- |"]
    own = _pass_modules()
    for name in registry.passes.names():
        ref = registry.passes._lazy.get(name, "")
        if name in own:
            doc = _docstring(own[name]).splitlines()[0].split(":", 1)[-1].strip().replace("|", "\\|")
            rows.append(f"| [`{name}`](../design/passes.md#{name}) | {_build(own[name])} | {doc} |")
        else:
            rows.append(f"| `{name}` | torch-mlir | `{ref}` |")
    return "\n".join(rows) + "\n"


def _tests_naming(name: str) -> list[str]:
    lit = ROOT / "test" / "lit" / "passes" / f"{name}.mlir"
    found = [str(lit.relative_to(ROOT))] if lit.exists() else []
    for path in sorted((ROOT / "test" / "python").glob("test_*.py")):
        if name in path.read_text():
            found.append(str(path.relative_to(ROOT)))
    return found


def pass_reasons() -> str:
    """Why each of lowerkit's own passes exists: its module docstring, and the tests naming it
    (the ones to run when a toolchain bump may have made the pass unneeded)."""
    out = []
    for name, module in _pass_modules().items():
        doc = _docstring(module)
        _, _, body = doc.partition("\n")
        tests = ", ".join(f"`{t}`" for t in _tests_naming(name)) or "none by name"
        out.append(f"## {name}\n\n**{doc.splitlines()[0].split(':', 1)[-1].strip()}** "
                   f"(`{module}`, {_build(module)} build)\n\n{body.strip()}\n\nTests: {tests}\n")
    return "\n".join(out)


GENERATORS = {"cli": cli, "passes": passes, "pass-reasons": pass_reasons}


def on_page_markdown(markdown: str, page, config, files) -> str:
    return MARKER.sub(lambda m: GENERATORS[m.group(1)](), markdown)
