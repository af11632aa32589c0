"""The ecosystem zoo (`lowerkit.zoo.ecosystem`) through lowerkit: each model compiled and run on
this host against eager, then compiled (not run) for each named CPU, as another host would.

    .venv/bin/python benchmarks/ecosystem.py --json benchmarks/results/ecosystem-cpu.json
    .venv/bin/python benchmarks/ecosystem.py gpt2,tv_swin --cpus znver4      # a few, no file
    .venv/bin/python benchmarks/ecosystem.py tv_swin --json F --merge        # redo rows in F

Per model the row holds the host check (`lowerkit.zoo.coverage.check_model`: the stage reached,
the error against eager relative to the output's scale, the compile ladder's rung, compile
seconds) and, per named CPU, whether ``lowerkit.compile(..., target="cpu:CPU")`` compiled and
with which rung (imported once, lowered for each). Nothing is cached (``cache=False``): every compile is a real one. The file is
written after each model (``partial`` until the last); ``--merge`` runs only the given models
again and replaces their rows, each row naming the commit it was taken at.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import warnings
from pathlib import Path

CPUS = ("znver4", "sapphirerapids", "skylake-avx512", "x86-64-v3")


def run_model(entry, cpus: tuple[str, ...], commit: str | None) -> dict:
    from lowerkit.zoo.coverage import check_model, compile_for

    row = {"model": entry.name, "library": next(t for t in entry.tags if t in
                                                 ("transformers", "torchvision", "timm")),
           "note": entry.note, "known": entry.known, "commit": commit}
    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            row["host"] = check_model(entry, cache=False).to_json()
        except Exception as e:  # noqa: BLE001 - the factory itself failed (library missing)
            row["host"] = {"name": entry.name, "ok": False, "stage": "factory",
                           "message": f"{type(e).__name__}: {e}"[:400], "rung": None}
        try:
            results = compile_for(entry, [f"cpu:{c}" for c in cpus], cache=False)
            row["cpus"] = {c: r.to_json() for c, r in zip(cpus, results)}
        except Exception as e:  # noqa: BLE001 - the factory itself failed
            row["cpus"] = {c: {"target": f"cpu:{c}", "ok": False, "stage": "factory",
                               "rung": None, "message": f"{type(e).__name__}: {e}"[:400]}
                           for c in cpus}
    row["seconds"] = time.perf_counter() - start
    return row


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("names", nargs="?", default="", help="comma-separated models (default: all)")
    p.add_argument("--cpus", default=",".join(CPUS), help="named CPUs to compile for ('' none)")
    p.add_argument("--json", type=Path, default=None)
    p.add_argument("--merge", action="store_true",
                   help="replace the given models' rows in --json, keep the others")
    a = p.parse_args(argv)

    import torch

    from lowerkit.tools.bench import run_metadata
    from lowerkit.zoo.ecosystem import ecosystem_models

    torch.set_num_threads(2)
    names = [n for n in a.names.split(",") if n]
    entries = ecosystem_models(names=names or None)
    cpus = tuple(c for c in a.cpus.split(",") if c)
    meta = run_metadata()
    meta["cpus"] = list(cpus)
    data = {"meta": meta, "partial": True, "models": []}
    if a.merge:
        if not a.json or not a.json.exists():
            p.error("--merge needs an existing --json file")
        data = json.loads(a.json.read_text())
        data.setdefault("merged", []).append({k: meta[k] for k in ("date", "commit", "command")})
    for entry in entries:
        row = run_model(entry, cpus, meta["commit"])
        host = row["host"]
        per_cpu = " ".join(f"{c}:{'ok' if r['ok'] else r['stage']}" for c, r in row["cpus"].items())
        print(f"{'✓' if host['ok'] else '✗'} {entry.name:24s} {host['stage']:22s} "
              f"rung={host.get('rung')} {row['seconds']:.0f}s {per_cpu} "
              f"{'' if host['ok'] else host.get('message', '')[:200]}", flush=True)
        data["models"] = [r for r in data["models"] if r["model"] != entry.name] + [row]
        if a.json:
            a.json.write_text(json.dumps(data, indent=1) + "\n")
    order = [m.name for m in ecosystem_models()]
    data["models"].sort(key=lambda r: order.index(r["model"]) if r["model"] in order else 1e9)
    data["partial"] = False
    if a.json:
        a.json.write_text(json.dumps(data, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
