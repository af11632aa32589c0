"""A fuzz campaign of lowerkit against eager, stored for the README's table (one row a target).

    .venv/bin/python benchmarks/fuzz_campaign.py --examples 250 --seed 2111 \\
        --target cpu,vulkan:llvmpipe,vulkan --json benchmarks/results/fuzz.json

Runs ``lowerkit fuzz`` once (each generated program on every target), keeps its journal beside
the summary (``fuzz.jsonl``: each program's source and verdict, which ``lowerkit fuzz --replay``
runs again), and writes the summary: the run's provenance and the verdicts per target, with
every failing program's source. Vulkan targets need ``XDG_RUNTIME_DIR`` set.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import Counter
from pathlib import Path


def summarise(journal: Path) -> dict:
    """Verdicts per target and the failing programs, from a ``lowerkit fuzz --json`` journal."""
    from lowerkit.tools.fuzz import FAILURES, VERDICTS

    header, *rows = (json.loads(line) for line in journal.read_text().splitlines())
    counts = {t: Counter() for t in header["targets"]}
    failures = []
    for row in rows:
        counts[row["target"]][row["kind"]] += 1
        if row["kind"] in FAILURES:
            failures.append({k: row[k] for k in ("n", "target", "kind", "message", "source")})
    return {"header": header,
            "targets": {t: {"programs": sum(c.values()), **{k: c[k] for k in VERDICTS}}
                        for t, c in counts.items()},
            "failures": failures}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--examples", type=int, required=True)
    p.add_argument("--seed", type=int, required=True)
    p.add_argument("--target", default="cpu,vulkan:llvmpipe,vulkan")
    p.add_argument("--json", type=Path, required=True, help="the summary; the journal goes "
                   "beside it, with the suffix .jsonl")
    p.add_argument("--stopped", type=float, default=None, metavar="SECONDS",
                   help="do not run: summarise the journal that a run stopped after SECONDS "
                   "left beside --json (the summary says how many of --examples it ran)")
    a = p.parse_args(argv)

    from lowerkit.cli import main as lowerkit
    from lowerkit.tools.bench import run_metadata

    journal = a.json.with_suffix(".jsonl")
    command = (f"lowerkit fuzz --examples {a.examples} --seed {a.seed} --target {a.target} "
               f"--json {journal}")
    meta = run_metadata(" ".join([Path(sys.argv[0]).as_posix(), *(argv or sys.argv[1:])]))
    start = time.perf_counter()
    if a.stopped is not None:
        rc, seconds = 0, a.stopped
    else:
        rc = lowerkit(["fuzz", "--examples", str(a.examples), "--seed", str(a.seed),
                       "--target", a.target, "--json", str(journal)])
        seconds = time.perf_counter() - start
    summary = {"meta": meta, "fuzz_command": command, "seconds": seconds,
               "journal": journal.name, **summarise(journal)}
    # the code that ran is the journal's (its first row is written as the run starts)
    meta.update(commit=summary["header"]["lowerkit_commit"],
                dirty=summary["header"]["lowerkit_dirty"])
    ran = min(c["programs"] for c in summary["targets"].values())
    summary["stopped_after"] = ran if ran < a.examples else None
    a.json.write_text(json.dumps(summary, indent=1) + "\n")
    return rc


if __name__ == "__main__":
    sys.exit(main())
