"""Shared pytest setup: opt-in markers and a per-session compile cache folder."""

from __future__ import annotations

import os

import pytest

# marker -> environment variable that opts in (or `-m MARKER` on the command line)
OPT_IN = {
    "slow": "LOWERKIT_SLOW",
    "cuda": "LOWERKIT_CUDA",
    "browser": "LOWERKIT_BROWSER",
    "fuzz": "LOWERKIT_FUZZ",
}


def pytest_configure(config):
    config.addinivalue_line("markers", "fuzz: long differential fuzzing run")


def pytest_collection_modifyitems(config, items):
    selected = config.getoption("-m") or ""
    for item in items:
        for marker, env in OPT_IN.items():
            if marker in item.keywords and marker not in selected and not os.environ.get(env):
                item.add_marker(pytest.mark.skip(reason=f"opt-in: set {env}=1 or pass -m {marker}"))
