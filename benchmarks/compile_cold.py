"""Model to first result (issue 19): cold, warm-process, new weights and cached, per stage, with
the vmfb's size and the compile's peak memory. Each model runs in a fresh process.

    .venv/bin/python benchmarks/compile_cold.py resnet18,resnet50,mobilenet_v2,bert_base,gpt2_base \\
        --json benchmarks/results/compile-cold.json

In that process, for each model (random weights, batch 1):

1. ``cold``: ``lowerkit.compile`` with a fresh compile cache (a miss: everything runs), then
   the first call, checked against eager. ``import torch, lowerkit`` has run (reported apart,
   as ``python imports``); whatever lowerkit loads lazily is in the cold column, as in a
   user's first compile.
2. ``warm``: the same architecture with other weights, compiled again with the cache off:
   what a process that has compiled before pays for a change to the model.
3. ``new weights``: another checkpoint through the warm cache (the fingerprint answers: the
   code is reused, the weights bound) and its first call, checked against eager.
4. ``program key``: the same after forgetting the fingerprints: traced and imported again,
   then found by the program key, without compiling.
5. ``new process``: then another fresh process, with that warm cache, builds the model with
   other weights and compiles and calls it: seconds from its start (the parent's clock before
   it is spawned: the interpreter's start, ``import torch, lowerkit`` and building the model
   included) to its first result, checked against eager after the clock stops (issue 73).

``--inductor``: each run also compiles the model with ``torch.compile`` (Inductor, its own
caches in a new empty folder) in a fresh process, from after ``import torch`` and building the
model to its first result under ``torch.no_grad()``, checked against eager: the ``cold``
column's peer.

Peak memory is the largest resident set of the process, and of any one of its children
(iree-compile, and the forked children that run stages in isolation, whose pages shared with
the parent count), over the whole run (``getrusage``). ``--json`` stores everything with the run's
provenance for ``benchmarks/readme.py``.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _models() -> dict:
    """name -> () -> (model, args): the zoo's, and the two base-sized transformers."""
    import torch

    from lowerkit.zoo import ZOO
    from lowerkit.zoo.language import GPT2, Bert

    def bert_base():
        torch.manual_seed(0)
        ids = torch.randint(0, 30522, (1, 128))
        return Bert(30522, 768, 12, 12, 512).eval(), (ids, torch.ones(1, 128, dtype=torch.int64))

    def gpt2_base():
        torch.manual_seed(0)
        return GPT2(50257, 768, 12, 12, 1024).eval(), (torch.randint(0, 50257, (1, 128)),)

    def zoo(name):
        def make():
            model, args, kwargs = ZOO[name].make()
            assert not kwargs
            return model, args
        return make

    out = {name: zoo(name) for name in ZOO}
    out.update(bert_base=bert_base, gpt2_base=gpt2_base)
    return out


def script_options(doc: str, argv: list[str] | None, models: list[str], count: str,
                   default: int, help: str) -> argparse.Namespace:
    """The options of the scripts that use `each_model`: ``--models``, a count (``--rounds``
    or ``--repeats``: ``count``) and ``--json``. Warnings are silenced: the tables are the
    output."""
    parser = argparse.ArgumentParser(description=doc.splitlines()[0])
    parser.add_argument("--models", default=",".join(models))
    parser.add_argument(f"--{count}", type=int, default=default, help=help)
    parser.add_argument("--json", metavar="FILE")
    opts = parser.parse_args(argv)
    warnings.filterwarnings("ignore")
    return opts


def each_model(names: str, doing: str, bench) -> tuple[dict, list[dict], "object"]:
    """For the scripts that measure these models in one process (weights_call.py,
    executable_kinds.py): torch on 2 threads, the run's provenance, then ``bench(name,
    factory)`` for each comma-separated name under a status line. (meta, rows, console)."""
    import torch
    from rich.console import Console

    from lowerkit.tools.bench import run_metadata

    torch.set_num_threads(2)
    meta = run_metadata()
    factories = _models()
    console = Console(width=160)
    rows = []
    for name in names.split(","):
        with console.status(f"{name}: {doing}"):
            rows.append(bench(name, factories[name]))
    return meta, rows, console


def store(path: str, meta: dict, rows: list[dict], **settings) -> None:
    """The run for benchmarks/readme.py: provenance, the script's settings, the load average
    at the end and every model's row."""
    from lowerkit.tools.bench import write_results

    write_results(path, {"meta": meta, **settings, "models": rows})
    print(f"wrote {path}")


def _first_result(art, model, args) -> tuple[float, bool, str]:
    import torch

    from lowerkit.runtime.numerics import compare

    start = time.perf_counter()
    got = art(*args)
    seconds = time.perf_counter() - start
    with torch.no_grad():
        result = compare(got, model(*args))
    return seconds, result.ok, str(result)


def _reseed(model) -> None:
    """Other weights, same architecture: what a fine-tuned checkpoint is."""
    import torch

    with torch.no_grad():
        for p in model.parameters():
            p.add_(torch.randn_like(p) * 0.01 * (p.abs().mean() + 1e-3))


