"""LOWERKIT_COMPILE_SERIAL: iree-compile on one thread, for batches that run a compile per core."""

from __future__ import annotations

import subprocess

import torch

import lowerkit
from lowerkit.iree import compiler


def _compile_seen(monkeypatch, serial: str | None):
    """The artifact and the iree-compile commands that ran for it."""
    ran = []
    real = subprocess.run

    def spy(cmd, *args, **kwargs):
        if "iree-compile" in str(cmd[0]):
            ran.append(list(cmd))
        return real(cmd, *args, **kwargs)

    monkeypatch.setattr(subprocess, "run", spy)
    if serial is None:
        monkeypatch.delenv("LOWERKIT_COMPILE_SERIAL", raising=False)
    else:
        monkeypatch.setenv("LOWERKIT_COMPILE_SERIAL", serial)
    art = lowerkit.compile(lambda x: torch.tanh(x) @ x.T + 1, (torch.randn(8, 8),), cache=False)
    monkeypatch.undo()
    return art, [c for c in ran if "--compile-to=preprocessing" not in c]


def test_a_serial_compile_is_single_threaded_and_writes_the_same_vmfb(monkeypatch):
    threaded, ran = _compile_seen(monkeypatch, "0")
    assert len(ran) == 1 and compiler.SERIAL_FLAG not in ran[0], ran
    serial, ran = _compile_seen(monkeypatch, "1")
    assert len(ran) == 1 and compiler.SERIAL_FLAG in ran[0], ran
    assert ran[0][-2] == "-o"  # the output stays last
    assert serial.vmfb == threaded.vmfb  # threads change how long, never what
    x = torch.randn(8, 8)
    assert torch.allclose(serial(x), torch.tanh(x) @ x.T + 1, rtol=1e-5, atol=1e-5)
