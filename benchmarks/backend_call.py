"""Where a small program's call through ``torch.compile(backend="lowerkit")`` goes (issue 18):
Dynamo's frame, AOTAutograd's and lowerkit's wrappers, and the artifact, each timed on its own.

    .venv/bin/python benchmarks/backend_call.py
    .venv/bin/python benchmarks/backend_call.py mlp,bert_tiny --json benchmarks/results/backend-call.json

Per model, interleaved round by round, medians of rounds of many calls (µs a call), under
``torch.inference_mode``:

- ``eager``: the model;
- ``artifact``: ``lowerkit.compile``'s artifact, called back to back;
- ``artifact after eager`` and ``artifact after an 8 MiB read``: the artifact's call alone
  (timed around it), each call right after an eager call or after reading 8 MiB of other
  memory: the same call when other work ran just before it, as it does in a real program,
  and when that work left nothing of the call's memory in the caches;
- ``Dynamo's floor``: ``torch.compile`` with a backend whose function returns a stored output:
  Dynamo's guards and frame handling alone, what any backend pays;
- ``artifact in Dynamo's frame``: ``torch.compile`` with a bare backend whose function calls
  the artifact with the user's inputs: the least any backend that runs this artifact pays;
- ``backend's function``: what lowerkit's backend returned to Dynamo, called directly with
  Dynamo's inputs: AOTAutograd's runtime wrapper, lowerkit's, and the graph's artifact;
- ``backend``: ``torch.compile(model, backend="lowerkit")``;
- ``floor, module guards skipped`` and ``backend, module guards skipped``: the floor and the
  backend compiled with torch's ``guard_filter_fn=skip_guard_on_inbuilt_nn_modules_unsafe``,
  which drops Dynamo's guards on the attributes of built-in modules (``torch.nn.Linear``'s,
  BatchNorm's): what a user who never changes those attributes after compiling can opt into.
  Parameters and buffers are still inputs of each call, read as they are then.

``--zoo`` times every zoo model (or those named) against issue 73's bar instead: ``eager``,
``artifact``, ``backend`` and ``Dynamo's floor`` only, each sample sized to ~``--sample-ms``
of calls, interleaved round by round, and per model ``limit`` = 1.1 × artifact + 20 µs,
``backend / limit`` (at most 1 meets the bar) and ``backend / eager`` (at most 1: the backend
is no slower than eager); where each graph ran (lowerkit, called direct or through
aot_autograd, or eager) and the CPU driver each program's first calls chose (``drivers``: the
Artifact's and each graph's; local-sync or local-task, `executable._HostPath`) are stored
beside them.

    OMP_WAIT_POLICY=PASSIVE LOWERKIT_TUNING_DB=off .venv/bin/python benchmarks/backend_call.py \
        --zoo --json benchmarks/results/backend-call-zoo-zen4.json

``wrappers`` is ``backend's function − artifact``; ``in Dynamo's frame`` is ``backend −
Dynamo's floor − backend's function``: what the same calls cost more when Dynamo makes them.
``backend / artifact`` is issue 18's ratio; ``backend / bare backend`` divides by ``artifact in
Dynamo's frame``: what lowerkit's backend costs over the least a backend can do; ``skipped /
artifact`` is issue 18's ratio with the built-in modules' guards skipped.
"""

from __future__ import annotations

import argparse
import statistics
import time
import warnings

from call_floor import _measure

COLUMNS = ("eager", "artifact", "artifact after eager", "artifact after an 8 MiB read",
           "Dynamo's floor", "artifact in Dynamo's frame", "backend's function", "backend",
           "floor, module guards skipped", "backend, module guards skipped",
           "wrappers", "in Dynamo's frame", "backend / artifact", "backend / bare backend",
           "skipped / artifact")
# torch's own filter (torch.compiler): no guards on built-in modules' attributes
SKIP_MODULE_GUARDS = "skip_guard_on_inbuilt_nn_modules_unsafe"
MODELS = ("mlp", "normalisations", "nonpersistent_buffer", "embedding_bag", "simple_cnn",
          "bert_tiny")


