"""LOWERKIT_COMPILE_TIMEOUT: iree-compile is stopped after the limit, with a StageError."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import torch

import lowerkit
from lowerkit import StageError
from lowerkit.iree.compiler import DEFAULT_TIMEOUT, default_timeout


def _children() -> list[str]:
    """Command lines of this process's live child processes."""
    out = []
    for task in Path("/proc/self/task").iterdir():
        for pid in (task / "children").read_text().split():
            try:
                out.append(Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode())
            except FileNotFoundError:
                pass
    return out


def test_iree_compile_past_the_limit_is_stopped_with_a_stage_error(monkeypatch):
    # iree-compile took 1.1-1.7 s for a 4-element add on the 2-core dev machine (loaded) and
    # 0.6 s for `--version` alone: a limit of 50 ms is always reached
    monkeypatch.setenv("LOWERKIT_COMPILE_TIMEOUT", "0.05")
    with pytest.raises(StageError) as info:
        lowerkit.compile(lambda x: x * 2 + 1, (torch.randn(8),), cache=False)
    e = info.value
    assert e.stage == "iree-compile"
    assert e.summary == "timed out after 0.05s"
    assert "stage 'iree-compile' failed: timed out after 0.05s" in str(e)
    assert e.reproducer.exists() and "iree-compile" in e.command
    assert not any("iree-compile" in c for c in _children())  # killed, not left running


def test_limit_from_the_environment(monkeypatch):
    monkeypatch.delenv("LOWERKIT_COMPILE_TIMEOUT", raising=False)
    assert default_timeout() == DEFAULT_TIMEOUT == 1800
    monkeypatch.setenv("LOWERKIT_COMPILE_TIMEOUT", "0")
    assert default_timeout() is None  # 0: no limit
    monkeypatch.setenv("LOWERKIT_COMPILE_TIMEOUT", "2.5")
    assert default_timeout() == 2.5
