"""Where a small program's call goes (issue 7): eager against lowerkit, and lowerkit's call
split into the parts IREE's Python bindings cost and the part its kernels cost.

    .venv/bin/python benchmarks/call_floor.py                       # the zoo's single-op programs
    .venv/bin/python benchmarks/call_floor.py cumsum,index_ops --threads 2
    .venv/bin/python benchmarks/call_floor.py --json benchmarks/results/call-floor.json

For each program, each part is timed on its own, interleaved with the others, as a median of
rounds of many calls (µs a call):

- ``eager``: the model in eager PyTorch;
- ``lowerkit``: ``Artifact.__call__`` (what a user pays);
- ``wrap in``: handing the inputs to IREE (a ``VmVariantList`` and a buffer copy each);
- ``invoke``: ``VmContext.invoke`` with the inputs already wrapped: the VM call, the kernels
  and the result buffers' allocation;
- ``read out``: turning the results into torch tensors (map, ``np.frombuffer``, ``from_numpy``);
- ``floor``: ``wrap in`` + ``read out`` + the ``invoke`` of an empty program (one that returns
  its input): what any program with this many inputs and outputs costs through these bindings
  before a kernel runs. A program whose eager time is below its floor cannot beat eager from
  Python on IREE 3.13's runtime bindings.

The process runs on the CPU driver lowerkit chose for the program (``local-sync`` for all of
these). Timings taken on a busy machine are only comparable inside one run.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
import warnings

SINGLE_OP = ("gather_scatter", "topk_sort", "cumsum", "boolean_masks", "index_ops",
             "nonpersistent_buffer", "embedding_bag", "views_inplace")


def _per_call(fn, calls: int) -> float:
    start = time.perf_counter()
    for _ in range(calls):
        fn()
    return (time.perf_counter() - start) / calls * 1e6


def _measure(parts: dict, rounds: int, calls: int) -> dict[str, float]:
    """Median µs a call of each part, the parts interleaved round by round."""
    samples: dict[str, list[float]] = {name: [] for name in parts}
    for fn in parts.values():  # warm
        _per_call(fn, max(calls // 10, 10))
    for _ in range(rounds):
        for name, fn in parts.items():
            samples[name].append(_per_call(fn, calls))
    return {name: statistics.median(v) for name, v in samples.items()}


def _parts(art, args) -> dict:
    """The parts of one call of ``art`` (an Artifact on a host driver), each a function."""
    from lowerkit.runtime import executable as runtime

    exe = art.executable
    for _ in range(20):  # decide the driver (`runtime._HostPath`)
        art(*args)
    loaded = exe.loaded if exe._host_path is None else exe._host_path.pick()
    rt, device, context, fn, storage = loaded
    hal = runtime._hal(rt)
    tensors = [a.contiguous() for a in art.signature.flatten_inputs(args, {})]
    n_out = len(art.signature.mutated_inputs) + len(art.signature.tensor_outputs) \
        + len(art.signature.state)
    tensors += list(art.state)

    def wrap():
        lst = rt.VmVariantList(len(tensors))
        for t in tensors:
            lst.push_ref(device.allocator.allocate_buffer_copy(
                hal.memory, hal.usage, device, t.numpy(), hal.element_types[t.dtype]))
        if storage is not None:  # the loaded program's kept transient memory
            lst.push_ref(storage.take())
        return lst

    wrapped = wrap()

    def invoke():
        results = rt.VmVariantList(n_out)
        context.invoke(fn, wrapped, results)
        return results

    done = invoke()

    def read():
        return [runtime._host_tensor(rt, done.get_as_object(i, rt.HalBufferView))
                for i in range(n_out)]

    return {"lowerkit": lambda: art(*args), "wrap in": wrap, "invoke": invoke, "read out": read}


def _empty_invoke(n_in: int, n_out: int, calls: int, rounds: int) -> float:
    """µs a call of ``VmContext.invoke`` for a program that returns its inputs: the VM's own
    cost, no kernel."""
    import torch

    import lowerkit

    def identity(*xs):
        return tuple(x + 0 for x in xs[:1]) * n_out  # one cheap kernel, n_out results

    xs = tuple(torch.zeros(4) for _ in range(n_in))
    art = lowerkit.compile(identity, xs, target="cpu")
    return _measure({"invoke": _parts(art, xs)["invoke"]}, rounds, calls)["invoke"]


def measure_programs(names: list[str], rounds: int = 15, calls: int = 2000) -> list[dict]:
    """Each zoo program of ``names``: µs a call of eager, of lowerkit and of each part of
    lowerkit's call, its empty invoke and its floor (the rows of the table and of the stored
    run; the benchmark suite's `CallFloor` reads them too)."""
    import torch

    import lowerkit
    from lowerkit.zoo import ZOO

    rows = []
    empties: dict[tuple[int, int], float] = {}
    for name in names:
        model, args, kwargs = ZOO[name].make()
        art = lowerkit.compile(model, args, kwargs, target="cpu")
        parts = _parts(art, args)
        with torch.inference_mode():
            parts = {"eager": lambda: model(*args), **parts}
            times = _measure(parts, rounds, calls)
        n_in, n_out = len(args) + len(art.state), len(parts["read out"]())
        if (n_in, n_out) not in empties:
            empties[n_in, n_out] = _empty_invoke(n_in, n_out, calls, rounds)
        floor = times["wrap in"] + times["read out"] + empties[n_in, n_out]
        rows.append({"model": name, "inputs": n_in, "outputs": n_out, **times,
                     "empty invoke": empties[n_in, n_out], "floor": floor})
    return rows


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("models", nargs="?", default=",".join(SINGLE_OP))
    parser.add_argument("--threads", type=int, default=2, help="torch threads (default 2)")
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--calls", type=int, default=2000, help="calls a sample")
    parser.add_argument("--json", metavar="FILE",
                        help="store the table and the run's provenance (benchmarks/readme.py)")
    opts = parser.parse_args(argv)
    warnings.filterwarnings("ignore")
    os.environ.setdefault("LOWERKIT_CACHE_DIR", os.path.join("build", "cache"))

    import torch
    from rich.console import Console
    from rich.table import Table

    from lowerkit.tools.bench import run_metadata

    torch.set_num_threads(opts.threads)
    meta = run_metadata()  # after set_num_threads: it records the torch threads
    table = Table(title=f"µs a call (medians of {opts.rounds} rounds of {opts.calls} calls; "
                        f"{opts.threads} torch threads; load {os.getloadavg()[0]:.1f})")
    for column in ("model", "in/out", "eager", "lowerkit", "wrap in", "invoke", "read out",
                   "empty invoke", "floor", "eager - floor"):
        table.add_column(column, justify="left" if column == "model" else "right")
    rows = measure_programs(opts.models.split(","), opts.rounds, opts.calls)
    for r in rows:
        table.add_row(r["model"], f"{r['inputs']}/{r['outputs']}", *(f"{r[k]:.1f}" for k in
                      ("eager", "lowerkit", "wrap in", "invoke", "read out")),
                      f"{r['empty invoke']:.1f}", f"{r['floor']:.1f}",
                      f"{r['eager'] - r['floor']:+.1f}")
    Console(width=max(Console().width, 150)).print(table)
    if opts.json:
        with open(opts.json, "w") as f:
            json.dump({"meta": meta, "rounds": opts.rounds, "calls": opts.calls,
                       "models": rows}, f, indent=1)
        print(f"wrote {opts.json}")


if __name__ == "__main__":
    main()
