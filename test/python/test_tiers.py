"""The suite's tiers (conftest.py): what the default tier leaves out names tests that exist."""

from __future__ import annotations

import ast
from pathlib import Path


def test_each_test_the_default_tier_leaves_out_exists():
    """A renamed or removed test's entry in ``DEFAULT_TIER_LEAVES_OUT`` would leave nothing out,
    and the suite would grow past its budget with no word of why."""
    import conftest

    here = Path(__file__).parent
    missing = []
    for entry in conftest.DEFAULT_TIER_LEAVES_OUT:
        file, name = entry.split("::")
        path = here / file
        defined = {node.name for node in ast.walk(ast.parse(path.read_text()))
                   if isinstance(node, ast.FunctionDef)} if path.exists() else set()
        if name.split("[")[0] not in defined:
            missing.append(entry)
    assert missing == [], "DEFAULT_TIER_LEAVES_OUT names tests that do not exist"
    # a case id ([...]) is checked where its file was collected whole
    assert conftest.STALE_TIER_ENTRIES == [], "DEFAULT_TIER_LEAVES_OUT names uncollected cases"
