"""The suite's tiers (conftest.py): what the default tier leaves out names tests that exist."""

from __future__ import annotations

import ast
from pathlib import Path


def test_each_test_the_default_tier_leaves_out_exists():
    """A renamed or removed test's entry in ``DEFAULT_TIER_LEAVES_OUT`` would leave nothing out,
    and the suite would grow past its budget with no word of why."""
    import conftest

    here = Path(__file__).parent
    entries = [entry.split("::") for entry in conftest.DEFAULT_TIER_LEAVES_OUT]
    defined = {file: {node.name for node in ast.walk(ast.parse((here / file).read_text()))
                      if isinstance(node, ast.FunctionDef)} if (here / file).exists() else set()
               for file in {file for file, _ in entries}}  # each file read once
    missing = [f"{file}::{name}" for file, name in entries
               if name.split("[")[0] not in defined[file]]
    assert missing == [], "DEFAULT_TIER_LEAVES_OUT names tests that do not exist"
    # a case id ([...]) is checked where its file was collected whole
    assert conftest.STALE_TIER_ENTRIES == [], "DEFAULT_TIER_LEAVES_OUT names uncollected cases"
