"""Shared pytest setup: opt-in markers, a fresh compile cache folder per test session, and a
SKIP with its reason for each case whose target's device this machine lacks."""

from __future__ import annotations

import functools
import os
import shutil
import tempfile

import pytest

# marker -> environment variable that opts in (or `-m MARKER` on the command line)
OPT_IN = {
    "slow": "LOWERKIT_SLOW",
    "cuda": "LOWERKIT_CUDA",
    "browser": "LOWERKIT_BROWSER",
    "fuzz": "LOWERKIT_FUZZ",
}

# The session's cache folder, made by the first process of the session (pytest itself, or the
# xdist controller) and inherited by its workers through this variable. An outer
# LOWERKIT_CACHE_DIR (a developer's, or scripts/test's for lit) is not used: entries left by
# another run would answer compiles that a test means to make (timings, records, cache hits).
# LOWERKIT_CACHE_DIR=off is kept: it turns the cache off and reuses nothing.
SESSION_CACHE = "LOWERKIT_TEST_SESSION_CACHE"
_OWNED: list[str] = []


def pytest_configure(config):
    # torchvision from PyPI is a CUDA build whose C++ library does not load beside the CPU
    # torch; without this, importing it (transformers does wherever it is installed) fails on
    # "operator torchvision::nms does not exist". See lowerkit.zoo.ecosystem.patch_torchvision.
    from lowerkit.zoo.ecosystem import patch_torchvision

    patch_torchvision()
    config.addinivalue_line("markers", "fuzz: long differential fuzzing run")
    config.addinivalue_line(
        "markers", "runs_target: the test runs its `target` parameter's device; SKIP with the "
        "reason on a machine where IREE opens no such device")
    if os.environ.get("LOWERKIT_CACHE_DIR", "").strip().lower() in {"0", "off", "false", "no", "none"}:
        return
    folder = os.environ.get(SESSION_CACHE)
    if not folder:
        folder = tempfile.mkdtemp(prefix="lowerkit-test-cache-")
        os.environ[SESSION_CACHE] = folder
        _OWNED.append(folder)
    os.environ["LOWERKIT_CACHE_DIR"] = folder


def pytest_unconfigure(config):
    for folder in _OWNED:
        shutil.rmtree(folder, ignore_errors=True)


@functools.lru_cache(maxsize=1)
def _usable_drivers() -> frozenset[str]:
    from lowerkit.runtime.executable import usable_drivers

    return frozenset(usable_drivers())


def _missing_device(spec: str) -> str | None:
    """Why ``spec``'s device cannot run here, or None when it can."""
    from lowerkit.target import Target

    missing = [d for d in Target.parse(spec).runtime_drivers if d not in _usable_drivers()]
    if not missing:
        return None
    hint = {"vulkan": " (Debian: apt-get install mesa-vulkan-drivers libvulkan1)"}
    return "; ".join(f"IREE's {d} driver opens no device on this machine{hint.get(d, '')}: "
                     f"{spec!r} not run" for d in missing)


def pytest_collection_modifyitems(config, items):
    selected = config.getoption("-m") or ""
    for item in items:
        for marker, env in OPT_IN.items():
            if marker in item.keywords and marker not in selected and not os.environ.get(env):
                item.add_marker(pytest.mark.skip(reason=f"opt-in: set {env}=1 or pass -m {marker}"))
        callspec = getattr(item, "callspec", None)
        if item.get_closest_marker("runs_target") and callspec and "target" in callspec.params:
            reason = _missing_device(callspec.params["target"])
            if reason:
                item.add_marker(pytest.mark.skip(reason=reason))