def _contenders(model, args) -> dict:
    import torch

    import lowerkit
    from lowerkit import backend as lowerkit_backend

    art = lowerkit.compile(model, args, target="cpu")
    out = model(*args)

    def floor_backend(gm, inputs):
        return lambda *a: (out,) if isinstance(out, torch.Tensor) else tuple(out)

    torch._dynamo.reset()
    floor = torch.compile(model, backend=floor_backend)
    floor(*args)

    def bare_backend(gm, inputs):
        # the user's tensors among Dynamo's inputs (which also hold the module's state)
        at = [next(i for i, x in enumerate(inputs) if x is a) for a in args]
        if isinstance(out, torch.Tensor):
            return lambda *a: (art(*[a[i] for i in at]),)
        return lambda *a: tuple(art(*[a[i] for i in at]))

    torch._dynamo.reset()
    bare = torch.compile(model, backend=bare_backend)
    bare(*args)

    def floor_skipped_backend(gm, inputs):  # its own backend: Dynamo keeps entries per backend
        return floor_backend(gm, inputs)

    skip = {"guard_filter_fn": getattr(torch.compiler, SKIP_MODULE_GUARDS)}
    torch._dynamo.reset()
    floor_skipped = torch.compile(model, backend=floor_skipped_backend, options=skip)
    floor_skipped(*args)
    torch._dynamo.reset()
    lowerkit_backend.reset()
    skipped = torch.compile(model, backend="lowerkit", options=skip)
    skipped(*args)

    captured: dict = {}

    def keep(gm, inputs):
        captured["fn"] = lowerkit_backend.backend(gm, inputs)
        captured["inputs"] = list(inputs)
        return captured["fn"]

    torch._dynamo.reset()
    lowerkit_backend.reset()
    compiled = torch.compile(model, backend=keep)
    compiled(*args)
    ran = [g.ran for g in lowerkit_backend.graphs()]
    if ran != ["lowerkit"]:
        raise RuntimeError(f"expected one graph in lowerkit, got {ran}")
    fn, inputs = captured["fn"], captured["inputs"]
    return {
        "eager": lambda: model(*args),
        "artifact": lambda: art(*args),
        "Dynamo's floor": lambda: floor(*args),
        "artifact in Dynamo's frame": lambda: bare(*args),
        "backend's function": lambda: fn(*inputs),
        "backend": lambda: compiled(*args),
        "floor, module guards skipped": lambda: floor_skipped(*args),
        "backend, module guards skipped": lambda: skipped(*args),
    }


ZOO_COLUMNS = ("eager", "artifact", "backend", "Dynamo's floor", "limit", "backend / limit",
               "backend / eager")


def _zoo_contenders(model, args, kwargs) -> tuple[dict, list[dict]]:
    """eager, the Artifact, the backend and Dynamo's floor for one zoo model, and what the
    backend did with each graph."""
    import torch

    import lowerkit
    from lowerkit import backend as lowerkit_backend

    art = lowerkit.compile(model, args, kwargs, target="cpu")
    out = model(*args, **kwargs)

    def floor_backend(gm, inputs):  # Dynamo's guards and frame: what any backend pays
        result = gm(*inputs)
        return lambda *a: result

    torch._dynamo.reset()
    floor = torch.compile(model, backend=floor_backend)
    floor(*args, **kwargs)
    torch._dynamo.reset()
    lowerkit_backend.reset()
    compiled = torch.compile(model, backend="lowerkit")
    got = compiled(*args, **kwargs)
    records = lowerkit_backend.graphs()
    graphs = [{"kind": g.kind, "ops": g.ops, "ran": g.ran, "direct": g.direct,
               "reason": g.reason.splitlines()[0][:200] if g.reason else None}
              for g in records]
    flat = [t for t in torch.utils._pytree.tree_leaves((out, got)) if isinstance(t, torch.Tensor)]
    half = len(flat) // 2
    for want, have in zip(flat[:half], flat[half:]):  # the backend's answer is eager's
        torch.testing.assert_close(have, want, rtol=1e-3, atol=1e-3)
    parts = {"eager": lambda: model(*args, **kwargs), "artifact": lambda: art(*args, **kwargs),
             "backend": lambda: compiled(*args, **kwargs),
             "Dynamo's floor": lambda: floor(*args, **kwargs)}
    # the CPU driver each program's first calls chose (`executable._HostPath`), once timed
    return parts, graphs, lambda: {"artifact": _driver(art),
                                   "backend": [_driver(g.artifact) for g in records]}


