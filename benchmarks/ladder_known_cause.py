"""The compile ladder on a failure IREE's message ties to one flag (`compiler.KNOWN_CAUSES`):
first call of a ``torch.compile(backend="lowerkit")`` training graph that IREE 3.13 rejects at
``-O3``, with the known causes used (``known``) and emptied (``climb``: the ladder before them),
alternating in fresh processes.

    .venv/bin/python benchmarks/ladder_known_cause.py --rounds 2

Prints, per run, the first call's seconds, how many times iree-compile ran and the rung that
built the program, then the medians, with the CPU model.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys

CHILD = r"""
import json, sys, time, warnings
import torch
import lowerkit
from lowerkit.iree import compiler
if sys.argv[1] == "climb":
    compiler.KNOWN_CAUSES = ()
warnings.simplefilter("ignore")
runs, rungs = [0], []
once, to_vmfb = compiler._compile_once, compiler.compile_to_vmfb
def counted(*a, **k):
    runs[0] += 1
    return once(*a, **k)
def recorded(*a, **k):
    result = to_vmfb(*a, **k)
    rungs.append(result.rung)
    return result
compiler._compile_once, compiler.compile_to_vmfb = counted, recorded

class NormedHead(torch.nn.Module):  # test_compile_ladder.py's program
    def __init__(self):
        super().__init__()
        self.linear = torch.nn.Linear(16, 16)
        self.norm = torch.nn.LayerNorm(16)
    def forward(self, x):
        return torch.nn.functional.gelu(self.norm(self.linear(x))).softmax(-1)

torch.manual_seed(0)
model, x = NormedHead(), torch.randn(4, 16)
compiled = torch.compile(model, backend="lowerkit", options={"cache": False})
start = time.perf_counter()
got = compiled(x)
seconds = time.perf_counter() - start
err = (got - model(x)).abs().max().item()
print(json.dumps({"seconds": seconds, "iree_compile_runs": runs[0], "rungs": rungs,
                  "max_abs_error": err}))
"""


def _cpu() -> str:
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    return "unknown"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    env = {**os.environ, "LOWERKIT_CACHE_DIR": "off", "LOWERKIT_TUNING_DB": "off"}
    results: dict[str, list[dict]] = {"known": [], "climb": []}
    for _ in range(args.rounds):
        for mode in results:
            out = subprocess.run([sys.executable, "-c", CHILD, mode], capture_output=True,
                                 text=True, env=env, check=True).stdout
            row = json.loads(out.strip().splitlines()[-1])
            results[mode].append(row)
            print(f"{mode:6s} first call {row['seconds']:.2f} s, iree-compile runs "
                  f"{row['iree_compile_runs']}, rungs {row['rungs']}, "
                  f"max abs error {row['max_abs_error']:.1e}")
    print(f"CPU: {_cpu()}")
    for mode, rows in results.items():
        print(f"{mode:6s} median first call "
              f"{statistics.median(r['seconds'] for r in rows):.2f} s")


if __name__ == "__main__":
    main()