def one(name: str, convolutions: str | None = None) -> dict:
    """All the measurements of one model, in this (fresh) process."""
    import_start = time.perf_counter()
    import torch  # noqa: F401

    import lowerkit
    imports = time.perf_counter() - import_start
    warnings.simplefilter("ignore")
    make = _models()[name]
    model, args = make()
    weights_mib = sum(t.numel() * t.element_size() for t in
                      [*model.parameters(), *model.buffers()]) / 2**20
    cache_dir = tempfile.mkdtemp(prefix="lowerkit-cold-")
    out: dict = {"model": name, "python_imports_s": imports, "weights_mib": weights_mib}

    def timed(label, model, use_cache):
        start = time.perf_counter()
        art = lowerkit.compile(model, args, cache=cache_dir if use_cache else False,
                               convolutions=convolutions)
        compile_s = time.perf_counter() - start
        call_s, ok, message = _first_result(art, model, args)
        out[label] = {"compile_s": compile_s, "first_call_s": call_s,
                      "to_first_result_s": compile_s + call_s, "matches_eager": ok,
                      "check": message, "cache": art.cache_note,
                      "stages": {r.name: r.seconds for r in art.records}}
        return art

    art = timed("cold", model, True)
    # Only now: lowerkit loads these lazily inside the first compile, as it does for a user
    # (importing them before the clock left out of the cold column the sympy and
    # torch.fx.experimental modules they bring, 0.44 s on a Zen 4 host).
    from lowerkit import cache as cache_module
    from lowerkit import tuning
    out["vmfb_bytes"] = len(art.vmfb)
    out["parameters"] = len(art.parameters)
    out["dispatches"] = (art.compile_stats or {}).get("dispatches")
    # how its dense 2-D convolutions were compiled (lowerkit's own choice when none was asked)
    out["convolutions"] = (art.compile_stats or {}).get("convolutions") or tuning.RULE
    warm_model, _ = make()
    _reseed(warm_model)
    timed("warm", warm_model, False)
    new_model, _ = make()
    _reseed(new_model)
    timed("new_weights", new_model, True)
    cache_module.CompileCache(cache_dir).forget()
    timed("program_key", new_model, True)
    out["peak_rss_mib"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    out["peak_rss_children_mib"] = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    out["cache_dir"] = cache_dir
    return out


def second(name: str, cache_dir: str, spawned: float) -> dict:
    """Step 5, in a fresh process: ``spawned`` is the parent's ``time.time()`` before it
    started this one."""
    import torch  # noqa: F401

    import lowerkit
    imported = time.time()
    warnings.simplefilter("ignore")
    model, args = _models()[name]()
    _reseed(model)
    built = time.time()
    art = lowerkit.compile(model, args, cache=cache_dir)
    compiled = time.time()
    call_s, ok, message = _first_result(art, model, args)
    return {"to_first_result_s": compiled - spawned + call_s, "imports_s": imported - spawned,
            "build_s": built - imported, "compile_s": compiled - built,
            "first_call_s": call_s, "cache": art.cache_note, "matches_eager": ok,
            "check": message}


def inductor(name: str) -> dict:
    """Inductor's cold compile of one model, in this (fresh) process."""
    import torch

    from lowerkit.runtime.numerics import compare

    warnings.simplefilter("ignore")
    model, args = _models()[name]()
    start = time.perf_counter()
    compiled = torch.compile(model)
    with torch.no_grad():
        got = compiled(*args)
    seconds = time.perf_counter() - start
    with torch.no_grad():
        result = compare(got, model(*args))
    return {"to_first_result_s": seconds, "matches_eager": result.ok, "check": str(result)}


def median_and_range(row: dict, step: str) -> str:
    """A step run once per repeat: the median of its runs, their range in brackets."""
    runs = row.get(f"{step}_runs_s") or ([row[step]["to_first_result_s"]] if step in row else [])
    if not runs:
        return "-"
    text = f"{statistics.median(runs):.2f}"
    return text + (f" ({min(runs):.2f}–{max(runs):.2f})" if len(runs) > 1 else "")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("models", help="comma-separated: zoo names, bert_base, gpt2_base")
    p.add_argument("--json", metavar="FILE")
    p.add_argument("--convolutions", choices=("rule", "data-tiled", "im2col"), default=None,
                   help="lowerkit.compile's convolutions= (default: lowerkit's own choice)")
    p.add_argument("--repeats", type=int, default=1,
                   help="fresh processes per model; the run of median cold time is kept, with "
                        "every run's cold time beside it (iree-compile's time on these 2-core "
                        "hosts varies by a second from run to run)")
    p.add_argument("--one", help=argparse.SUPPRESS)  # the per-model child process
    p.add_argument("--inductor", action="store_true",
                   help="also time Inductor's cold compile of each model, in a fresh process")
    p.add_argument("--second", nargs=3, help=argparse.SUPPRESS)  # NAME CACHE SPAWNED: step 5
    p.add_argument("--inductor-one", help=argparse.SUPPRESS)
    a = p.parse_args()
    if a.one:
        print(json.dumps(one(a.one, a.convolutions)))
        return
    if a.second:
        print(json.dumps(second(a.second[0], a.second[1], float(a.second[2]))))
        return
    if a.inductor_one:
        print(json.dumps(inductor(a.inductor_one)))
        return
    os.environ.setdefault("XDG_RUNTIME_DIR", tempfile.gettempdir())
    from rich.console import Console
    from rich.table import Table

    from lowerkit.tools.bench import run_metadata

    meta = run_metadata()
    console = Console()
    results = []
    for name in a.models.split(","):
        runs, error = [], None
        for i in range(a.repeats):
            with console.status(f"{name}: cold, warm, new weights, program key "
                                f"(run {i + 1} of {a.repeats})"):
                done = subprocess.run([sys.executable, __file__, "x", "--one", name,
                                       *(["--convolutions", a.convolutions] if a.convolutions
                                         else [])],
                                      capture_output=True, text=True, cwd=ROOT)
            if done.returncode != 0:
                error = done.stderr[-3000:]
                break
            runs.append(json.loads(done.stdout.strip().splitlines()[-1]))
            with console.status(f"{name}: a new process with the warm cache (run {i + 1})"):
                spawned = time.time()
                done = subprocess.run([sys.executable, __file__, "x", "--second", name,
                                       runs[-1]["cache_dir"], repr(spawned)],
                                      capture_output=True, text=True, cwd=ROOT)
            if done.returncode != 0:
                error = done.stderr[-3000:]
                break
            runs[-1]["new_process"] = json.loads(done.stdout.strip().splitlines()[-1])
            shutil.rmtree(runs[-1].pop("cache_dir"), ignore_errors=True)
            if a.inductor:
                caches = tempfile.mkdtemp(prefix="inductor-cold-")
                with console.status(f"{name}: Inductor, cold (run {i + 1})"):
                    done = subprocess.run(
                        [sys.executable, __file__, "x", "--inductor-one", name],
                        capture_output=True, text=True, cwd=ROOT,
                        env={**os.environ, "TORCHINDUCTOR_CACHE_DIR": caches})
                shutil.rmtree(caches, ignore_errors=True)
                if done.returncode != 0:
                    error = done.stderr[-3000:]
                    break
                runs[-1]["inductor_cold"] = json.loads(done.stdout.strip().splitlines()[-1])
        if error is not None:
            console.print(f"[red]{name} failed:[/red]\n{error}")
            results.append({"model": name, "error": error})
            continue
        runs.sort(key=lambda r: r["cold"]["to_first_result_s"])
        chosen = runs[(len(runs) - 1) // 2]  # the median (the lower one of an even count)
        if a.repeats > 1:
            chosen["cold_runs_s"] = [r["cold"]["to_first_result_s"] for r in runs]
            chosen["new_process_runs_s"] = [r["new_process"]["to_first_result_s"] for r in runs]
            if a.inductor:
                chosen["inductor_cold_runs_s"] = [r["inductor_cold"]["to_first_result_s"]
                                                  for r in runs]
        results.append(chosen)
    table = Table(title=f"model to first result, seconds (load average {meta['load_average'][0]:.1f} "
                        f"at the start, {os.cpu_count()} cores)")
    for col in ("model", "weights MiB", "vmfb KiB", "cold", "Inductor cold", "warm", "new weights",
                "program key", "new process", "torch-import", "iree-compile", "peak RSS MiB",
                "largest child RSS MiB", "eager?"):
        table.add_column(col, justify="right")
    for r in results:
        if "error" in r:
            table.add_row(r["model"], *["-"] * 12, "[red]failed")
            continue
        table.add_row(
            r["model"], f"{r['weights_mib']:.0f}", f"{r['vmfb_bytes'] / 1024:.0f}",
            f"{r['cold']['to_first_result_s']:.2f}" + (
                f" ({min(r['cold_runs_s']):.2f}–{max(r['cold_runs_s']):.2f})"
                if "cold_runs_s" in r else ""),
            median_and_range(r, "inductor_cold"),
            *(f"{r[k]['to_first_result_s']:.2f}" for k in ("warm", "new_weights", "program_key")),
            median_and_range(r, "new_process"),
            f"{r['cold']['stages'].get('torch-import', 0):.2f}",
            f"{r['cold']['stages'].get('iree-compile', 0):.2f}",
            f"{r['peak_rss_mib']:.0f}", f"{r['peak_rss_children_mib']:.0f}",
            "yes" if all(r[k]["matches_eager"] for k in ("cold", "warm", "new_weights", "program_key",
                                                         "new_process", "inductor_cold") if k in r)
            else "[red]NO")
    console.print(table)
    if a.json:
        Path(a.json).write_text(json.dumps({"meta": meta, "convolutions": a.convolutions or "default",
                                            "repeats": a.repeats, "inductor": a.inductor,
                                            "models": results}, indent=1))
        console.print(f"wrote {a.json}")


if __name__ == "__main__":
    main()
