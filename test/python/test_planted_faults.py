"""The planted faults (`scripts/planted_faults.py`) still plant: each names text found once in
its file and tests that exist. A fault whose text has moved is refused only when it is run,
so a stale one would go unnoticed until someone reruns it."""

from __future__ import annotations

import re
import runpy
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
FAULTS = runpy.run_path(str(ROOT / "scripts" / "planted_faults.py"), run_name="planted_faults")["FAULTS"]


@pytest.mark.parametrize("fault", FAULTS, ids=[f.name for f in FAULTS])
def test_each_planted_fault_still_applies(fault):
    if fault.file:
        text = (ROOT / fault.file).read_text()
        assert text.count(fault.old) == 1, f"the text {fault.name} changes is not once in {fault.file}"
    else:
        assert fault.env, f"{fault.name} changes neither a file nor the environment"
    for test in fault.tests:
        path, _, name = test.partition("::")
        source = (ROOT / path).read_text()
        if not name:  # a whole file
            continue
        function = re.sub(r"\[.*\]$", "", name.split("::")[-1])
        assert re.search(rf"^\s*def {re.escape(function)}\(", source, re.M), f"{fault.name}: no {test}"


def test_fault_names_are_unique():
    names = [f.name for f in FAULTS]
    assert len(names) == len(set(names))
