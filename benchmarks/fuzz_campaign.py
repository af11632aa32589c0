"""A fuzz campaign of lowerkit against eager, stored for the README's table (one row a target).

    .venv/bin/python benchmarks/fuzz_campaign.py --examples 250 --seed 2111 \\
        --target cpu,vulkan:llvmpipe,vulkan --json benchmarks/results/fuzz.json

Runs ``lowerkit fuzz`` once (each generated program on every target), keeps its journal beside
the summary (``fuzz.jsonl``: each program's source and verdict, which ``lowerkit fuzz --replay``
runs again), and writes the summary: the run's provenance and the verdicts per target, with
every failing program's source. Vulkan targets need ``XDG_RUNTIME_DIR`` set.

With ``--shards N`` it runs N ``lowerkit fuzz --shard K/N`` children at once, each with its
own journal (``fuzz-shard1of2.jsonl``, ...), and sums them up: one summary, one commit.

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


def summarise(journals: list[Path]) -> dict:
    """Verdicts per target and the failing programs, from ``lowerkit fuzz --json`` journals
    (one, or one a shard of the same run)."""
    from lowerkit.tools.fuzz import FAILURES, VERDICTS

    header, counts, failures = None, {}, []
    for journal in journals:
        first, *rows = (json.loads(line) for line in journal.read_text().splitlines())
        if header is None:
            header = {k: v for k, v in first.items() if k != "run"}
            counts = {t: Counter() for t in header["targets"]}
        elif first["lowerkit_commit"] != header["lowerkit_commit"]:
            raise SystemExit(f"{journal}: run at {first['lowerkit_commit']}, the other shards "
                             f"at {header['lowerkit_commit']}: one summary needs one commit")
        header["lowerkit_dirty"] = header["lowerkit_dirty"] or first["lowerkit_dirty"]
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
            "failures": sorted(failures, key=lambda f: (f["n"], f["target"]))}


def _fuzz(runs: list[list[str]], timeout: float | None) -> int:
    """Each ``lowerkit fuzz`` argument list in its own child process, all at once (a shard
    each), stopped after ``timeout`` seconds: a journal keeps every outcome written, so a
    stopped run is summarised and resumed like a whole one."""
    import subprocess

    children = [subprocess.Popen([sys.executable, "-m", "lowerkit", *args]) for args in runs]
    deadline = None if timeout is None else time.monotonic() + timeout
    rc = 0
    for child in children:
        try:
            rc = rc or child.wait(timeout=None if deadline is None
                                  else max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            pass
    for child in children:
        if child.poll() is None:
            child.terminate()  # it finishes the item it is on (a compile may take a while)
    for child in children:
        try:
            child.wait(timeout=120)
        except subprocess.TimeoutExpired:
            child.kill()
            child.wait()
    return rc


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
    p.add_argument("--shards", type=int, default=1, metavar="N",
                   help="N child processes at once, each a shard (lowerkit fuzz --shard K/N) "
                   "with its own journal: on N cores, N times the programs an hour")
    p.add_argument("--isolate", action="store_true",
                   help="each item in a forked child (a native crash is that item's verdict)")
    p.add_argument("--item-timeout", type=float, default=None, metavar="S")
    p.add_argument("--timeout", type=float, default=None, metavar="SECONDS",
                   help="stop the fuzz run after SECONDS and summarise what it ran")
    a = p.parse_args(argv)

    from lowerkit.tools.bench import run_metadata

    journals = ([a.json.with_suffix(".jsonl")] if a.shards == 1 else
                [a.json.with_name(f"{a.json.stem}-shard{k}of{a.shards}.jsonl")
                 for k in range(1, a.shards + 1)])
    command = (f"lowerkit fuzz --examples {a.examples} --seed {a.seed} --target {a.target} "
               + (f"--json {journals[0]}" if a.shards == 1 else
                  f"--shard K/{a.shards} --json {a.json.stem}-shardKof{a.shards}.jsonl"))
    meta = run_metadata(" ".join([Path(sys.argv[0]).as_posix(), *(argv or sys.argv[1:])]))
    start = time.perf_counter()
    if a.stopped is not None:
        rc, seconds = 0, a.stopped
    else:
        extra = ((["--resume"] if a.resume else []) + (["--isolate"] if a.isolate else [])
                 + (["--item-timeout", str(a.item_timeout)] if a.item_timeout else []))
        runs = [["fuzz", "--examples", str(a.examples), "--seed", str(a.seed),
                 "--target", a.target, "--json", str(journal), *extra,
                 *([] if a.shards == 1 else ["--shard", f"{k}/{a.shards}"])]
                for k, journal in enumerate(journals, start=1)]
        rc = _fuzz(runs, a.timeout)
        seconds = time.perf_counter() - start
        if a.resume and a.json.exists():
            seconds += json.loads(a.json.read_text()).get("seconds") or 0
    summary = {"meta": meta, "fuzz_command": command, "seconds": seconds,
               "journal": [j.name for j in journals] if a.shards > 1 else journals[0].name,
               "shards": a.shards, **summarise(journals)}
    # the code that ran is the journals' (each one's first row is written as its run starts)
    meta.update(commit=summary["header"]["lowerkit_commit"],
                dirty=summary["header"]["lowerkit_dirty"])
    ran = min(c["programs"] for c in summary["targets"].values())
    summary["stopped_after"] = ran if ran < a.examples else None
    a.json.write_text(json.dumps(summary, indent=1) + "\n")
    return rc


if __name__ == "__main__":
    sys.exit(main())
