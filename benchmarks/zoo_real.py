"""The real-size zoo (`lowerkit.zoo.real`) on this host, stored with its provenance.

    .venv/bin/python benchmarks/zoo_real.py --journal zoo-real.jsonl --json benchmarks/results/zoo-real.json
    .venv/bin/python benchmarks/zoo_real.py --shard 2/4 --journal shard2.jsonl --resume ...
    .venv/bin/python benchmarks/zoo_real.py --from-journals shard1.jsonl shard2.jsonl --json ...

Each model runs in a forked child with a time limit (`lowerkit zoo --real --isolate`), so a
crash or a hang is that model's row. The whole zoo takes over an hour on 2 cores; shards of it
run one after another resume from their journals, and ``--from-journals`` stores what they
hold (a model in a later journal replaces its row from an earlier one). The stored rows keep
each model's stage, verdict, error against eager, the float64 judgement where the fixed
tolerance missed (`lowerkit.runtime.numerics.judge_by_float64`) and its seconds.
"""

from __future__ import annotations

import argparse
import json
import warnings


def _rows_of_journals(paths: list[str]) -> dict[str, dict]:
    rows: dict[str, dict] = {}
    for path in paths:
        with open(path) as f:
            for line in f:
                r = json.loads(line)
                if "key" in r:
                    rows[r["key"]] = r
    return rows


def _row(r: dict) -> dict:
    data = r.get("data") or r
    return {"name": r["key"], "status": r["status"], "ok": r["status"] == "ok",
            "stage": r.get("stage"), "message": r.get("message") or "",
            "rung": data.get("rung"), "max_rel_error": data.get("max_rel_error"),
            "compile_s": data.get("compile_seconds"),
            "seconds": (r.get("run") or {}).get("seconds")}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--json", required=True, help="where to store the run")
    p.add_argument("--journal", help="the run's journal (JSON Lines), one outcome a model")
    p.add_argument("--resume", action="store_true", help="skip the models the journal has")
    p.add_argument("--shard", default=None, help="K/N or auto/N: one shard of the zoo")
    p.add_argument("--item-timeout", type=float, default=900.0, help="seconds a model may run")
    p.add_argument("--from-journals", nargs="+", metavar="JOURNAL",
                   help="store these journals' outcomes instead of running")
    opts = p.parse_args()

    from lowerkit.tools.bench import run_metadata, write_results
    from lowerkit.zoo.real import real_zoo

    meta = run_metadata()
    zoo = real_zoo()
    if opts.from_journals:
        journals = opts.from_journals
    else:
        from lowerkit.tools import executor
        from lowerkit.zoo.coverage import ZooJob

        if not opts.journal:
            p.error("--journal is needed to run (a run of the zoo resumes from it)")
        by_name = {m.name: m for m in zoo}
        items = [executor.Item(m.name, timeout_s=opts.item_timeout) for m in zoo]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            executor.run_items(ZooJob("cpu", by_name), items,
                               executor.InProcessExecutor(isolate=True), journal=opts.journal,
                               header={"journal": "benchmarks/zoo_real.py",
                                       "run": {"job": "zoo", "target": "cpu"}},
                               resume=opts.resume, shard=executor.parse_shard(opts.shard),
                               on_outcome=lambda o: print(o.status, o.key, flush=True))
        journals = [opts.journal]
    found = _rows_of_journals(journals)
    rows = [_row(found[m.name]) for m in zoo if m.name in found]
    write_results(opts.json, {"meta": meta, "journals": journals, "zoo": [m.name for m in zoo],
                              "rows": rows})
    print(f"{sum(r['ok'] for r in rows)} of {len(rows)} run ({len(zoo)} in the zoo) match "
          f"eager; stored in {opts.json}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
