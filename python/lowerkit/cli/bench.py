"""``lowerkit bench MODEL|zoo``: eager, torch.compile and lowerkit timed in one process."""

from __future__ import annotations

import argparse
import json
import math


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("model", help="zoo model name(s) (comma-separated), FILE.py:FACTORY, 'zoo', "
                                 "'real' (issue 22's real-shape set, lowerkit.zoo.real_shapes), "
                                 "or 'real-models' (torchvision and timm at published sizes, "
                                 "lowerkit.zoo.real_models; a comma-separated list of them too)")
    p.add_argument("--target", default="cpu", help="lowerkit's target (default: cpu)")
    p.add_argument("--slow", action="store_true", help="with 'zoo': include models tagged slow")
    p.add_argument("--rounds", type=int, default=15, help="interleaved rounds (default: 15)")
    p.add_argument("--no-torch-compile", action="store_true", help="leave torch.compile out")
    p.add_argument("--no-gemm", action="store_true", help="with 'zoo': leave the GEMM line out")
    p.add_argument("--gemm-size", type=int, default=1024)
    p.add_argument("--json", default=None, metavar="FILE", help="write the results as JSON")
    p.add_argument("--settle-ms", type=float, default=None,
                   help="idle before each timed sample, so that no contender pays for the "
                        "threads of the one before it (default: 30)")
    p.add_argument("--peers", action="store_true",
                   help="also time OpenVINO (where installed: the `bench` extra) and lowerkit's "
                        "import compiled with IREE's defaults (`bench.PEERS`)")
    p.add_argument("--tuned", default=None, metavar="DB",
                   help="add lowerkit compiling with this tuning database (lowerkit tune's) as "
                        "a contender, 'lowerkit-tuned'; 'lowerkit' reads the default one "
                        "(LOWERKIT_TUNING_DB=off: none)")
    p.add_argument("--torch-threads", type=int, default=None,
                   help="torch.set_num_threads for eager and torch.compile (default: torch's)")


def _command(args: argparse.Namespace, settle_s: float) -> str:
    """This run as a command with every option spelled out, defaults included (the process's
    own argv may be another program's, e.g. pytest's)."""
    import shlex

    words = [".venv/bin/lowerkit", "bench", args.model, "--target", args.target,
             "--rounds", str(args.rounds), "--settle-ms", f"{settle_s * 1e3:g}",
             "--gemm-size", str(args.gemm_size)]
    if args.torch_threads:
        words += ["--torch-threads", str(args.torch_threads)]
    words += [flag for flag, on in (("--slow", args.slow), ("--no-gemm", args.no_gemm),
                                    ("--no-torch-compile", args.no_torch_compile),
                                    ("--peers", getattr(args, "peers", False))) if on]
    if getattr(args, "tuned", None):
        words += ["--tuned", args.tuned]
    return shlex.join(words + (["--json", args.json] if args.json else []))


def _ms(seconds: float) -> str:
    return "-" if not math.isfinite(seconds) else f"{seconds * 1e3:.3f}"


def _ratio(x: float) -> str:
    if not math.isfinite(x):
        return "-"
    colour = "green" if x >= 1.0 else "red"
    return f"[{colour}]{x:.2f}×"


def _real_models() -> dict:
    from lowerkit.zoo.real_models import REAL_MODELS

    return REAL_MODELS


