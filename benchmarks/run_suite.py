"""Run lowerkit's benchmark suite (``benchmarks/suite/``, airspeed velocity) on this host and
store the run under ``benchmarks/results/asv/`` keyed by this host and the checkout's commit.

    .venv/bin/python benchmarks/run_suite.py                 # every set; on a quiet machine
    .venv/bin/python benchmarks/run_suite.py --quick         # a few programs of each set
    .venv/bin/python benchmarks/run_suite.py --bench RealShapes --publish
    .venv/bin/asv compare --machine MACHINE OLD NEW          # what changed between two commits
    .venv/bin/asv publish && .venv/bin/asv preview           # the HTML site: a plot per figure

The machine's name is its host kind (``amd-epyc-zen-4-2cores``): the CPU as the performance
pages name it (`readme.host_name`: AMD's family and model give the Zen generation) and the
cores this process may use, so that every run on that kind of host lands in one history. The
run's provenance (`lowerkit.tools.bench.run_metadata`: commit, CPU flags, threads, load,
versions, the iree-compile flags) goes beside asv's files, in
``benchmarks/results/asv-provenance/MACHINE/COMMIT.json``; ``benchmarks/readme.py`` renders the
performance page's suite table and the README's headline from both.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import shlex
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
ASV = [sys.executable, "-m", "asv"]
CONFIG = ROOT / "asv.conf.json"
RESULTS = ROOT / "benchmarks" / "results" / "asv"
PROVENANCE = ROOT / "benchmarks" / "results" / "asv-provenance"


def machine_name(cpu: dict) -> str:
    """The host kind as an asv machine name: ``amd-epyc-zen-4-2cores``."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from readme import host_name

    cores = cpu.get("cores_usable") or cpu.get("cores")
    slug = re.sub(r"[^a-z0-9]+", "-", host_name({"cpu": cpu}).lower()).strip("-")
    return f"{slug}-{cores}cores"


def _ram_kb() -> str:
    try:
        return next(line.split()[1] for line in open("/proc/meminfo")
                    if line.startswith("MemTotal"))
    except (OSError, StopIteration):
        return ""


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true",
                   help="a few small programs of each set (stored as such: asv records which "
                        "programs a run measured)")
    p.add_argument("--bench", action="append", default=[],
                   help="only the benchmarks matching this regular expression (asv's --bench)")
    p.add_argument("--torch-threads", type=int, default=2,
                   help="torch.set_num_threads for eager and torch.compile (default: 2)")
    p.add_argument("--machine", help="the asv machine name (default: this host's kind)")
    p.add_argument("--publish", action="store_true", help="then build the HTML site (asv publish)")
    a = p.parse_args(argv)
    os.chdir(ROOT)
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    os.environ["LOWERKIT_SUITE_QUICK"] = "1" if a.quick else "0"
    os.environ["LOWERKIT_SUITE_TORCH_THREADS"] = str(a.torch_threads)

    import torch

    from lowerkit.tools.bench import run_metadata

    torch.set_num_threads(a.torch_threads)
    meta = run_metadata(shlex.join([".venv/bin/python", "benchmarks/run_suite.py",
                                    *(argv if argv is not None else sys.argv[1:])]))
    meta["quick"] = a.quick
    machine = a.machine or machine_name(meta["cpu"])
    commit = meta["commit"]
    subprocess.run(ASV + ["machine", "--yes", "--config", str(CONFIG), "--machine", machine,
                          "--os", f"{platform.system()} {platform.release()}",
                          "--arch", platform.machine(),
                          "--cpu", f"{meta['cpu'].get('model')} (family "
                                   f"{meta['cpu'].get('family')}, model "
                                   f"{meta['cpu'].get('model_number')})",
                          "--num_cpu", str(meta["cpu"].get("cores_usable") or os.cpu_count()),
                          "--ram", _ram_kb()], check=True)
    run = ASV + ["run", "--config", str(CONFIG), "--python=same", "--machine", machine,
                 "--set-commit-hash", commit, "--show-stderr"]
    for b in a.bench:
        run += ["--bench", b]
    done = subprocess.run(run)
    out = PROVENANCE / machine / f"{commit}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({**meta, "load_after": os.getloadavg()[0],
                               "asv_exit_status": done.returncode}, indent=1) + "\n")
    print(f"wrote {out.relative_to(ROOT)} and asv's results under "
          f"{(RESULTS / machine).relative_to(ROOT)}")
    if a.publish:
        subprocess.run(ASV + ["publish", "--config", str(CONFIG)], check=True)
    return done.returncode


if __name__ == "__main__":
    sys.exit(main())
