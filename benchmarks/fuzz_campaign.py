"""A fuzz campaign of lowerkit against eager, stored for the README's table (one row a target).

    .venv/bin/python benchmarks/fuzz_campaign.py --examples 250 --seed 2111 \\
        --target cpu,vulkan:llvmpipe,vulkan --json benchmarks/results/fuzz.json

Runs ``lowerkit fuzz`` once (each generated program on every target), keeps its journal beside
the summary (``fuzz.jsonl``: each program's source and verdict, which ``lowerkit fuzz --replay``
runs again), and writes the summary: the run's provenance and the verdicts per target, with
every failing program's source. Vulkan targets need ``XDG_RUNTIME_DIR`` set.

A campaign that does not fit one sitting runs in parts: stop it (or give ``--timeout``), then
run the same command with ``--resume``: the journal's programs are skipped, the new ones
appended, and the summary's seconds add up the parts.
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
            # the executor's journal keys a row "00008:vulkan"; an older one numbered it "n"
            n = row["n"] if "n" in row else int(row["key"].split(":", 1)[0])
            failures.append({"n": n, **{k: row.get(k) for k in ("target", "kind", "source")},
                             "message": row.get("log_tail") or row.get("message")})
    return {"header": header,
            "targets": {t: {"programs": sum(c.values()), **{k: c[k] for k in VERDICTS}}
                        for t, c in counts.items()},
            "failures": failures}


def _fuzz(args: list[str], timeout: float | None) -> int:
    """``lowerkit fuzz`` in a child process, stopped after ``timeout`` seconds (its journal
    keeps every outcome it wrote, so a stopped run is summarised and resumed like a whole one)."""
    import subprocess

    child = subprocess.Popen([sys.executable, "-m", "lowerkit", *args])
    try:
        return child.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        child.terminate()  # it finishes the item it is on (a compile may take a while)
        try:
            child.wait(timeout=120)
        except subprocess.TimeoutExpired:
            child.kill()
            child.wait()
        return 0


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
    p.add_argument("--resume", action="store_true",
                   help="go on with the journal beside --json (lowerkit fuzz --resume)")
    p.add_argument("--isolate", action="store_true",
                   help="each item in a forked child (a native crash is that item's verdict)")
    p.add_argument("--item-timeout", type=float, default=None, metavar="S")
    p.add_argument("--timeout", type=float, default=None, metavar="SECONDS",
                   help="stop the fuzz run after SECONDS and summarise what it ran")
    a = p.parse_args(argv)

    from lowerkit.tools.bench import run_metadata

    journal = a.json.with_suffix(".jsonl")
    command = (f"lowerkit fuzz --examples {a.examples} --seed {a.seed} --target {a.target} "
               f"--json {journal}")
    meta = run_metadata(" ".join([Path(sys.argv[0]).as_posix(), *(argv or sys.argv[1:])]))
    start = time.perf_counter()
    if a.stopped is not None:
        rc, seconds = 0, a.stopped
    else:
        extra = ((["--resume"] if a.resume else []) + (["--isolate"] if a.isolate else [])
                 + (["--item-timeout", str(a.item_timeout)] if a.item_timeout else []))
        rc = _fuzz(["fuzz", "--examples", str(a.examples), "--seed", str(a.seed),
                    "--target", a.target, "--json", str(journal), *extra], a.timeout)
        seconds = time.perf_counter() - start
        if a.resume and a.json.exists():
            seconds += json.loads(a.json.read_text()).get("seconds") or 0
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