def main(args: argparse.Namespace) -> int:
    import torch
    from rich.console import Console
    from rich.table import Table

    from lowerkit.tools import bench
    from lowerkit.zoo import ZOO

    console = Console(width=None if Console().is_terminal else 200)
    if args.torch_threads:
        torch.set_num_threads(args.torch_threads)
    contenders = tuple(c for c in bench.CONTENDERS
                       if not (args.no_torch_compile and c == "torch.compile"))
    if getattr(args, "peers", False):
        contenders += tuple(c for c in bench.PEERS
                            if c != "openvino" or bench.openvino_available())
        if not bench.openvino_available():
            console.print("[yellow]OpenVINO left out: not installed (pip install -e '.[bench]')")
    if getattr(args, "tuned", None):
        import os

        if not os.path.exists(args.tuned):
            console.print(f"[red]--tuned {args.tuned}: no such tuning database")
            return 2
        bench.TUNED_DATABASE = args.tuned
        contenders += (bench.TUNED,)
    if args.model == "zoo":
        cases = [(n, ZOO[n].make) for n in bench.zoo_models(include_slow=args.slow)]
    elif args.model == "real":
        from lowerkit.zoo.real_shapes import available

        found, missing = available()
        cases = [(m.name, m.make) for m in found]
        for name, why in missing.items():
            console.print(f"[yellow]{name} left out: {why}")
    elif args.model == "real-models" or all(
            n in _real_models() for n in args.model.split(",")):
        from lowerkit.zoo.real_models import available

        found, missing = available(None if args.model == "real-models"
                                   else args.model.split(","))
        cases = [(m.name, m.make) for m in found]
        for name, why in missing.items():
            console.print(f"[yellow]{name} left out: {why}")
    elif all(n in ZOO for n in args.model.split(",")):
        cases = [(n, ZOO[n].make) for n in args.model.split(",")]
    else:
        from ._factory import load_case

        def make(spec=args.model):
            case = load_case(spec)
            return case.fn, case.args, case.kwargs
        cases = [(args.model.rpartition(":")[2], make)]

    settle = bench.SETTLE_S if args.settle_ms is None else args.settle_ms / 1e3
    meta = bench.run_metadata(_command(args, settle))  # before the run: its load, not the run's
    with console.status("loading the compilers and runtimes"):
        bench.warm_up(args.target, contenders)
    results = []
    failed_factories: dict[str, str] = {}
    for name, make in cases:
        with console.status(f"bench {name}: compiling and timing {', '.join(contenders)}"):
            try:
                model, margs, mkwargs = make()
            except Exception as e:  # noqa: BLE001 - one model's library failing ends no run
                console.print(f"[red]{name}: its factory failed, left out: "
                              f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}")
                failed_factories[name] = f"{type(e).__name__}: {e}"[:300]
                continue
            results.append(bench.bench_model(name, model, margs, mkwargs, target=args.target,
                                             contenders=contenders, rounds=args.rounds,
                                             settle_s=settle))
        r = results[-1]
        if args.json:  # as we go, so that an interrupted run keeps what it measured
            with open(args.json, "w") as f:
                json.dump({"meta": meta, "target": args.target, "partial": True,
                           "models": [x.to_json() for x in results]}, f, indent=1)
        console.print(f"{name}: lowerkit {_ms(r.median('lowerkit'))} ms, eager "
                      f"{_ms(r.median('eager'))} ms" + (f" [red]{r.errors}" if r.errors else ""),
                      highlight=False)

    gemm = None
    reference = None
    if (args.model == "zoo" and not args.no_gemm) or args.model == "gemm":
        from lowerkit.zoo.ops import gemm as gemm_factory

        n = args.gemm_size
        with console.status(f"GEMM {n}x{n}x{n} and a large torch.mm on every core"):
            reference = bench.torch_mm_gflops()
            model, margs = gemm_factory(n)
            gemm = bench.bench_model(f"gemm {n}³", model, margs, target=args.target,
                                     contenders=contenders, rounds=max(5, args.rounds // 3),
                                     flops=2.0 * n ** 3, settle_s=settle)

    import os

    load = os.getloadavg()[0]
    table = Table(title=f"lowerkit bench → {args.target}, batch 1, {torch.get_num_threads()} "
                        f"torch threads (lowerkit: IREE's workers on every core), "
                        f"{os.cpu_count()} cores, load average {load:.1f}, "
                        f"{settle * 1e3:.0f} ms settle before each sample "
                        "(median per call, ± interquartile spread)")
    peers = [c for c in contenders if c in (*bench.PEERS, bench.TUNED)]
    for col in ("model", "eager ms", "torch.compile ms", "lowerkit ms", "× eager",
                "× torch.compile", *[f"{p} ms" for p in peers], *[f"× {p}" for p in peers],
                "lowerkit compile s cold/cached", "inductor compile s cold/cached",
                "peak MiB added e/tc/lk"):
        table.add_column(col, justify="left" if col == "model" else "right")

    def row(r):
        def t(c):
            tm = r.timings.get(c)
            if tm is None:
                return "[red]failed" if c in r.errors else "-"
            return f"{_ms(tm.median)} ±{tm.spread * 100:.0f}%"

        def cc(c):
            cold, cached = r.compile_cold.get(c), r.compile_cached.get(c)
            return "-" if cold is None else f"{cold:.2f} / {cached:.2f}"

        mem = "/".join("-" if r.peak_memory_mb.get(c) is None else f"{r.peak_memory_mb[c]:.0f}"
                       for c in bench.CONTENDERS)
        table.add_row(r.model, t("eager"), t("torch.compile"), t("lowerkit"),
                      _ratio(r.speedup("lowerkit", "eager")),
                      _ratio(r.speedup("lowerkit", "torch.compile")),
                      *[t(p) for p in peers], *[_ratio(r.speedup("lowerkit", p)) for p in peers],
                      cc("lowerkit"), cc("torch.compile"), mem)

    for r in results:
        row(r)
    if len(results) > 1:
        g_e = bench.geomean([r.speedup("lowerkit", "eager") for r in results])
        g_c = bench.geomean([r.speedup("lowerkit", "torch.compile") for r in results])
        table.add_section()
        g_p = [_ratio(bench.geomean([r.speedup("lowerkit", p) for r in results]))
               for p in peers]
        table.add_row(f"geomean ({len(results)} models)", "", "", "", _ratio(g_e), _ratio(g_c),
                      *[""] * len(peers), *g_p, "", "", "")
    if gemm is not None:
        table.add_section()
        row(gemm)
    console.print(table)
    if gemm is not None:
        parts = [f"{c} {gemm.flops / gemm.median(c) / 1e9:.1f}" for c in gemm.timings]
        console.print(f"GEMM {args.gemm_size}³ GFLOP/s: " + ", ".join(parts) +
                      f"; a 2048³ torch.mm on every core {reference:.1f} GFLOP/s (a reference, "
                      "not the machine's peak)")
    for base in ("eager", *[p for p in peers if p == "iree-defaults"]):
        slower = [r.model for r in results if r.speedup("lowerkit", base) < 1.0]
        if slower:
            console.print(f"[yellow]slower than {base}: {', '.join(slower)}")
    off_fast = [f"{r.model} ({name}: {rung})" for r in results
                for name, rung in r.rungs.items() if rung != "fast"]
    if off_fast:
        console.print(f"[yellow]compiled off the fast rung: {', '.join(off_fast)}")
    if bench.TUNED in peers:
        tuned_vs = {b: bench.geomean([r.speedup(bench.TUNED, b) for r in results])
                    for b in ("eager", "torch.compile", "openvino", "iree-defaults") if b in
                    contenders}
        console.print(f"{bench.TUNED} (the database {args.tuned}), geomean: " + ", ".join(
            f"{v:.2f}× {b}" for b, v in tuned_vs.items()))
        slower = [r.model for r in results if r.speedup(bench.TUNED, "eager") < 1.0]
        if slower:
            console.print(f"[yellow]{bench.TUNED} slower than eager: {', '.join(slower)}")
    if args.json:
        out = {"meta": meta, "target": args.target, "threads": torch.get_num_threads(),
               "load_average": load, "settle_s": settle,
               "models": [r.to_json() for r in results], "failed_factories": failed_factories,
               "gemm": gemm.to_json() if gemm else None, "torch_mm_gflops": reference}
        if len(results) > 1:
            out["geomean_vs_eager"] = bench.geomean([r.speedup("lowerkit", "eager") for r in results])
            out["geomean_vs_torch_compile"] = bench.geomean(
                [r.speedup("lowerkit", "torch.compile") for r in results])
            for p in peers:
                out[f"geomean_vs_{p.replace('-', '_')}"] = bench.geomean(
                    [r.speedup("lowerkit", p) for r in results])
            if bench.TUNED in peers:
                out["tuned_geomean"] = tuned_vs
        with open(args.json, "w") as f:
            json.dump(out, f, indent=1)
        console.print(f"wrote {args.json}")
    return 0 if not (failed_factories or any(r.errors for r in results)) else 1
