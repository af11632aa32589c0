"""Every module a compile imports from the venv's site-packages is read from bytecode that
`scripts/setup` wrote. Where ``PYTHONDONTWRITEBYTECODE`` is set (these machines, and CI), Python
never writes it at import, so without setup's ``compileall`` every new process compiled torch's,
IREE's and torch-mlir's Python again: ``import torch`` took 2.5 s against 1.0 s, and a fresh
process's first ResNet-18 compile 10.1 s against 6.5 s (README, "Bytecode")."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

# In a fresh interpreter: a small compile and its first call (the modules a user's first
# compile imports, lazily loaded ones included), then each imported site-packages module whose
# bytecode is missing or older than its source (the header's mtime and size, as Python checks).
PROBE = textwrap.dedent("""
    import importlib.util, json, os, sys, sysconfig, warnings
    warnings.simplefilter("ignore")
    import torch, lowerkit
    model = torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3), torch.nn.BatchNorm2d(8),
                                torch.nn.ReLU()).eval()
    x = torch.randn(1, 3, 8, 8)
    lowerkit.compile(model, (x,), cache=False)(x)
    site = os.path.realpath(sysconfig.get_path("purelib"))
    stale, checked = [], 0
    for name, module in sorted(sys.modules.items()):
        source = getattr(module, "__file__", None)
        if not source or not source.endswith(".py") or not os.path.isabs(source):
            continue
        if not os.path.realpath(source).startswith(site + os.sep):
            continue
        checked += 1
        cached = importlib.util.cache_from_source(source)
        try:
            with open(cached, "rb") as f:
                header = f.read(16)
        except OSError:
            stale.append(name)
            continue
        st = os.stat(source)
        flags = int.from_bytes(header[4:8], "little")
        if flags == 0 and (int.from_bytes(header[8:12], "little") != int(st.st_mtime) & 0xFFFFFFFF
                           or int.from_bytes(header[12:16], "little") != st.st_size & 0xFFFFFFFF):
            stale.append(name)
    print(json.dumps({"checked": checked, "stale": stale}))
""")


def test_every_site_packages_module_a_compile_imports_has_its_bytecode():
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1", "LOWERKIT_CACHE_DIR": "off"}
    proc = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True,
                          env=env, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    found = json.loads(proc.stdout.strip().splitlines()[-1])
    assert found["checked"] > 1000, found  # torch, IREE and torch-mlir: a compile's imports
    assert found["stale"] == [], (
        f"{len(found['stale'])} of {found['checked']} modules a compile imports from "
        f"site-packages have no bytecode (first: {found['stale'][:8]}): run scripts/setup, "
        "which writes it (compileall)")
