"""How often loading a program's weights as IREE parameters hangs or loses a Vulkan device.

Each trial is a child process that compiles the ShuffleNet unit of test_defects.py for a Vulkan
target with ``weights=external`` or ``inline``, then loads it afresh (a new VM context, so
IREE's module initializer reads the parameters again) and calls it, up to ``--loads`` times.
A trial ends "hang" when it outlives ``--timeout``, "lost" when IREE reports a lost device
(DATA_LOSS / VK_ERROR_DEVICE_LOST), "ok" when every load matched eager.

    .venv/bin/python benchmarks/vulkan_parameter_loads.py --trials 3 --loads 40 --json OUT
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table

ROOT = Path(__file__).resolve().parent.parent

CHILD = r"""
import sys, torch, lowerkit
sys.path.insert(0, sys.argv[4])
from test_defects import ShuffleUnit
target, weights, loads = sys.argv[1], sys.argv[2], int(sys.argv[3])
torch.manual_seed(0)
unit = torch.nn.Sequential(ShuffleUnit(), ShuffleUnit()).eval()
x = torch.randn(1, 16, 12, 12)
art = lowerkit.compile(unit, (x,), target=target, weights=weights, cache=False)
ref = unit(x).detach()
for i in range(loads):
    art._executable = None  # a fresh VM context: the module initializer runs again
    y = art(x)
    assert (y - ref).abs().max() < 1e-3 * ref.abs().max()
    print("loaded", i + 1, flush=True)
"""


def trial(target: str, weights: str, loads: int, timeout: float) -> dict:
    env = {**os.environ, "LOWERKIT_CACHE_DIR": "off",
           "XDG_RUNTIME_DIR": os.environ.get("XDG_RUNTIME_DIR", "/tmp")}
    start = time.perf_counter()
    try:
        p = subprocess.run([sys.executable, "-c", CHILD, target, weights, str(loads),
                            str(ROOT / "test/python")], capture_output=True, text=True,
                           timeout=timeout, env=env)
        out, err, rc = p.stdout, p.stderr, p.returncode
        verdict = "ok" if rc == 0 else ("lost" if "DATA_LOSS" in err or "DEVICE_LOST" in err
                                        else "error")
    except subprocess.TimeoutExpired as e:
        out = e.stdout.decode() if isinstance(e.stdout, bytes) else (e.stdout or "")
        err, verdict = "", "hang"
    done = sum(1 for line in out.splitlines() if line.startswith("loaded"))
    return {"target": target, "weights": weights, "verdict": verdict, "loads_done": done,
            "seconds": round(time.perf_counter() - start, 1), "error_tail": err[-300:]}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--target", default="vulkan")
    ap.add_argument("--trials", type=int, default=3)
    ap.add_argument("--loads", type=int, default=40)
    ap.add_argument("--timeout", type=float, default=90)
    ap.add_argument("--json")
    a = ap.parse_args()
    rows = [trial(a.target, w, a.loads, a.timeout) for w in ("external", "inline")
            for _ in range(a.trials)]
    table = Table(title=f"loads of the ShuffleNet unit on {a.target}, {a.loads} a trial")
    for col in ("weights", "verdict", "loads done", "s"):
        table.add_column(col)
    for r in rows:
        table.add_row(r["weights"], r["verdict"], str(r["loads_done"]), str(r["seconds"]))
    Console().print(table)
    if a.json:
        head = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "HEAD"], capture_output=True,
                              text=True).stdout.strip()
        cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo")
                    if l.startswith("model name")), platform.processor())
        Path(a.json).write_text(json.dumps({"commit": head, "cpu": cpu, "loads": a.loads,
                                            "timeout_s": a.timeout, "trials": rows}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
