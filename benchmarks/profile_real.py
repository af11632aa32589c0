"""Where the real-shape set's calls go, dispatch by dispatch (issue 22, `lowerkit profile`).

    .venv/bin/python benchmarks/profile_real.py --json benchmarks/results/profile-real.json
    .venv/bin/python benchmarks/profile_real.py --models whisper_encoder_1500,vit_b_stack

Each model of `lowerkit.zoo.real_shapes` (those whose library is installed) is compiled for the
cpu target (cache off), checked against eager, and run under IREE's runtime profiling
(`lowerkit.tools.profile.profile_artifact`): every dispatch's time inside the call, per call.
"""

from __future__ import annotations

import argparse
import json
import warnings


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", help="comma-separated names (default: the whole set)")
    parser.add_argument("--seconds", type=float, default=2.0,
                        help="profile each model for about this long (default: 2)")
    parser.add_argument("--json", metavar="FILE")
    opts = parser.parse_args(argv)
    warnings.filterwarnings("ignore")

    import torch
    from rich.console import Console

    import lowerkit
    from lowerkit.runtime.numerics import compare
    from lowerkit.tools.bench import run_metadata
    from lowerkit.tools.profile import profile_artifact
    from lowerkit.zoo.real_shapes import available

    torch.set_num_threads(2)
    meta = run_metadata()
    found, missing = available()
    wanted = opts.models.split(",") if opts.models else [m.name for m in found]
    console = Console(width=150)
    rows = []
    for entry in found:
        if entry.name not in wanted:
            continue
        model, args = entry.make()[:2]
        with console.status(f"{entry.name}: compiling and profiling"):
            art = lowerkit.compile(model, args, target="cpu", cache=False)
            with torch.no_grad():
                matches = compare(art(*args), model(*args)).ok
            prof = profile_artifact(art, args, seconds=opts.seconds)
        console.print(prof.table(top=8, title=f"{entry.name}: each dispatch inside a call"))
        rows.append({"name": entry.name, "matches_eager": matches, **prof.to_json()})
    if opts.json:
        with open(opts.json, "w") as f:
            json.dump({"meta": meta, "missing": missing, "rows": rows}, f, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