def _driver(art) -> str | None:
    """The driver serving ``art``'s calls: local-task, local-sync (the twin the trials chose,
    or the program's own), "undecided" while the trials run; None before it loads."""
    exe = getattr(art, "_executable", None)
    if exe is None:
        return None
    path = exe._host_path
    if path is None:
        return exe.driver
    chosen = path._chosen
    if chosen is None:
        return "undecided"
    if chosen == ("twin",) or (path._twin is not None and chosen is path._twin.loaded):
        return "local-sync"
    return exe.driver


def _sized(parts: dict, rounds: int, sample_s: float) -> dict[str, float]:
    """Median µs a call of each part, interleaved round by round, each sample ~``sample_s``."""
    reps = {}
    for name, fn in parts.items():
        fn()
        best = min(_timed(fn, 1) for _ in range(5))
        reps[name] = max(1, int(sample_s / max(best, 1e-7)))
        _timed(fn, max(1, reps[name] // 4))  # warm
    samples: dict[str, list[float]] = {name: [] for name in parts}
    for _ in range(rounds):
        for name, fn in parts.items():
            samples[name].append(_timed(fn, reps[name]) / reps[name] * 1e6)
    return {name: statistics.median(v) for name, v in samples.items()}


def _timed(fn, calls: int) -> float:
    start = time.perf_counter()
    for _ in range(calls):
        fn()
    return time.perf_counter() - start


def zoo(opts) -> int:
    """Issue 73's table: every zoo model's call through the backend against the Artifact's."""
    import os

    import torch
    from rich.console import Console
    from rich.table import Table

    from lowerkit.tools.bench import geomean, run_metadata, write_results, zoo_models
    from lowerkit.zoo import ZOO

    torch.set_num_threads(opts.threads)
    meta = run_metadata()
    names = opts.models.split(",") if opts.models else zoo_models()
    rows = []
    for name in names:
        model, args, kwargs = ZOO[name].make()
        with torch.inference_mode():
            parts, graphs, drivers = _zoo_contenders(model, args, kwargs)
            times = _sized(parts, opts.rounds, opts.sample_ms / 1e3)
            drivers = drivers()
        times["limit"] = 1.1 * times["artifact"] + 20.0
        times["backend / limit"] = times["backend"] / times["limit"]
        times["backend / eager"] = times["backend"] / times["eager"]
        rows.append({"model": name, **times, "graphs": graphs, "drivers": drivers,
                     "load": os.getloadavg()[0]})
        print(f"{name}: " + ", ".join(f"{c} {times[c]:.2f}" if "/" in c else f"{c} {times[c]:.1f}"
                                      for c in ZOO_COLUMNS)
              + f"; graphs {[g['ran'] + (' direct' if g['direct'] else '') for g in graphs]}"
              + f"; drivers {drivers}", flush=True)
    table = Table(title=f"µs a call, medians of {opts.rounds} interleaved rounds "
                        f"(samples of ~{opts.sample_ms:g} ms); limit = 1.1 × artifact + 20 µs")
    for column in ("model", *ZOO_COLUMNS, "graphs"):
        table.add_column(column, justify="left" if column in ("model", "graphs") else "right")
    for r in rows:
        ran = [g["ran"] + (" direct" if g["direct"] else "") for g in r["graphs"]]
        table.add_row(r["model"], *(f"{r[c]:.2f}" if "/" in c else f"{r[c]:.1f}"
                                    for c in ZOO_COLUMNS), ", ".join(ran) or "none")
    Console(width=200).print(table)
    over = [r["model"] for r in rows if r["backend / limit"] > 1]
    slower = [r["model"] for r in rows if r["backend / eager"] > 1]
    print(f"geomean backend / limit {geomean([r['backend / limit'] for r in rows]):.3f}, "
          f"backend / artifact {geomean([r['backend'] / r['artifact'] for r in rows]):.3f}, "
          f"backend / eager {geomean([r['backend / eager'] for r in rows]):.3f}; "
          f"over the limit: {over or 'none'}; slower than eager: {slower or 'none'}")
    if opts.json:
        write_results(opts.json, {"meta": meta, "rounds": opts.rounds,
                                  "sample_ms": opts.sample_ms, "models": rows})
        print(f"wrote {opts.json}")
    return 0


def _after(before, call, calls: int) -> float:
    """Median µs of ``call()`` alone, each call made right after ``before()``."""
    samples = []
    for _ in range(calls):
        before()
        start = time.perf_counter_ns()
        call()
        samples.append(time.perf_counter_ns() - start)
    return statistics.median(samples[calls // 10:]) / 1e3


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("models", nargs="?", default=None,
                        help=f"comma-separated zoo models (default: {','.join(MODELS)}; "
                             f"with --zoo, every zoo model)")
    parser.add_argument("--threads", type=int, default=2, help="torch threads (default 2)")
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--calls", type=int, default=2000, help="calls a sample")
    parser.add_argument("--json", metavar="FILE", help="store the run (benchmarks/readme.py)")
    parser.add_argument("--zoo", action="store_true",
                        help="issue 73's table: eager, artifact, backend and Dynamo's floor, "
                             "against 1.1 × artifact + 20 µs (default: every zoo model)")
    parser.add_argument("--sample-ms", type=float, default=10.0,
                        help="--zoo: each sample's length (default 10 ms)")
    opts = parser.parse_args(argv)
    warnings.filterwarnings("ignore")
    if opts.zoo:
        return zoo(opts)
    opts.models = opts.models or ",".join(MODELS)

    import torch
    from rich.console import Console
    from rich.table import Table

    from lowerkit.tools.bench import run_metadata, write_results
    from lowerkit.zoo import ZOO

    torch.set_num_threads(opts.threads)
    meta = run_metadata()
    rows = []
    columns = COLUMNS
    table = Table(title=f"µs a call, medians of {opts.rounds} rounds of {opts.calls} calls")
    for column in ("model", *columns):
        table.add_column(column, justify="left" if column == "model" else "right")
    import numpy as np
    other = np.ones(8 << 20, np.uint8)
    for name in opts.models.split(","):
        model, args, _ = ZOO[name].make()
        with torch.inference_mode():
            contenders = _contenders(model, args)
            times = _measure(contenders, opts.rounds, opts.calls)
            art = contenders["artifact"]
            times["artifact after eager"] = _after(contenders["eager"], art, opts.calls)
            times["artifact after an 8 MiB read"] = _after(other.sum, art, opts.calls)
        times["wrappers"] = times["backend's function"] - times["artifact"]
        times["in Dynamo's frame"] = (times["backend"] - times["Dynamo's floor"]
                                      - times["backend's function"])
        times["backend / artifact"] = times["backend"] / times["artifact"]
        times["backend / bare backend"] = times["backend"] / times["artifact in Dynamo's frame"]
        times["skipped / artifact"] = times["backend, module guards skipped"] / times["artifact"]
        rows.append({"model": name, **times})
        table.add_row(name, *(f"{times[c]:.2f}" if "/" in c else f"{times[c]:.1f}"
                              for c in columns))
    Console(width=200).print(table)
    if opts.json:
        write_results(opts.json, {"meta": meta, "rounds": opts.rounds, "calls": opts.calls,
                                  "models": rows})
        print(f"wrote {opts.json}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
