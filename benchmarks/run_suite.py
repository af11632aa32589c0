"""Run lowerkit's benchmark suite (``benchmarks/suite/``, airspeed velocity) on this host and
store the run under ``benchmarks/results/asv/`` keyed by this host and the checkout's commit.

    .venv/bin/python benchmarks/run_suite.py                 # every set; on a quiet machine
    .venv/bin/python benchmarks/run_suite.py --quick         # a few programs of each set
    .venv/bin/python benchmarks/run_suite.py --bench RealShapes --publish
    .venv/bin/asv compare --machine MACHINE OLD NEW          # what changed between two commits
    .venv/bin/asv publish && .venv/bin/asv preview           # the HTML site: a plot per figure
    .venv/bin/python benchmarks/run_suite.py --import-stored benchmarks/results/real-shapes-zen3.json

The machine's name is its host kind (``amd-epyc-zen-4-2cores``): the CPU as the performance
pages name it (`readme.host_name`: AMD's family and model give the Zen generation) and the
cores this process may use, so that every run on that kind of host lands in one history. The
run's provenance (`lowerkit.tools.bench.run_metadata`: commit, CPU flags, threads, load,
versions, the iree-compile flags) goes beside asv's files, in
``benchmarks/results/asv-provenance/MACHINE/COMMIT.json``; ``benchmarks/readme.py`` renders the
performance page's suite table and the README's headline from both.

``--import-stored`` brings a run stored before the suite existed (``lowerkit bench real``,
``real-models`` or ``zoo --json``; ``benchmarks/call_floor.py --json``) into the history as the
suite's figures for that run's host and commit: the suite's sets time the same programs with the
same loop (`lowerkit.tools.bench.bench_model`), and its ``track_*`` benchmarks read the figures
from such a run (`_common._ModelSet`), so a stored run and a suite run give one history.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
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
    """The host kind as an asv machine name (`readme.machine_name`): ``amd-epyc-zen-4-2cores``."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from readme import machine_name as name

    return name(cpu)


def _ram_kb() -> str:
    try:
        return next(line.split()[1] for line in open("/proc/meminfo")
                    if line.startswith("MemTotal"))
    except (OSError, StopIteration):
        return ""


def _suite_classes() -> dict[str, type]:
    """The suite's benchmark classes by the ``lowerkit bench`` set (or script) they measure."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from suite.call_floor import CallFloor
    from suite.real_models import RealModels
    from suite.real_shapes import RealShapes
    from suite.zoo import Zoo

    return {"real": RealShapes, "real-models": RealModels, "zoo": Zoo, "call_floor.py": CallFloor}


def _set_of(command: str) -> str:
    words = shlex.split(command)
    if any(w.endswith("call_floor.py") for w in words):
        return "call_floor.py"
    if "bench" in words and words.index("bench") + 1 < len(words):
        return words[words.index("bench") + 1]
    raise SystemExit(f"not a run of a set the suite measures: {command}")


def import_stored(paths: list[Path]) -> list[Path]:
    """Each stored run of ``paths`` as asv results of the suite for its host and commit, with its
    provenance beside them; the asv files written."""
    import math
    from datetime import datetime

    from asv.environment import get_env_name

    classes = _suite_classes()
    written = []
    for path in paths:
        data = json.loads(Path(path).read_text())
        meta = data["meta"]
        cls = classes[_set_of(meta["command"])]
        module = cls.__module__.removeprefix("suite.")
        bench = cls()
        programs = [m["model"] for m in data["models"]] + ["geomean"]
        if cls.__name__ == "CallFloor":
            cache = {m["model"]: m for m in data["models"]}
        else:
            cache = {"models": {m["model"]: m for m in data["models"]},
                     "failed_factories": data.get("failed_factories") or {}}
        machine = machine_name(meta["cpu"])
        started = int(datetime.fromisoformat(meta["date"]).timestamp() * 1000)
        env = get_env_name("existing", sys.executable, {}, {})
        out = RESULTS / machine / f"{meta['commit'][:8]}-{env}.json"
        prov = PROVENANCE / machine / f"{meta['commit']}.json"
        if prov.exists():
            raise SystemExit(f"{prov} exists: one stored run a host and commit")
        result = (json.loads(out.read_text()) if out.exists() else {
            "commit_hash": meta["commit"], "env_name": env, "date": started,
            "params": {"cpu": _cpu(meta["cpu"]), "machine": machine, "python": sys.executable},
            "python": sys.executable, "requirements": {}, "env_vars": {},
            "result_columns": ["result", "params", "version", "started_at", "duration"],
            "results": {}, "durations": {}, "version": 2})
        for name in sorted(n for n in dir(cls) if n.startswith("track_")):
            values = []
            for program in programs:
                try:
                    v = getattr(bench, name)(cache, program)
                except (NotImplementedError, KeyError):
                    v = None
                values.append(v if v is not None and math.isfinite(v) else None)
            key = f"{module}.{cls.__name__}.{name}"
            result["results"][key] = [values, [[repr(p) for p in programs]], cls.version,
                                      started, None]
        out.parent.mkdir(parents=True, exist_ok=True)
        machine_json = out.parent / "machine.json"
        if not machine_json.exists():
            machine_json.write_text(json.dumps({"cpu": _cpu(meta["cpu"]), "machine": machine,
                                                "num_cpu": str(meta["cpu"].get("cores_usable")
                                                               or meta["cpu"].get("cores")),
                                                "version": 1}, indent=4) + "\n")
        out.write_text(json.dumps(result) + "\n")
        prov.parent.mkdir(parents=True, exist_ok=True)
        rel = str(Path(path).resolve().relative_to(ROOT))
        prov.write_text(json.dumps({**meta, "quick": False, "imported_from": rel}, indent=1)
                        + "\n")
        written.append(out)
        print(f"{rel}: {len(programs) - 1} programs into {out.relative_to(ROOT)}")
    return written


def _cpu(cpu: dict) -> str:
    return (f"{cpu.get('model')} (family {cpu.get('family')}, model "
            f"{cpu.get('model_number')})")


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
    p.add_argument("--import-stored", nargs="+", type=Path, metavar="FILE",
                   help="bring runs stored before the suite into its history, then stop")
    a = p.parse_args(argv)
    if a.import_stored:
        import_stored(a.import_stored)
        return 0
    os.chdir(ROOT)
    # untuned, as the stored runs of the pages: export LOWERKIT_TUNING_DB to time a database
    os.environ.setdefault("LOWERKIT_TUNING_DB", "off")
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
                          "--cpu", _cpu(meta["cpu"]),
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
