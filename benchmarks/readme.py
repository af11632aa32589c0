"""The measured figures of README.md and docs/, generated from the stored runs in ``benchmarks/results/``.

    .venv/bin/python benchmarks/readme.py            # rewrite every generated block of the pages
    .venv/bin/python benchmarks/readme.py --check    # exit 1 if a page differs from the results
    .venv/bin/python benchmarks/readme.py --list     # each block, its files and the commands

The pages are README.md and every ``docs/**/*.md``. Every table of figures in them sits between
``<!-- results:NAME -->`` and ``<!-- /results -->`` and is rendered here from the JSON files
that the benchmark scripts write (``lowerkit bench --json``, ``benchmarks/compile_time.py --json``,
``benchmarks/call_floor.py --json``), each with its provenance (``lowerkit.tools.bench.run_metadata``:
commit, CPU model and flags, thread counts, date, command), and from the benchmark suite's
history (``benchmarks/run_suite.py``: asv's results in ``benchmarks/results/asv/``, a folder per
host kind, their provenance in ``benchmarks/results/asv-provenance/``; `load_suite`), which
gives the performance page's suite table and the README's headline. Each block appears on
exactly one page. A block whose files are not stored yet renders as a placeholder that names the command
producing them. A stored run taken with other iree-compile flags for the cpu target than
lowerkit's current ``CPU_SPEED_FLAGS`` is refused: it does not describe what ``lowerkit.compile``
does now. ``test/python/test_readme_figures.py`` fails when a page and this rendering disagree.
"""

from __future__ import annotations

import argparse
import difflib
import functools
import json
import math
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "results"
README = ROOT / "README.md"
DOCS = ROOT / "docs"
REGENERATE = ".venv/bin/python benchmarks/readme.py"

BLOCK_RE = re.compile(r"(<!-- results:(?P<name>[\w-]+) -->)(?P<body>.*?)(<!-- /results -->)",
                      re.DOTALL)


class ResultError(Exception):
    """A stored result that cannot back a README figure (no provenance, stale flags, bad shape)."""


@dataclass(frozen=True)
class Block:
    """One generated block: the stored files it reads, the commands writing them, and how it
    renders them."""

    files: tuple[str, ...]
    commands: tuple[str, ...]
    render: Callable[..., str]
    torch_threads: int | None = None  # what the files' runs must have used, when it matters
    whole_zoo: bool = False           # the files must time every model `bench zoo` times
    reads_suite: bool = False         # render also gets the suite's history (`load_suite`)


# -- formatting ---------------------------------------------------------------------------------
def _num(v: float | None, digits: int = 3) -> str:
    """``v`` to ``digits`` significant figures, never in exponent form; '-' for none/NaN."""
    if v is None or not isinstance(v, (int, float)) or not math.isfinite(v):
        return "-"
    if v == 0:
        return "0"
    decimals = max(0, digits - 1 - math.floor(math.log10(abs(v))))
    return f"{v:.{decimals}f}"


def _seconds(v: float | None) -> str:
    return "-" if v is None or not math.isfinite(v) else f"{v:.2f}"


def _ratio(v: float | None) -> str:
    return "-" if v is None or not math.isfinite(v) else f"{v:.2f}×"


def geomean(values: list[float]) -> float:
    values = [v for v in values if v is not None and math.isfinite(v) and v > 0]
    return math.exp(sum(map(math.log, values)) / len(values)) if values else math.nan


def provenance(path: str, meta: dict) -> str:
    """One line naming where a stored run comes from."""
    commit = (meta.get("commit") or "unknown commit")[:10]
    if meta.get("dirty"):
        commit += " with uncommitted changes"
    cpu = meta.get("cpu", {})
    flags = " ".join(cpu.get("flags") or []) or "no AVX-512/AMX"
    if cpu.get("family"):  # recorded since 2026-11-28
        flags = f"family {cpu['family']}, model {cpu.get('model_number', '?')}; {flags}"
    threads = meta.get("threads", {})
    load = meta.get("load_average") or [math.nan]
    tuned = meta.get("tuning")
    if tuned:
        choices = dict(tuned["choices"])
        tile = choices.pop("matmul-tile-bytes", None)
        read = ([f"{len(choices)} convolution forms"] if choices else []) + (
            [f"the matmul tile ({tile} bytes)"] if tile else [])
        tuned = (f", {' and '.join(read) or 'no choices'} read from a tuning database "
                 f"(lowerkit tune, `{Path(tuned['path']).name}`)")
    else:
        tuned = ""
    env = " ".join(f"{k}={v}" for k, v in sorted((meta.get("env") or {}).items()))
    steal = meta.get("steal_share")  # recorded since 2026-12-07
    steal = "" if steal is None else (
        f", {_num(100 * steal, 2)} % of the machine's CPU time stolen by the hypervisor "
        "during the run")
    return (f"<sub>`{path}`: commit `{commit}`, {meta.get('date', '?')}, "
            f"{cpu.get('model', '?')} ({flags}), {cpu.get('cores_usable') or cpu.get('cores')} "
            f"cores, {threads.get('torch', '?')} torch threads, load average "
            f"{_num(load[0], 2)} at the start{steal}{tuned}; "
            f"`{env + ' ' if env else ''}{meta.get('command', '?')}`</sub>")


def load_result(results: Path, name: str) -> dict:
    """A stored run, after checking it can back a figure of the current code."""
    path = results / name
    data = json.loads(path.read_text())
    meta = data.get("meta")
    if not meta or not meta.get("commit") or not meta.get("cpu", {}).get("model"):
        raise ResultError(f"{path}: no provenance (commit, CPU): store runs with the scripts "
                          "in benchmarks/, which record it")
    from lowerkit.target import CPU_SPEED_FLAGS

    if meta.get("iree_cpu_flags") != list(CPU_SPEED_FLAGS):
        raise ResultError(f"{path}: taken with the cpu flags {meta.get('iree_cpu_flags')}, "
                          f"lowerkit now uses {list(CPU_SPEED_FLAGS)}: run it again")
    if data.get("partial"):
        raise ResultError(f"{path}: an interrupted run (partial): run it again")
    return data


# -- zoo (lowerkit bench --json) ------------------------------------------------------------------
def _check_whole_zoo(path: Path, data: dict) -> None:
    """A zoo table and its geomeans stand for the zoo: a run of some models, or of an older
    zoo, does not."""
    from lowerkit.tools.bench import zoo_models

    ran = [m["model"] for m in data["models"]]
    expected = zoo_models(include_slow=False)
    if sorted(ran) != sorted(expected):
        missing, extra = sorted(set(expected) - set(ran)), sorted(set(ran) - set(expected))
        raise ResultError(f"{path}: not a run of the whole zoo (`lowerkit bench zoo`): "
                          f"missing {missing}, not in the zoo {extra}: run it again")


def _slower(data: dict) -> list[str]:
    return [m["model"] for m in data["models"] if m.get("lowerkit_vs_eager", math.nan) < 1.0]


def _zoo_geomeans(data: dict) -> tuple[float, float]:
    return (geomean([m.get("lowerkit_vs_eager") for m in data["models"]]),
            geomean([m.get("lowerkit_vs_torch_compile") for m in data["models"]]))


def render_zoo(data: dict, path: str) -> str:
    """Per model: median ms of each contender, the ratios, lowerkit's compile seconds, and the
    GEMM line's GFLOP/s."""
    lines = ["| model | eager ms | torch.compile ms | lowerkit ms | × eager | × torch.compile "
             "| lowerkit compile s, cold / cached |",
             "| --- | ---: | ---: | ---: | ---: | ---: | ---: |"]
    rows = data["models"] + ([data["gemm"]] if data.get("gemm") else [])
    for r in rows:
        m = r["median_ms"]
        cold, cached = r["compile_cold_s"].get("lowerkit"), r["compile_cached_s"].get("lowerkit")
        failed = "; ".join(f"{k} failed" for k in r.get("errors") or {})
        lines.append(f"| {r['model']}{' (' + failed + ')' if failed else ''} "
                     f"| {_num(m.get('eager'))} | {_num(m.get('torch.compile'))} "
                     f"| {_num(m.get('lowerkit'))} | {_ratio(r.get('lowerkit_vs_eager'))} "
                     f"| {_ratio(r.get('lowerkit_vs_torch_compile'))} "
                     f"| {_seconds(cold)} / {_seconds(cached)} |")
    ge, gc = _zoo_geomeans(data)
    lines.append(f"| **geomean, {len(data['models'])} models** | | | | **{_ratio(ge)}** "
                 f"| **{_ratio(gc)}** | |")
    out = "\n".join(lines)
    gemm = data.get("gemm")
    if gemm and gemm.get("gflops"):
        rates = ", ".join(f"{k} {_num(v)}" for k, v in gemm["gflops"].items())
        out += (f"\n\nGEMM line ({gemm['model']}), GFLOP/s: {rates}; a 2048³ `torch.mm` on every "
                f"core: {_num(data.get('torch_mm_gflops'))} (a reference, not the machine's peak).")
    return out + "\n\n" + provenance(path, data["meta"])


def render_real_shapes(data: dict, path: str) -> str:
    """`render_zoo`'s table for issue 22's real-shape set, against its goals, with what the run
    left out (a library not installed)."""
    from lowerkit.zoo.real_shapes import REAL_SHAPES

    ran = {m["model"] for m in data["models"]}
    unknown = sorted(ran - set(REAL_SHAPES))
    if unknown:
        raise ResultError(f"{path}: {unknown} are not in the real-shape set: run it again")
    ge, gc = _zoo_geomeans(data)
    slower = _slower(data)
    left = sorted(set(REAL_SHAPES) - ran)
    goals = (f"Issue 22's goals: geomean ≥ 2× eager (here {_ratio(ge)}) and ≥ 1.5× torch.compile "
             f"(here {_ratio(gc)}); no program slower than eager (here "
             f"{', '.join(slower) if slower else 'none'})."
             + (f" Not run: {', '.join(left)} (a library not installed)." if left else ""))
    table = render_zoo(data, path)
    body, _, prov = table.rpartition("\n\n")
    return f"{body}\n\n{goals}\n\n{prov}"


def render_real_models(data: dict, path: str) -> str:
    """`lowerkit bench real-models --peers`: issue 71's real models at published sizes, each
    contender's ms a call, lowerkit's ratio to each, and its error against eager."""
    names = ("eager", "torch.compile", "openvino", "iree-defaults", "lowerkit")
    peers = [c for c in names[:-1] if any(c in m["median_ms"] for m in data["models"])]
    lines = ["| model | " + " | ".join(f"{c} ms" for c in (*peers, "lowerkit")) + " | "
             + " | ".join(f"× {c}" for c in peers) + " | lowerkit's error / scale |",
             "| --- |" + " ---: |" * (2 * len(peers) + 2)]
    ratios: dict[str, list[float]] = {c: [] for c in peers}
    for r in data["models"]:
        m = r["median_ms"]
        cells = [_num(m.get(c)) for c in (*peers, "lowerkit")]
        for c in peers:
            ratios[c].append(m[c] / m["lowerkit"] if m.get(c) and m.get("lowerkit") else math.nan)
        failed = "; ".join(f"{k}: failed" for k in r.get("errors") or {})
        err = (r.get("error_vs_eager") or {}).get("lowerkit")
        lines.append(f"| {r['model']}{' (' + failed + ')' if failed else ''} | "
                     + " | ".join(cells) + " | "
                     + " | ".join(_ratio(ratios[c][-1]) for c in peers)
                     + f" | {'-' if err is None else f'{err:.1e}'} |")
    lines.append(f"| **geomean, {len(data['models'])} models** |" + " |" * (len(peers) + 1)
                 + " | ".join(f" **{_ratio(geomean(ratios[c]))}**" for c in peers) + " | |")
    lost = {c: [r["model"] for r, x in zip(data["models"], ratios[c]) if x < 1.0]
            for c in ("eager", "iree-defaults") if c in ratios}
    said = "; ".join(f"slower than {c}: {', '.join(v) if v else 'none'}" for c, v in lost.items())
    for name, why in (data.get("failed_factories") or {}).items():
        said += f"; {name} not built ({why.splitlines()[0]})"
    return "\n".join(lines) + f"\n\n{said}.\n\n" + provenance(path, data["meta"])


def _tuned_summary(tuned: dict) -> str:
    """What a compile took from a tuning database (`Artifact.tuned`), counted."""
    forms = [v for k, v in tuned.items() if k.startswith(("conv1d ", "conv2d "))]
    parts = [f"{len(forms)} convolution form(s) ({forms.count('taps')} per tap)"] if forms else []
    parts += [f"convolutions {v}" for k, v in tuned.items() if k.startswith("convolutions ")]
    if "matmul-tile-bytes" in tuned:
        parts.append(f"matmul tile {tuned['matmul-tile-bytes']} bytes")
    if "flags" in tuned:
        parts.append(f"flag set '{tuned['flags']}'")
    if "dispatch" in tuned:
        parts.append(tuned["dispatch"])
    return "; ".join(parts)


def render_real_models_tuned(data: dict, path: str) -> str:
    """`lowerkit bench MODELS --peers --tuned DB`: lowerkit after `lowerkit tune` (its
    database stored beside the run) against every contender and against itself untuned."""
    tuned = "lowerkit-tuned"
    names = ("eager", "torch.compile", "openvino", "iree-defaults", "lowerkit")
    others = [c for c in names if any(c in m["median_ms"] for m in data["models"])]
    lines = ["| model | " + " | ".join(f"{c} ms" for c in (*others, tuned)) + " | "
             + " | ".join(f"tuned × {c}" for c in others) + " | what the database gave |",
             "| --- |" + " ---: |" * (2 * len(others) + 1) + " --- |"]
    ratios: dict[str, list[float]] = {c: [] for c in others}
    for r in data["models"]:
        m = r["median_ms"]
        for c in others:
            ratios[c].append(m[c] / m[tuned] if m.get(c) and m.get(tuned) else math.nan)
        gave = _tuned_summary(r.get("tuned") or {})
        failed = "; ".join(f"{k}: failed" for k in r.get("errors") or {})
        lines.append(f"| {r['model']}{' (' + failed + ')' if failed else ''} | "
                     + " | ".join(_num(m.get(c)) for c in (*others, tuned)) + " | "
                     + " | ".join(_ratio(ratios[c][-1]) for c in others)
                     + f" | {gave or 'nothing for this model'} |")
    lines.append(f"| **geomean, {len(data['models'])} models** |" + " |" * (len(others) + 1)
                 + " | ".join(f" **{_ratio(geomean(ratios[c]))}**" for c in others) + " | |")
    lost = [r["model"] for r, x in zip(data["models"], ratios.get("eager", [])) if x < 1.0]
    said = f"tuned, slower than eager: {', '.join(lost) if lost else 'none'}"
    return "\n".join(lines) + f"\n\n{said}.\n\n" + provenance(path, data["meta"])


def render_zoo_summary(two: dict, one: dict, paths: tuple[str, str]) -> str:
    lines = ["| zoo models, batch 1 | models | geomean × eager | geomean × torch.compile "
             "| slower than eager |", "| --- | ---: | ---: | ---: | --- |"]
    for label, data, path in (("torch's two threads, like for like", two, paths[0]),
                              ("one torch thread, lowerkit on every core", one, paths[1])):
        ge, gc = _zoo_geomeans(data)
        slower = _slower(data)
        lines.append(f"| {label} (`{Path(path).name}`) | {len(data['models'])} | {_ratio(ge)} "
                     f"| {_ratio(gc)} | {len(slower)}{': ' + ', '.join(slower) if slower else ''} |")
    return "\n".join(lines)


# -- compile_time.py --json -------------------------------------------------------------------------
def render_compile_time(data: dict, path: str) -> str:
    """Per model, seconds per stage (medians) in each variant, and per-call ms when timed."""
    variants = data["variants"]
    out = []
    for model, per_variant in data["models"].items():
        stages: list[str] = []
        for v in variants:
            stages += [s for s in per_variant[v]["seconds"] if s not in stages and s != "total"]
        lines = [f"| {model}: seconds, median of {data['repeats']} | " + " | ".join(
                     f"`{v}`" for v in variants) + " |",
                 "| --- |" + " ---: |" * len(variants)]
        for stage in stages + ["total"]:
            cells = [per_variant[v]["seconds"].get(stage) for v in variants]
            if stage != "total" and all(c is None or c < 0.05 for c in cells):
                continue  # stages under 50 ms everywhere: noise at this resolution
            name = f"**{stage}**" if stage == "total" else stage
            lines.append(f"| {name} | " + " | ".join(_seconds(c) for c in cells) + " |")
        if any("per_call_ms" in per_variant[v] for v in variants):
            lines.append("| per call, ms | " + " | ".join(
                _num(per_variant[v].get("per_call_ms")) for v in variants) + " |")
        out.append("\n".join(lines))
    return "\n\n".join(out) + "\n\n" + provenance(path, data["meta"])


# -- conv3d.py --json ------------------------------------------------------------------------------
def render_conv3d(data: dict, path: str) -> str:
    """ms a call of each contender, and lowerkit's speed against eager with and without the
    split of 3-D convolutions by kernel depth."""
    contenders = ("eager", "torch.compile", "lowerkit", "lowerkit, no split")
    lines = ["| 3-D convolutions, batch 1, fp32 | " + " | ".join(f"{c} ms" for c in contenders)
             + " | lowerkit × eager | no split × eager | error / scale |",
             "| --- |" + " ---: |" * 7]
    for r in data["cases"]:
        ms = r["median_ms"]
        lines.append(f"| {r['model']} | " + " | ".join(_num(ms.get(c)) for c in contenders)
                     + f" | {_ratio(ms['eager'] / ms['lowerkit'])} | "
                     + f"{_ratio(ms['eager'] / ms['lowerkit, no split'])} | "
                     + f"{_num(max(r['error'].values()), 2)} |")
    load = data["meta"].get("load_average_end") or [math.nan]
    return ("\n".join(lines) + f"\n\nLoad average {_num(load[0], 2)} at the end of the run.\n\n"
            + provenance(path, data["meta"]))


# -- compile_cold.py --json ------------------------------------------------------------------------
def _convolutions_compiled(r: dict, data: dict) -> str:
    """How one model's dense 2-D convolutions were compiled: its own record (runs from
    compile_cold.py that store it), else the run's ``--convolutions`` (the rule before)."""
    said = r.get("convolutions")
    if said is None:  # an older run: what it asked for, not what each compile did
        asked = data.get("convolutions") or "rule"
        return "rule" if asked == "rule" else f"{asked} asked"
    if said.startswith("by the rule"):
        return "rule (data-tiled rejected)"
    if said.startswith("data-tiled (measured"):
        return "data-tiled, measured by lowerkit tune"
    if said.startswith("data-tiled ("):
        return "data-tiled, lowerkit's choice"
    if said.startswith("im2col, as asked"):
        return "every convolution whole, asked (im2col)"
    return said


def render_compile_cold(data: dict, path: str) -> str:
    """Per model: seconds from compile to the first result (checked against eager) cold, warm,
    with new weights, by program key and in a new process with the warm cache (runs that
    measured it); the stages that dominate; size and peak memory."""
    import statistics

    def each_run(r: dict, step: str) -> str:  # a step run once per repeat: median (range)
        runs = r.get(f"{step}_runs_s") or ([r[step]["to_first_result_s"]] if step in r else [])
        if not runs:
            return "-"
        return _seconds(statistics.median(runs)) + (
            f" ({_seconds(min(runs))}–{_seconds(max(runs))})" if len(runs) > 1 else "")

    lines = ["| model | dense 2-D convolutions | weights MiB | vmfb KiB | cold s | Inductor cold s "
             "| warm s | new weights s | of which the hit s | program key s "
             "| new process, warm cache s | torch-import s | iree-compile s | peak RSS MiB "
             "| largest child RSS MiB | matches eager |",
             "| --- | --- |" + " ---: |" * 13 + " --- |"]
    for r in data["models"]:
        if "error" in r:
            lines.append(f"| {r['model']} | - |" + " - |" * 13 + " failed |")
            continue
        runs = [k for k in ("cold", "warm", "new_weights", "program_key", "new_process",
                            "inductor_cold") if k in r]
        cold = _seconds(r["cold"]["to_first_result_s"])
        if "cold_runs_s" in r:  # --repeats: the median run, and the range of every run's cold
            cold += f" ({_seconds(min(r['cold_runs_s']))}–{_seconds(max(r['cold_runs_s']))})"
        lines.append(
            f"| {r['model']} | {_convolutions_compiled(r, data)} | "
            f"{_num(r['weights_mib'])} | {_num(r['vmfb_bytes'] / 1024)} | {cold} | "
            + f"{each_run(r, 'inductor_cold')} | "
            + " | ".join(_seconds(r[k]["to_first_result_s"]) for k in runs[1:3]) + " | "
            + f"{_seconds(r['new_weights']['compile_s'])} | "
            + f"{_seconds(r['program_key']['to_first_result_s'])} | {each_run(r, 'new_process')} | "
            + f"{_seconds(r['cold']['stages'].get('torch-import'))} | "
            + f"{_seconds(r['cold']['stages'].get('iree-compile'))} | "
            + f"{_num(r['peak_rss_mib'])} | {_num(r['peak_rss_children_mib'])} | "
            + ("yes" if all(r[k]["matches_eager"] for k in runs) else "**no**") + " |")
    return "\n".join(lines) + "\n\n" + provenance(path, data["meta"])


# -- call_floor.py --json ---------------------------------------------------------------------------
def render_call_floor(data: dict, path: str) -> str:
    lines = [f"| µs a call, medians of {data['rounds']} rounds of {data['calls']} calls "
             "| in/out | eager | lowerkit | wrap in | invoke | read out | floor | eager − floor |",
             "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for r in data["models"]:
        margin = r["eager"] - r["floor"]
        lines.append(f"| {r['model']} | {r['inputs']}/{r['outputs']} | " + " | ".join(
            _num(r[k]) for k in ("eager", "lowerkit", "wrap in", "invoke", "read out", "floor"))
            + f" | {'+' if margin >= 0 else '−'}{_num(abs(margin))} |")
    return "\n".join(lines) + "\n\n" + provenance(path, data["meta"])


# -- weights_call.py --json ------------------------------------------------------------------------
def render_weights_call(data: dict, path: str) -> str:
    lines = [f"| ms a call, medians of {data['rounds']} interleaved rounds | eager "
             "| weights as parameters | weights compiled in | parameters / compiled in "
             "| the same, fastest rounds | vmfb KiB, parameters / compiled in | matches eager |",
             "| --- | ---: | ---: | ---: | ---: | ---: | ---: | --- |"]
    for r in data["models"]:
        ms, v, s = r["ms"], r["vmfb_bytes"], r["samples_ms"]
        ok = all(c["ok"] for c in r["checks"].values())
        lines.append(f"| {r['model']} | {_num(ms['eager'])} | {_num(ms['external'])} | "
                     f"{_num(ms['inline'])} | {r['external_over_inline']:.3f} | "
                     f"{min(s['external']) / min(s['inline']):.3f} | "
                     f"{_num(v['external'] / 1024)} / {_num(v['inline'] / 1024)} | "
                     + ("yes" if ok else "**no**") + " |")
    return "\n".join(lines) + "\n\n" + provenance(path, data["meta"])


# -- executable_kinds.py --json --------------------------------------------------------------------
def render_executable_kinds(data: dict, path: str) -> str:
    kinds = ("main", "encoding", "initializer")
    lines = ["| model | convolutions | iree-compile s | child processes' CPU s | "
             + " | ".join(f"{k}: executables | {k}: CPU s" for k in kinds)
             + " | not the program's own |",
             "| --- | --- | ---: | ---: | " + " | ".join("---: | ---:" for _ in kinds) + " | ---: |"]
    for r in data["models"]:
        k = r["by_kind"]
        total = sum(v["cpu_less_floor_s"] for v in k.values())
        conv = (r["convolutions"] or "rule").split(" (")[0]
        lines.append(f"| {r['model']} | {conv} | {_seconds(r['iree_compile_s'])} | "
                     f"{_seconds(r['children_cpu_s'])} | "
                     + " | ".join(f"{k[x]['executables']} | {_seconds(k[x]['cpu_less_floor_s'])}"
                                  for x in kinds)
                     + f" | {1 - k['main']['cpu_less_floor_s'] / total:.0%} |")
    return ("\n".join(lines) + f"\n\nEach executable compiled alone, median of {data['repeats']}"
            ", less a process's fixed cost (the cheapest executable's whole compile, "
            f"{_seconds(min(r['floor_cpu_s'] for r in data['models']))} s)."
            "\n\n" + provenance(path, data["meta"]))


# -- derived_weights.py --json --------------------------------------------------------------------
def render_derived_weights(data: dict, path: str) -> str:
    """benchmarks/derived_weights.py: each model compiled with derived weights off, then on."""
    lines = [f"| model, derived weights off → on (medians of {data['rounds']} interleaved rounds) "
             "| initializers | dispatches | derived parameters | iree-compile s | "
             "iree-compile CPU s | CPU saved | first call s | error / scale |",
             "| --- | --- | --- | --- | --- | --- | ---: | --- | --- |"]
    for r in data["models"]:
        c, m = r["counts"], r["medians"]
        off, on = m["off"], m["on"]
        lines.append(
            f"| {r['model']} | {c['off']['initializers']} → {c['on']['initializers']} | "
            f"{c['off']['dispatches']} → {c['on']['dispatches']} | "
            f"{c['off']['derived']} → {c['on']['derived']} of {c['on']['parameters']} | "
            f"{_seconds(off['iree_compile_s'])} → {_seconds(on['iree_compile_s'])} | "
            f"{_seconds(off['iree_compile_cpu_s'])} → {_seconds(on['iree_compile_cpu_s'])} | "
            f"{1 - on['iree_compile_cpu_s'] / off['iree_compile_cpu_s']:.0%} | "
            f"{off['first_call_s']:.3f} → {on['first_call_s']:.3f} | "
            f"{_num(r['error_over_scale']['off'])} → {_num(r['error_over_scale']['on'])} |")
    return "\n".join(lines) + "\n\n" + provenance(path, data["meta"])


# -- yielding_wait.py --json ----------------------------------------------------------------------
def render_yielding_wait(data: dict, path: str) -> str:
    lines = [f"| one call, ms ({data['rounds']} rounds × {data['calls']} calls each way, "
             "interleaved) | driver | eager median | spinning median | mean | p90 "
             "| yielding median | mean | p90 |",
             "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for r in data["models"]:
        s, y = r["spinning"], r["yielding"]
        lines.append(f"| {r['model']} | {r['driver']} | {_num(r['eager_median_ms'])} | "
                     + " | ".join(_num(s[k]) for k in ("median", "mean", "p90")) + " | "
                     + " | ".join(_num(y[k]) for k in ("median", "mean", "p90")) + " |")
    return "\n".join(lines) + "\n\n" + provenance(path, data["meta"])



def render_mmt4d_tiles(data: dict, path: str) -> str:
    """benchmarks/mmt4d_tiles.py: each fp32 matmul's variants against the microkernel."""
    lines = [f"| fp32 matmul, both operands packed each call (median of {data['rounds']} rounds) "
             "| M×K×N | mmt4d vector tile (M1, N1, K1, M0, N0, K0) | ms | GFLOP/s | × microkernel |",
             "| --- | --- | --- | ---: | ---: | ---: |"]
    base = {r["shape"]: r["median_ms"] for r in data["rows"] if r["variant"].startswith("microkernel")}
    for r in data["rows"]:
        lines.append(f"| {r['shape']}: {r['variant']} | {'×'.join(map(str, r['mkn']))} | "
                     f"{r['tile']} | {_num(r['median_ms'])} | {_num(r['gflops'])} | "
                     f"{_ratio(base[r['shape']] / r['median_ms'])} |")
    return "\n".join(lines) + "\n\n" + provenance(path, data["meta"])


def render_matmul_tile(data: dict, path: str) -> str:
    """benchmarks/matmul_tile.py: IREE's default matmul tile against the tuned one, per model."""
    tile = data["tile"]
    lines = [f"| model, ms (median of {data['rounds']} interleaved rounds) | eager "
             f"| IREE's default tile | {tile} bytes | default / {tile} | error / scale |",
             "| --- | ---: | ---: | ---: | ---: | ---: |"]
    for r in data["models"]:
        ms = r["median_ms"]
        lines.append(f"| {r['model']} | {_num(ms['eager'])} | {_num(ms['iree'])} "
                     f"| {_num(ms['tuned'])} | {_ratio(r['tuned_over_iree'])} "
                     f"| {_num(max(r['error_over_scale'].values()), 2)} |")
    return "\n".join(lines) + "\n\n" + provenance(path, data["meta"])


def render_conv_strategy(data: dict, path: str) -> str:
    """benchmarks/conv_strategy.py: the rule against data-tiled convolutions, per model."""
    lines = [f"| model, ms a call (median of {data['rounds']} interleaved rounds) | eager | rule "
             "| data-tiled | rule / data-tiled | compile s: rule / data-tiled "
             "| dispatches: rule / data-tiled | data-tiled compiled as | error / scale |",
             "| --- | ---: | ---: | ---: | ---: | ---: | ---: | --- | ---: |"]
    for r in data["models"]:
        ms, s, d = r["median_ms"], r["compile_s"], r["dispatches"]
        rung = r["rungs"]["data-tiled"]
        compiled_as = ("data-tiled" if rung == "fast"
                       else "the rule (rejected data-tiled)" if "rule" in rung else rung)
        lines.append(f"| {r['model']} | {_num(ms['eager'])} | {_num(ms['rule'])} "
                     f"| {_num(ms['data-tiled'])} | {_ratio(r['rule_over_data_tiled'])} "
                     f"| {_num(s['rule'], 2)} / {_num(s['data-tiled'], 2)} "
                     f"| {d['rule']} / {d['data-tiled']} "
                     f"| {compiled_as} "
                     f"| {_num(max(r['error_over_scale'].values()), 2)} |")
    with_im2col = [r for r in data["models"] if "im2col" in r["median_ms"]]
    if with_im2col:
        lines += ["", "| model, ms a call | rule | every convolution through im2col "
                  "| compile s: rule / im2col | dispatches: rule / im2col |",
                  "| --- | ---: | ---: | ---: | ---: |"]
        for r in with_im2col:
            ms, s, d = r["median_ms"], r["compile_s"], r["dispatches"]
            lines.append(f"| {r['model']} | {_num(ms['rule'])} | {_num(ms['im2col'])} "
                         f"| {_num(s['rule'], 2)} / {_num(s['im2col'], 2)} "
                         f"| {d['rule']} / {d['im2col']} |")
    return "\n".join(lines) + "\n\n" + provenance(path, data["meta"])

def render_conv_rule(data: dict, path: str) -> str:
    """benchmarks/conv_strategy.py --forms rule-before,rule,im2col: the convolution rule
    against the rule before thick convolutions went whole, and every one through im2col."""
    lines = [f"| model, ms a call (median of {data['rounds']} interleaved rounds) | eager "
             "| rule before | rule | im2col | rule / rule before "
             "| compile s: rule before / rule / im2col "
             "| dispatches: rule before / rule / im2col | error / scale |",
             "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for r in data["models"]:
        ms, s, d = r["median_ms"], r["compile_s"], r["dispatches"]
        forms = ("rule-before", "rule", "im2col")
        lines.append(f"| {r['model']} | {_num(ms['eager'])} "
                     + " ".join(f"| {_num(ms[f])}" for f in forms)
                     + f" | {_ratio(ms['rule'] / ms['rule-before'])} "
                     + "| " + " / ".join(_num(s[f], 2) for f in forms)
                     + " | " + " / ".join(str(d[f]) for f in forms)
                     + f" | {_num(max(r['error_over_scale'].values()), 2)} |")
    return "\n".join(lines) + "\n\n" + provenance(path, data["meta"])

# -- backend.py --json -----------------------------------------------------------------------------
def render_backend(data: dict, path: str) -> str:
    lines = ["| model | eager ms | torch.compile ms | lowerkit ms | backend ms | frozen ms "
             "| Dynamo's own ms | backend / lowerkit | backend less Dynamo's own / lowerkit "
             "| frozen / lowerkit | backend × eager "
             "| graphs in lowerkit / eager | compile s, cold / cached |",
             "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: "
             "| ---: |"]
    for r in data["models"]:
        ms = r["median_ms"]
        ran = [g["ran"] for g in r.get("graphs", [])]
        lines.append(
            f"| {r['model']} | " + " | ".join(_num(ms.get(k)) for k in
                                            ("eager", "torch.compile", "lowerkit", "backend",
                                             "frozen"))
            + f" | {_num(r.get('dynamo_overhead_ms'))}"
            + f" | {_num(r.get('backend_vs_lowerkit'))}"
            + f" | {_num(r.get('backend_less_dynamo_vs_lowerkit'))}"
            + f" | {_num(r.get('frozen_vs_lowerkit'))}"
            + f" | {_num(r.get('backend_vs_eager'))}×"
            + f" | {ran.count('lowerkit')} / {ran.count('eager')}"
            + (f", frozen {frozen.count('lowerkit')} / {frozen.count('eager')}"
               if (frozen := [g["ran"] for g in r.get("frozen_graphs", [])]) != ran else "")
            + f" | {_num(r['compile_cold_s'].get('backend'))} / {_num(r['compile_cached_s'].get('backend'))} |")
    models = data["models"]
    def mean(key: str) -> str:
        values = [r.get(key) for r in models]
        return _num(geomean(values)) if all(v is not None for v in values) else "—"
    lines.append(f"| **geomean, {len(models)} models** | | | | | | | "
                 f"**{mean('backend_vs_lowerkit')}** | **{mean('backend_less_dynamo_vs_lowerkit')}** "
                 f"| **{mean('frozen_vs_lowerkit')}** | **{mean('backend_vs_eager')}×** | | |")
    return "\n".join(lines) + "\n\n" + provenance(path, data["meta"])


# -- backend_call.py --json ------------------------------------------------------------------------
def render_backend_call(data: dict, path: str) -> str:
    columns = ("eager", "artifact", "artifact after eager", "artifact after an 8 MiB read",
               "Dynamo's floor", "artifact in Dynamo's frame", "backend's function", "backend",
               "wrappers", "in Dynamo's frame", "backend / artifact", "backend / bare backend")
    skipped = ("floor, module guards skipped", "backend, module guards skipped",
               "skipped / artifact")
    guards_skipped = all(c in data["models"][0] for c in skipped)  # runs since those contenders
    if guards_skipped:
        columns += skipped
    lines = [f"| µs a call, medians of {data['rounds']} rounds of {data['calls']} calls | "
             + " | ".join(columns) + " |",
             "| --- |" + " ---: |" * len(columns)]
    for r in data["models"]:
        lines.append(f"| {r['model']} | " + " | ".join(
            f"{r[c]:.2f}" if "/" in c else _num(r[c]) for c in columns) + " |")
    bare = [r["backend / bare backend"] for r in data["models"]]
    direct = [r["backend / artifact"] for r in data["models"]]
    lines.append("")
    lines.append(f"The backend over a bare backend calling the same artifact from Dynamo's frame: "
                 f"{min(bare):.2f} to {max(bare):.2f}; over the artifact called back to back: "
                 f"{min(direct):.2f} to {max(direct):.2f}. Load average {data['load_after']:.2g} "
                 f"at the end of the run.")
    if guards_skipped:
        ratios = [r[skipped[-1]] for r in data["models"]]
        floor = [r["Dynamo's floor"] / r[skipped[0]] for r in data["models"]]
        moved = [r[skipped[1]] / r["backend"] for r in data["models"]]
        lines[-1] += (f" With the built-in modules' guards skipped (torch's "
                      f"`skip_guard_on_inbuilt_nn_modules_unsafe`): Dynamo's floor "
                      f"{min(floor):.2g} to {max(floor):.2g} times lower; the backend's call "
                      f"{min(moved):.2f} to {max(moved):.2f} times its time without; over the "
                      f"artifact {min(ratios):.2f} to {max(ratios):.2f}.")
    return "\n".join(lines) + "\n\n" + provenance(path, data["meta"])


# -- backend_call.py --zoo --json -----------------------------------------------------------------
def render_backend_call_zoo(data: dict, path: str) -> str:
    columns = ("eager", "artifact", "backend", "Dynamo's floor", "limit", "backend / limit",
               "backend / eager")
    lines = [f"| µs a call, medians of {data['rounds']} interleaved rounds | "
             + " | ".join(columns) + " | graphs | drivers: artifact / backend |",
             "| --- |" + " ---: |" * len(columns) + " --- | --- |"]
    for r in data["models"]:
        ran = ", ".join(g["ran"] + (" direct" if g.get("direct") else "")
                        for g in r["graphs"]) or "none: Dynamo runs it eagerly"
        drivers = r.get("drivers")  # stored since 93fd3fe
        drivers = (f"{drivers['artifact']} / {', '.join(map(str, drivers['backend'])) or '-'}"
                   if drivers else "-")
        lines.append(f"| {r['model']} | " + " | ".join(
            f"{r[c]:.2f}" if "/" in c else _num(r[c]) for c in columns)
            + f" | {ran} | {drivers} |")
    rows = data["models"]
    over = [r["model"] for r in rows if r["backend / limit"] > 1]
    slower = [r["model"] for r in rows if r["backend / eager"] > 1]
    lines.append("")
    lines.append(f"limit = 1.1 × artifact + 20 µs. Geomean backend / limit "
                 f"{geomean([r['backend / limit'] for r in rows]):.2f}, backend / artifact "
                 f"{geomean([r['backend'] / r['artifact'] for r in rows]):.2f}, backend / eager "
                 f"{geomean([r['backend / eager'] for r in rows]):.2f}; over the limit: "
                 f"{', '.join(over) or 'none'}; slower than eager: {', '.join(slower) or 'none'}. "
                 f"Load average {data['load_after']:.2g} at the end of the run.")
    return "\n".join(lines) + "\n\n" + provenance(path, data["meta"])


# -- composite_overrides.py --json ----------------------------------------------------------------
def render_composite_overrides(data: dict, path: str) -> str:
    lines = [f"| run_decompositions, s (medians of {data['rounds'] - 1}, interleaved) | torch's "
             "overrides | lowerkit's cheap ones | saved |",
             "| --- | ---: | ---: | ---: |"]
    for r in data["models"]:
        s = r["median_s"]
        theirs = s["torch's"]
        lines.append(f"| {r['model']} | {_num(theirs)} | {_num(s['cheap'])} "
                     f"| {_num(r['saved_s'])} |")
    return "\n".join(lines) + "\n\n" + provenance(path, data["meta"])


# -- conv_taps.py --json ---------------------------------------------------------------------------
def render_conv_taps(data: dict, path: str) -> str:
    lines = [f"| one convolution, batch 1, fp32, ms a call (medians of {data['rounds']}) | eager "
             "| per tap | im2col | faster | the import picks | compile s, per tap / im2col "
             "| error / scale |",
             "| --- | ---: | ---: | ---: | --- | --- | ---: | ---: |"]
    for r in data["shapes"]:
        ms, cs = r["ms"], r["compile_s"]
        lines.append(f"| {r['shape']} | {_num(ms['eager'])} | {_num(ms['per tap'])} "
                     f"| {_num(ms['im2col'])} | {r['faster']} | {r['rule']} "
                     f"| {_num(cs['per tap'])} / {_num(cs['im2col'])} "
                     f"| {_num(r['error_over_scale'])} |")
    return "\n".join(lines) + "\n\n" + provenance(path, data["meta"])


# -- tuned.py --json -------------------------------------------------------------------------------
def render_tuned(data: dict, path: str) -> str:
    lines = [f"| batch 1, fp32, ms a call (medians of {data['rounds']}) | eager | torch.compile "
             "| rule | tuned | no per tap | tuned × eager | tuned × rule "
             "| compile s: rule / tuned / no per tap | dispatches | tuning s |",
             "| --- |" + " ---: |" * 10]
    shapes = []
    for r in data["models"]:
        ms, cs, d = r["ms"], r["compile_s"], r["dispatches"]
        bad = [k for k, e in r["errors"].items() if not e["ok"]]
        if bad:
            raise ResultError(f"{path}: {r['model']}: {bad} did not match eager")
        lines.append(f"| {r['model']} | " + " | ".join(_num(ms[k]) for k in (
            "eager", "torch.compile", "rule", "tuned", "no per tap"))
            + f" | {_ratio(ms['eager'] / ms['tuned'])} | {_ratio(ms['rule'] / ms['tuned'])}"
            f" | {_seconds(cs['rule'])} / {_seconds(cs['tuned'])} / {_seconds(cs['no per tap'])}"
            f" | {d['rule']} / {d['tuned']} / {d['no per tap']} | {_num(r['tune_s'])} |")
        for sh in r["shapes"]:
            shapes.append(f"| {r['model']} | `{sh['op']}` | {_num(sh['ms']['taps'])} "
                          f"| {_num(sh['ms']['im2col'])} | {sh['choice']} | {sh['why']} |")
    table = "\n".join(lines)
    per_shape = "\n".join([f"| model | convolution | per tap ms | im2col ms | stored | why "
                           f"({data['tune_rounds']} rounds) |",
                           "| --- | --- | ---: | ---: | --- | --- |", *shapes])
    worst = max(e["max_rel_error"] for r in data["models"] for e in r["errors"].values())
    return (f"{table}\n\n{per_shape}\n\nEvery compiled form matches eager (largest error "
            f"{_num(worst, 2)} of the output's scale). Load average {_num(data['load_after'], 2)} "
            f"at the end of the run.\n\n{provenance(path, data['meta'])}")


# -- depthwise.py --json ---------------------------------------------------------------------------
def render_depthwise(data: dict, path: str) -> str:
    lines = [f"| batch 1, fp32, ms a call (medians of {data['rounds']}) | eager | torch.compile "
             "| per tap | whole (before) | whole / per tap | eager / per tap "
             "| compile s: per tap / whole | dispatches | error / scale |",
             "| --- |" + " ---: |" * 9]
    for r in data["rows"]:
        if not r["matches_eager"]:
            raise ResultError(f"{path}: {r['name']} did not match eager")
        ms, cs, d = r["ms"], r["compile_s"], r["dispatches"]
        lines.append(f"| {r['name']} | " + " | ".join(_num(ms[k]) for k in (
            "eager", "torch.compile", "per tap", "whole"))
            + f" | {_ratio(ms['whole'] / ms['per tap'])} | {_ratio(ms['eager'] / ms['per tap'])}"
            f" | {_seconds(cs['per tap'])} / {_seconds(cs['whole'])}"
            f" | {d['per tap']} / {d['whole']}"
            f" | {_num(max(r['error_over_scale'].values()), 2)} |")
    return (("\n".join(lines)) + f"\n\nLoad average {_num(data['load_after'], 2)} at the end of "
            f"the run.\n\n{provenance(path, data['meta'])}")


# -- grouped.py --json -----------------------------------------------------------------------------
def render_grouped(data: dict, path: str) -> str:
    """Each grouped shape and model: eager, torch.compile, whole, and the two per-tap forms."""
    from lowerkit.ingress.decompositions import MAX_GROUP_WIDTH_BY_MULTIPLIES

    lines = [f"| batch 1, fp32, ms a call (medians of {data['rounds']}) | eager | torch.compile "
             "| whole (before) | multiplies | matmul | lowerkit's form | whole / lowerkit's "
             "| eager / lowerkit's | error / scale |",
             "| --- |" + " ---: |" * 5 + " --- |" + " ---: |" * 3]
    for r in data["rows"]:
        if not r["matches_eager"]:
            raise ResultError(f"{path}: {r['name']} did not match eager")
        ms = r["ms"]
        if r["kind"] == "shape":
            width = int(r["name"].split("(")[1].split()[0])
            form = "multiplies" if width <= MAX_GROUP_WIDTH_BY_MULTIPLIES else "matmul"
            name = r["name"]
        else:  # a model mixes widths: the faster of the two forms it was timed in
            form = min(("multiplies", "matmul"), key=lambda f: ms[f])
            name = f"**{r['name']}**"
        lines.append(f"| {name} | " + " | ".join(_num(ms[k]) for k in (
            "eager", "torch.compile", "whole", "multiplies", "matmul"))
            + f" | {form} | {_ratio(ms['whole'] / ms[form])} | {_ratio(ms['eager'] / ms[form])}"
            f" | {_num(max(r['error_over_scale'].values()), 2)} |")
    return (("\n".join(lines)) + f"\n\nLoad average {_num(data['load_after'], 2)} at the end of "
            f"the run.\n\n{provenance(path, data['meta'])}")


# -- dilated.py --json -----------------------------------------------------------------------------
def render_dilated(data: dict, path: str) -> str:
    """Each dilated shape and the model: eager, torch.compile and the three forms."""
    return _render_forms(data, path, ("regions, per tap", "per tap", "whole"),
                         ("by regions, per tap (now)", "per tap", "whole"))


def _render_forms(data: dict, path: str, forms: tuple, headers: tuple) -> str:
    """A form benchmark's rows: eager, torch.compile and each of ``forms`` (the first is
    lowerkit's now), each other form's time and eager's over now's, and the error."""
    now_form, others = forms[0], forms[1:]
    lines = [f"| batch 1, fp32, ms a call (medians of {data['rounds']}) | eager | torch.compile "
             f"| {' | '.join(headers)} | "
             + "".join(f"{h.split(' (')[0]} / now | " for h in headers[1:])
             + "eager / now | error / scale |", "| --- |" + " ---: |" * (5 + 2 * len(others))]
    for r in data["rows"]:
        if not r["matches_eager"]:
            raise ResultError(f"{path}: {r['name']} did not match eager")
        ms, now = r["ms"], r["ms"][now_form]
        name = r["name"] if r["kind"] == "shape" else f"**{r['name']}**"
        lines.append(f"| {name} | " + " | ".join(_num(ms[k]) for k in (
            "eager", "torch.compile", *forms))
            + "".join(f" | {_ratio(ms[f] / now)}" for f in others)
            + f" | {_ratio(ms['eager'] / now)} | {_num(max(r['error_over_scale'].values()), 2)} |")
    deep = [r["name"] for r in data["rows"] if r.get("as_close_as_eager_in_float64")]
    note = (f"\n\nOver the f32 tolerance from eager's answer and no further than eager's own "
            f"from eager in float64 (`bench.as_close_as_eager`): {', '.join(deep)}."
            if deep else "")
    return (("\n".join(lines)) + note + f"\n\nLoad average {_num(data['load_after'], 2)} at "
            f"the end of the run.\n\n{provenance(path, data['meta'])}")


# -- tap_rows.py --json ----------------------------------------------------------------------------
def render_tap_rows(data: dict, path: str) -> str:
    """Each per-tap shape and model: eager, torch.compile, three taps and one tap a matmul."""
    return _render_forms(data, path, ("three a matmul", "one a matmul"),
                         ("three taps a matmul (now)", "one tap a matmul (before)"))


# -- depthwise_share.py --json ---------------------------------------------------------------------
def render_depthwise_share(data: dict, path: str) -> str:
    """Each net with depthwise convolutions: its per-tap share, eager, torch.compile, the rule,
    data-tiled and IREE's defaults, and what lowerkit chooses for it now."""
    lines = [f"| batch 1, fp32, ms a call (medians of {data['rounds']}) | per-tap share | eager "
             "| torch.compile | rule | data-tiled | iree-defaults | rule / data-tiled "
             "| lowerkit's choice | iree-defaults / choice | eager / choice | error / scale |",
             "| --- |" + " ---: |" * 7 + " --- |" + " ---: |" * 3]
    for r in data["rows"]:
        if not r["matches_eager"]:
            raise ResultError(f"{path}: {r['name']} did not match eager")
        ms, chose = r["ms"], r["lowerkits_choice"]
        name = f"{r['name']} (held out)" if r["kind"] == "held out" else r["name"]
        lines.append(f"| {name} | {r['per_tap_share']:.3f} | " + " | ".join(_num(ms[k]) for k in (
            "eager", "torch.compile", "rule", "data-tiled", "iree-defaults"))
            + f" | {_ratio(ms['rule'] / ms['data-tiled'])} | {chose}"
            + f" | {_ratio(ms['iree-defaults'] / ms[chose])} | {_ratio(ms['eager'] / ms[chose])}"
            + f" | {_num(max(r['error_over_scale'].values()), 2)} |")
    return (("\n".join(lines)) + f"\n\nData-tiled where the per-tap share is at most "
            f"{data['max_per_tap_share']}. Load average {_num(data['load_after'], 2)} at the end "
            f"of the run.\n\n{provenance(path, data['meta'])}")


# -- conv3d_forms.py --json ------------------------------------------------------------------------
def render_conv3d_forms(data: dict, path: str) -> str:
    """Each 3-D shape and the model: eager, torch.compile, per tap and by depth."""
    return _render_forms(data, path, ("per tap", "by depth"),
                         ("per tap (now)", "by depth (before)"))


# -- transients.py --json -------------------------------------------------------------------------
def render_transients(data: dict, path: str) -> str:
    """Each shape and model: its largest intermediate tensor and its slab, eager,
    torch.compile, transient memory kept where it pays (now), kept for every program, and
    IREE's slab per call (before)."""
    forms = ("kept where it pays", "kept, every program", "IREE's, per call")
    lines = [f"| batch 1, fp32, ms a call (medians of {data['rounds']}) | largest tensor MiB "
             "| slab MiB | eager | torch.compile | kept where it pays (now) "
             "| kept, every program | IREE's, per call (before) | every program / now "
             "| per call / now | eager / now | iree-compile s, every program "
             "| iree-compile s, per call | error / scale |",
             "| --- |" + " ---: |" * 13]
    for r in data["rows"]:
        if not r["matches_eager"]:
            raise ResultError(f"{path}: {r['name']} did not match eager")
        ms, now = r["ms"], r["ms"][forms[0]]
        name = r["name"] if r["kind"] == "shape" else f"**{r['name']}**"
        lines.append(f"| {name} | {_num(r['largest_intermediate_bytes'] / 2**20)} "
                     f"| {_num(r['slab_bytes'] / 2**20)} | "
                     + " | ".join(_num(ms[k]) for k in ("eager", "torch.compile", *forms))
                     + "".join(f" | {_ratio(ms[f] / now)}" for f in forms[1:])
                     + f" | {_ratio(ms['eager'] / now)} "
                     f"| {_num(r['iree_compile_s'][forms[1]])} "
                     f"| {_num(r['iree_compile_s'][forms[2]])} "
                     f"| {_num(max(r['error_over_scale'].values()), 2)} |")
    return (("\n".join(lines)) + f"\n\nLoad average {_num(data['load_after'], 2)} at the end "
            f"of the run.\n\n{provenance(path, data['meta'])}")


def render_transients_every_program(data: dict, path: str) -> str:
    """The first run (at bba303e), when every CPU program went through the twin."""
    return _render_forms(data, path, ("kept", "IREE's, per call"),
                         ("twin, every program", "IREE's, per call (before)"))


# -- conv_phases.py --json -------------------------------------------------------------------------
def render_conv_phases(data: dict, path: str) -> str:
    """Each shape and model: eager, torch.compile, data-tiled whole and by phases."""
    lines = [f"| batch 1, fp32, ms a call (medians of {data['rounds']}) | eager | torch.compile "
             "| whole | by phases | whole / by phases | eager / by phases | lowerkit's form "
             "| iree-compile s: whole / by phases | dispatches | error / scale |",
             "| --- |" + " ---: |" * 6 + " --- |" + " ---: |" * 3]
    for r in data["rows"]:
        if not r["matches_eager"]:
            raise ResultError(f"{path}: {r['name']} did not match eager")
        ms, cs, d = r["ms"], r["iree_compile_s"], r["dispatches"]
        name = r["name"] if r["kind"] == "shape" else f"**{r['name']}**"
        lines.append(f"| {name} | " + " | ".join(_num(ms[k]) for k in (
            "eager", "torch.compile", "whole", "by phases"))
            + f" | {_ratio(ms['whole'] / ms['by phases'])}"
            f" | {_ratio(ms['eager'] / ms['by phases'])} | {r['lowerkits']}"
            f" | {_seconds(cs['whole'])} / {_seconds(cs['by phases'])}"
            f" | {d['whole']} / {d['by phases']}"
            f" | {_num(max(r['error_over_scale'].values()), 2)} |")
    return (("\n".join(lines)) + f"\n\nLoad average {_num(data['load_after'], 2)} at the end of "
            f"the run.\n\n{provenance(path, data['meta'])}")


# -- conv_folding.py --json ------------------------------------------------------------------------
_FOLDING_FORMS = ("before", "bias after", "both (now)")


_FOLDING_HEADS = {"before": "before", "bias after": "bias after",
                  "taps unfolded": "folded, a depthwise convolution's taps not",
                  "both (now)": "bias after and folded (now)"}


def render_conv_folding(data: dict, path: str) -> str:
    """Each program three ways (as before, with the bias after, with the fold too), or four
    (the fold without a depthwise convolution's taps before the last)."""
    forms = tuple(data.get("forms", _FOLDING_FORMS))
    taps = "taps unfolded" in forms
    params = all("parameters" in r for r in data["rows"])
    short = " / ".join("now" if f == "both (now)" else "taps not" if f == "taps unfolded" else f
                       for f in forms)
    lines = [f"| batch 1, fp32, ms a call (medians of {data['rounds']}) | eager | torch.compile | "
             + " | ".join(_FOLDING_HEADS[f] for f in forms) + " | before / now | "
             + ("taps not / now | " if taps else "") + "eager / now "
             f"| compile s (median of {data['repeats']}): {short} "
             "| iree-compile s: the same | dispatches: the same "
             + ("| parameters: the same " if params else "") + "| error / scale |",
             "| --- |" + " ---: |" * (8 + len(forms) + taps + params)]
    for r in data["rows"]:
        if not r["matches_eager"]:
            raise ResultError(f"{path}: {r['name']} did not match eager")
        ms = r["ms"]
        lines.append(f"| {r['name']} | " + " | ".join(_num(ms[k]) for k in (
            "eager", "torch.compile", *forms))
            + f" | {_ratio(ms['before'] / ms['both (now)'])}"
            + (f" | {_ratio(ms['taps unfolded'] / ms['both (now)'])}" if taps else "")
            + f" | {_ratio(ms['eager'] / ms['both (now)'])}"
            " | " + " / ".join(_seconds(r["compile_s"][f]) for f in forms)
            + " | " + " / ".join(_seconds(r["iree_compile_s"][f]) for f in forms)
            + " | " + " / ".join(str(r["dispatches"][f]) for f in forms)
            + ("".join([" | ", " / ".join(str(r["parameters"][f]) for f in forms)])
               if params else "")
            + f" | {_num(max(r['error_over_scale'].values()), 2)} |")
    return (("\n".join(lines)) + f"\n\nLoad average {_num(data['load_after'], 2)} at the end of "
            f"the run.\n\n{provenance(path, data['meta'])}")


# -- tool_startup.py --json ------------------------------------------------------------------------
def render_tool_startup(before: dict, after: dict, paths: tuple[str, str]) -> str:
    """``lowerkit-opt`` per call and the lit suite, in another tree (``before``) and this one."""
    def tree(d: dict) -> str:
        return f"`{(d.get('tree_commit') or '?')[:10]}`"

    lines = [f"| fresh process, median of {after['calls']} | {tree(before)} | {tree(after)} |",
             "| --- | ---: | ---: |"]
    for name, row in after["commands"].items():
        old = before["commands"].get(name, {}).get("median_s")
        lines.append(f"| `{name}` | {_num(old)} s | {_num(row['median_s'])} s |")
    if before.get("lit") and after.get("lit"):
        lines.append(f"| `lit test/lit pipelines` (whole suite, once) | {_num(before['lit']['wall_s'])} s "
                     f"| {_num(after['lit']['wall_s'])} s |")
    return ("\n".join(lines) + "\n\n" + provenance(paths[0], before["meta"]) + "\n\n"
            + provenance(paths[1], after["meta"]))


# -- fresh_process.py --json -----------------------------------------------------------------------
def render_fresh_process(data: dict, path: str, parts: bool = False,
                         stages: tuple[str, ...] = ()) -> str:
    """One fresh process per checkout and round: imports, ResNet-18's compile and first call;
    with ``parts``, the parts of the compile that lowerkit controls instead of the imports;
    with ``stages``, those stages' medians and the rest of the compile."""
    if stages:
        return _render_fresh_process_stages(data, path, stages)
    # full collections (every one in the compile, Python's and lowerkit's): runs from
    # fresh_process.py since it counted them
    full = parts and all("full_collections" in row["median"] for row in data["trees"])
    head = ("| ResNet-18 compile s | garbage collection at the start s | at the end s "
            "| waiting for the host CPU s | lowerkit's Python stages in IREE's build s "
            + ("| full collections in the compile | their s " if full else "")
            + "| first call s |" if parts else
            "| site-packages modules it imported with bytecode | whole process s "
            "| `import torch` s | ResNet-18 compile s | first call s |")
    lines = [f"| a fresh process, median of {data['rounds']} (interleaved) {head} matches eager |",
             "| --- |" + " ---: |" * (head.count("|") - 1) + " --- |"]
    for row in data["trees"]:
        if not row["matches_eager"]:
            raise ResultError(f"{path}: {row['tree']} did not match eager")
        m = row["median"]
        cells = ([_seconds(m["compile_s"]), *(_num(m[k], 2) for k in (
                     "gc_start_s", "gc_end_s", "host_cpu_wait_s", "iree_side_python_s")),
                  *((f"{m['full_collections']:g}", _num(m["full_collections_s"], 2))
                    if full else ())]
                 if parts else
                 [f"{row['site_modules_with_bytecode']} of {row['site_modules']}",
                  *(_seconds(m[k]) for k in ("process_s", "import_torch_s", "compile_s"))])
        lines.append(f"| checkout at `{(row['commit'] or '?')[:10]}` | " + " | ".join(cells)
                     + f" | {_num(m['first_call_s'])} | yes |")
    return "\n".join(lines) + "\n\n" + provenance(path, data["meta"])


def _render_fresh_process_stages(data: dict, path: str, stages: tuple[str, ...]) -> str:
    """`render_fresh_process` by stage: each one's median over the rounds, the rest of the
    compile (what lowerkit loads at its first compile, and what runs between stages), the first
    call and the model to its first result."""
    import statistics

    lines = [f"| a fresh process, ResNet-18, median of {data['rounds']} (interleaved) | "
             + " | ".join(f"{name} s" for name in stages)
             + " | the rest of the compile s | compile s | first call s | to first result s "
               "| matches eager |",
             "| --- |" + " ---: |" * (len(stages) + 4) + " --- |"]
    for row in data["trees"]:
        if not row["matches_eager"]:
            raise ResultError(f"{path}: {row['tree']} did not match eager")
        runs = row["runs"]

        def median(of):
            return statistics.median(of(r) for r in runs)

        cells = [*(_seconds(median(lambda r, n=name: r["stages_s"].get(n, 0.0))) for name in stages),
                 _seconds(median(lambda r: r["compile_s"] - sum(r["stages_s"].values()))),
                 _seconds(median(lambda r: r["compile_s"])),
                 _num(median(lambda r: r["first_call_s"])),
                 _seconds(median(lambda r: r["compile_s"] + r["first_call_s"]))]
        lines.append(f"| checkout at `{(row['commit'] or '?')[:10]}` | " + " | ".join(cells)
                     + " | yes |")
    return "\n".join(lines) + "\n\n" + provenance(path, data["meta"])


# -- real_ceiling.py --json ------------------------------------------------------------------------
def render_real_ceiling(data: dict, path: str) -> str:
    """The real-shape set's counted work against this host's measured fp32 peak: the most any
    compiler could be ahead of eager on each program."""
    peak = data["peak_gflops"]
    lines = ["| program | GFLOP counted | ms at the peak | eager ms | lowerkit ms | eager, % of peak "
             "| lowerkit, % of peak | most × eager at the peak |",
             "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for r in data["models"]:
        lines.append(f"| {r['model']} | {_num(r['flops'] / 1e9)} | {_num(r['at_peak_ms'])} | "
                     f"{_num(r['eager_ms'])} | {_num(r['lowerkit_ms'])} | "
                     f"{_num(100 * r['eager_share_of_peak'], 2)} | "
                     f"{_num(100 * r['lowerkit_share_of_peak'], 2)} | {_ratio(r['ceiling_vs_eager'])} |")
    ceilings = [r["ceiling_vs_eager"] for r in data["models"]]
    under = [r["model"] for r in data["models"] if r["ceiling_vs_eager"] < 2]
    lines.append(f"| **geomean, {len(ceilings)} programs** | | | | | | | **{_ratio(geomean(ceilings))}** |")
    return ("\n".join(lines) + f"\n\nMeasured fp32 peak: **{_num(peak)} GFLOP/s** (the better of "
            + " and ".join(_num(p["gflops"]) for p in data["peaks"]) + " at the start and the end). "
            + (f"Under 2× even at the peak: {', '.join(under)}." if under else
               "Every program could reach 2× at the peak.")
            + f" Times from `{Path(data['run']).name}` (commit `{(data.get('run_commit') or '?')[:10]}`)."
            + "\n\n" + provenance(path, data["meta"]))


# -- e2e_suite.py --json ---------------------------------------------------------------------------
def render_e2e(data: dict, path: str) -> str:
    """torch-mlir's e2e suite through lowerkit: the counts by outcome and the errors by stage."""
    summary = data["summary"]
    by = summary["by_outcome"]
    via = data["meta"].get("via", "backend")
    lines = [f"| torch-mlir e2e suite via `{via}` | tests |", "| --- | ---: |",
             f"| in the suite | {summary['total']} |",
             f"| eager run fails (not counted) | {by.get('eager-fails', 0)} |",
             f"| **pass**: matches eager, every graph in lowerkit | **{by.get('pass', 0)}** "
             f"(**{_num(100 * summary['pass_rate'])} %** of {summary['denominator']}) |",
             f"| no graph: matches, but Dynamo handed lowerkit no ATen op | {by.get('no-graph', 0)} |",
             *([f"| no work: no graph, and the program computes no tensor (not counted) | "
                f"{by['no-work']} |"] if "no-work" in by else []),
             f"| mismatch (a wrong answer) | {by.get('mismatch', 0)} |",
             f"| error (a clear exception; by stage below) | {by.get('error', 0)} |",
             f"| timeout / crash / ran eagerly | {by.get('timeout', 0)} / {by.get('crash', 0)} / "
             f"{by.get('fallback', 0)} |"]
    stages = ", ".join(f"{k} {v}" for k, v in sorted(summary["errors_by_stage"].items(),
                                                    key=lambda kv: -kv[1]))
    guard = summary.get("guard_on_data_dependent") or {}
    extra = [f"Errors by stage: {stages}."]
    again = data["meta"].get("rejudged")
    if again:
        extra.append(f"Judged again by the runner's rules at commit "
                     f"`{(again.get('lowerkit_commit') or '?')[:10]}`, {again['date']} "
                     f"({again['changed']} outcomes changed; a no-graph test's program run "
                     f"eagerly again, nothing through lowerkit): `{again['command']}`.")
    if "strict_pass_rate" in summary:
        extra.append(f"Counting the no-work tests as not passing: {by.get('pass', 0)} of "
                     f"{summary['strict_denominator']} "
                     f"({_num(100 * summary['strict_pass_rate'])} %).")
    if guard:
        outcomes = ", ".join(f"{k} {v}" for k, v in sorted(guard.get("by_outcome", {}).items()))
        extra.append(f"`torch.export` refuses {guard['count']} of these tests with "
                     f"`GuardOnDataDependentSymNode`; through "
                     f"{'the backend' if via == 'backend' else '`lowerkit.compile`'}: {outcomes}.")
        if via == "compile":  # those belong to the torch.compile path
            rest = summary["denominator"] - guard["count"]
            extra.append(f"Without them: {by.get('pass', 0)} of {rest} "
                         f"({_num(100 * by.get('pass', 0) / rest)} %).")
    return "\n".join(lines) + "\n\n" + " ".join(extra) + "\n\n" + provenance(path, data["meta"])


# -- graph_view.py --json -------------------------------------------------------------------------
def render_graph_view(data: dict, path: str) -> str:
    """A dump's largest stages opened in Model Explorer: size and time to a drawn graph."""
    lines = [f"| {data['model']} stage opened in Model Explorer | graphs | nodes (largest graph) "
             f"| JSON | server's read of the JSON | open, median of {data['repeats']} "
             "| CPU time of the open |",
             "| --- | --- | ---: | ---: | ---: | ---: | ---: |"]
    for why, r in data["opened"].items():
        lines.append(f"| {why}: `{Path(r['graph']).name}` | {r['graphs']} | {r['nodes']} "
                     f"({r['largest_graph_nodes']}) | {r['bytes'] / 2**20:.1f} MiB "
                     f"| {_seconds(r['server_read_median_s'])} s | **{_seconds(r['open_median_s'])} s** "
                     f"| {_seconds(r.get('open_cpu_median_s'))} s |")
    dump = (f" The dump with every stage's graph took {_seconds(data['dump_s'])} s."
            if data.get("dump_s") else "")
    return ("\n".join(lines) + f"\n\nTimed: {data['timed']}.{dump}\n\n"
            + provenance(path, data["meta"]))


# -- executor_scaling.py --json ---------------------------------------------------------------------
def render_executor_scaling(data: dict, path: str) -> str:
    """Items a minute of each batch runner on each executor, and Ray's cost per item."""
    by = {(r["config"], r["runner"]): r for r in data["runs"]}
    configs = ("inprocess", "ray-1", "ray-2")
    lines = ["| runner | items | in process, items/min | Ray, 1 worker | Ray, 2 workers "
             "| 2 workers × in process | same verdicts |",
             "| --- | ---: | ---: | ---: | ---: | ---: | --- |"]
    names = {"fuzz": "`lowerkit fuzz` (programs on cpu)",
             "e2e": "`benchmarks/e2e_suite.py` (tests via backend)"}
    for runner in ("fuzz", "e2e"):
        if ("inprocess", runner) not in by:
            continue
        rates = [by[(c, runner)]["items_per_min"] for c in configs]
        lines.append(f"| {names[runner]} | {by[('inprocess', runner)]['items']} | "
                     + " | ".join(_num(r) for r in rates)
                     + f" | {_ratio(rates[2] / rates[0])} "
                     f"| {'yes' if data['same_verdicts'][runner] else '**no**'} |")
    echo = by[("ray-1", "echo")]
    return ("\n".join(lines) + f"\n\nRay's overhead per item (a job that does nothing, "
            f"{echo['items']} items on one worker, minus the same in process): "
            f"**{_num(data['ray_overhead_ms_per_item'])} ms**; a local Ray starts in "
            f"{_num(echo['ray_startup_s'])} s. Each wall time runs from the first item handed "
            "over to the last outcome back: it includes each worker's one-time cost (importing "
            "torch, the first compile).\n\n" + provenance(path, data["meta"]))


# -- fuzz_campaign.py --json ----------------------------------------------------------------------
def render_fuzz(data: dict, path: str) -> str:
    """The fuzz campaign's verdicts, one row a target, and each failure's first line."""
    from lowerkit.tools.fuzz import VERDICTS

    lines = ["| target | programs | " + " | ".join(VERDICTS) + " |",
             "| --- | ---: |" + " ---: |" * len(VERDICTS)]
    for target, c in data["targets"].items():
        lines.append(f"| `{target}` | {c['programs']} | "
                     + " | ".join(f"**{c[k]}**" if k in ("wrong", "crash", "error") and c[k]
                                  else str(c[k]) for k in VERDICTS) + " |")
    header = data["header"]
    stopped = data.get("stopped_after")
    ran = (f"{stopped} programs only (the run was stopped there, short of the "
           f"{header['examples']} it was started for)" if stopped
           else f"{header['examples']} generated programs")
    journals = data["journal"] if isinstance(data["journal"], list) else [data["journal"]]
    shards = (f", in {len(journals)} shards run side by side" if len(journals) > 1 else "")
    text = (f"Seed {header['seed']}, {ran}, each run on every target{shards} "
            f"({_num(data['seconds'] / 60, 2)} min); the journal, with each "
            f"program's source, is " + ", ".join(f"`benchmarks/results/{j}`" for j in journals)
            + " (`lowerkit fuzz --replay` runs its failures again).")
    failures = [f"- program {f['n']} on `{f['target']}`, {f['kind']}: "
                f"{f['message'].splitlines()[0][:160]}" for f in data["failures"]]
    if failures:
        text += " What failed:\n\n" \
            + "\n".join(failures)
    return "\n".join(lines) + "\n\n" + text + "\n\n" + provenance(path, data["meta"])


def render_cuda_weights(data: dict, path: str) -> str:
    """Per zoo model compiled here for a GPU and run there: its rung, its weights as
    parameters, and each check against eager (error / scale)."""
    names = ("irpa", "other checkpoint", "changed in place")
    lines = ["| model | rung | weights | " + " | ".join(names) + " |",
             "| --- | --- | ---: |" + " ---: |" * len(names)]
    for r in data["models"]:
        if not r.get("compiled", True) or "checks" not in r:
            lines.append(f"| {r['model']} | ✗ {r.get('error', 'not compiled')[:80]} | | | | |")
            continue
        cells = [("✓ " if c["ok"] else "✗ ") + _num(c["max_rel_error"], 2)
                 if (c := r["checks"].get(n)) else "-" for n in names]
        lines.append(f"| {r['model']} | {r['rung']} | {r['parameters']} | " + " | ".join(cells) + " |")
    meta = data["meta"]
    text = (f"{data['passed']} of {data['total']} zoo models match eager on {meta['ran_on']} "
            f"(`{data['target']}`, run with torch {meta['torch_there']} and iree-base-runtime "
            f"there; compiled here with torch {meta['torch_here']}). Each cell is the largest "
            "error against the output's scale; '-': a model without weights.")
    return "\n".join(lines) + "\n\n" + text + "\n\n" + provenance(path, meta)


def render_import_trace(data: dict, path: str) -> str:
    """torch-import's two traces per model (medians), and the one-trace alternative."""
    cols = ("export", "decompose", "decompose, torch-mlir's table only", "one trace")
    lines = ["| model | " + " | ".join(f"{c} s" for c in cols) + " | ops exported → decomposed |",
             "| --- |" + " ---: |" * (len(cols) + 1)]
    for r in data["models"]:
        t = r["median_s"]
        lines.append(f"| {r['model']} | " + " | ".join(_num(t[c], 2) for c in cols)
                     + f" | {r['ops']['export']} → {r['ops']['decompose']} |")
    return ("\n".join(lines) + f"\n\nMedians of {data['repeats']}, interleaved; read across a "
            "row.\n\n" + provenance(path, data["meta"]))


def render_ecosystem(data: dict, path: str) -> str:
    """Per ecosystem model: the host check (stage reached, rung, error / scale, compile s) and
    the rung per named CPU; then the counts and the rungs used."""
    from collections import Counter

    from lowerkit.zoo.ecosystem import ECOSYSTEM

    cpus = data["meta"].get("cpus", [])
    lines = ["| model | library | on this host | rung | error / scale | compile s | "
             + " | ".join(f"`cpu:{c}`" for c in cpus) + " |",
             "| --- | --- | --- | --- | ---: | ---: |" + " --- |" * len(cpus)]
    rungs, cpu_ok = Counter(), Counter()
    for r in data["models"]:
        h = r["host"]
        where = "✓ matches eager" if h["ok"] else f"✗ {h['stage']}"
        if h.get("rung"):
            rungs[h["rung"]] += 1
        per_cpu = []
        for c in cpus:
            cr = r["cpus"].get(c, {})
            cpu_ok[c] += bool(cr.get("ok"))
            if cr.get("rung"):
                rungs[cr["rung"]] += 1
            per_cpu.append(cr["rung"] if cr.get("ok") else f"✗ {cr.get('stage', '-')}")
        lines.append(f"| {r['model']} | {r['library']} | {where} | {h.get('rung') or '-'} "
                     f"| {_num(h.get('max_rel_error'), 2)} | {_seconds(h.get('compile_seconds'))} "
                     f"| " + " | ".join(per_cpu) + " |")
    n = len(data["models"])
    passed = sum(r["host"]["ok"] for r in data["models"])
    failed = [f"{r['model']} ({r['host']['stage']}: {r['host'].get('message', '')[:120]})"
              for r in data["models"] if not r["host"]["ok"]]
    text = [f"**{passed} of {n}** models (the zoo has {len(ECOSYSTEM)}) compile and match eager "
            f"on this host; compiled for "
            + ", ".join(f"`{c}`: {cpu_ok[c]} of {n}" for c in cpus) + ". Compile ladder rungs "
            "used, over every compile: "
            + ", ".join(f"{k} {v}" for k, v in rungs.most_common()) + "."]
    if failed:
        text.append("Stopped: " + "; ".join(failed) + ".")
    for m in data.get("merged", []):
        redone = [r["model"] for r in data["models"] if r.get("commit") == m["commit"]]
        text.append(f"Rows {', '.join(redone)} taken again at commit `{m['commit'][:10]}` "
                    f"({m['date']}; `{m['command']}`).")
    return "\n".join(lines) + "\n\n" + " ".join(text) + "\n\n" + provenance(path, data["meta"])


# -- attention_loop.py --json -----------------------------------------------------------------------
def render_attention_loop(data: dict, path: str) -> str:
    """The attention dispatch's innermost loop, one step, by instruction kind."""
    kinds = ("fused multiply-add", "lane shuffle, extract or insert", "broadcast",
             "stack load or store", "max or min", "other vector arithmetic",
             "vector load or store", "scalar and control")
    lines = ["| case (4 heads, fp32) | a step: rows × keys | instructions | per score | "
             "the matmuls' multiply-adds | " + " | ".join(kinds) + " | call ms |",
             "| --- | ---: | ---: | ---: | ---: |" + " ---: |" * len(kinds) + " ---: |"]
    for r in data["cases"]:
        if not r["matches"]:
            raise ResultError(f"{path}: {r['case']} did not match eager")
        k = r["kinds"]
        at = f" at tiles {','.join(map(str, r['tiles']))}" if r.get("tiles") else ""
        lines.append(f"| {r['case']}{at} | {r['rows']} × {r['keys']} | {r['instructions']} | "
                     f"{_num(r['instructions'] / (r['rows'] * r['keys']), 2)} | {r['matmul_fmas']} | "
                     + " | ".join(str(k.get(name, 0)) for name in kinds)
                     + f" | {_num(r['call_ms'])} |")
    return ("\n".join(lines) + "\n\nEvery case matches eager within 0.0001 of the output's "
            "scale. Each step is read from the assembly iree-compile wrote for this host (`"
            + "`, `".join(r["dispatch"] for r in data["cases"]) + "`).\n\n"
            + provenance(path, data["meta"]))


# -- attention.py --json ----------------------------------------------------------------------------
def render_attention(data: dict, path: str) -> str:
    lines = ["| case (4 heads, fp32) | eager ms | torch.compile ms | lowerkit ms | × eager "
             "| × torch.compile | lowerkit GFLOP/s | error / scale |",
             "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for r in data["cases"]:
        ms = r["median_ms"]
        lines.append(f"| {r['model']} | " + " | ".join(
            _num(ms.get(k)) for k in ("eager", "torch.compile", "lowerkit"))
            + f" | {_ratio(r.get('lowerkit_vs_eager'))} | {_ratio(r.get('lowerkit_vs_torch_compile'))}"
            f" | {_num((r.get('gflops') or {}).get('lowerkit'))} | {_num(r.get('error'), 2)} |")
    cases = data["cases"]
    slower = [r["model"] for r in cases if r.get("lowerkit_vs_eager", math.nan) < 1.0]
    ok = sum(bool(r.get("matches")) for r in cases)
    text = [f"Geomean **{_ratio(geomean([r.get('lowerkit_vs_eager') for r in cases]))} eager**, "
            f"**{_ratio(geomean([r.get('lowerkit_vs_torch_compile') for r in cases]))} "
            f"torch.compile**; {ok} of {len(cases)} cases within {data['tolerance']:g} of eager's "
            "output scale; " + (f"slower than eager: {', '.join(slower)}." if slower
                                else "none slower than eager.")]
    load = data["meta"].get("load_average_end")
    if load:
        text.append(f"Load average {_num(load[0], 2)} at the end of the run.")
    out = "\n".join(lines) + "\n\n" + " ".join(text)
    if cases and cases[0].get("tiles"):  # --tiles: lowerkit again at other attention tiles
        tried = [",".join(map(str, t)) for t in cases[0]["tiles"]["tried"]]
        out += ("\n\n| case: ms at attention tiles R,r,k | lowerkit's own | "
                + " | ".join(tried) + " |\n| --- | ---: |" + " ---: |" * len(tried) + "\n")
        for r in cases:
            ms, own = r["median_ms"], ",".join(map(str, r["tiles"]["lowerkit"]))
            best = min(ms[k] for k in ms if k.startswith("lowerkit"))
            cell = lambda k: (f"**{_num(ms[k])}**" if ms[k] == best else _num(ms[k]))  # noqa: E731
            out += (f"| {r['model']} | {cell('lowerkit')} ({own}) | "
                    + " | ".join(cell("lowerkit@" + t) for t in tried) + " |\n")
        worst = max(e for r in cases for e in r["tiles"]["errors"].values())
        out += (f"\nEvery tile's largest error is within {_num(worst, 2)} of eager's output "
                "scale; the fastest of each row in bold.")
    dispatches = data.get("dispatches")
    if dispatches:
        before, after = dispatches["before"], dispatches["after"]
        out += (f"\n\n| `{dispatches['case']}`, each dispatch alone (`iree-benchmark-module`) "
                f"| µs |\n| --- | ---: |\n"
                f"| **before** (torch's math decomposition): a call | {_num(before['call_ms'] * 1e3)} |\n")
        out += "".join(f"| before: `{d['dispatch']}` | {_num(d['us'])} |\n"
                       for d in before["dispatches"])
        out += f"| **now** (`lower-attention`): a call | {_num(after['call_ms'] * 1e3)} |\n"
        out += "".join(f"| now: `{d['dispatch']}` | {_num(d['us'])} |\n"
                       for d in after["dispatches"])
        out = out.rstrip("\n")
    return out + "\n\n" + provenance(path, data["meta"])


# -- gemm.py --json ----------------------------------------------------------------------------------
def render_gemm(data: dict, path: str) -> str:
    peak = max(data["peak"]["gflops"], data["peak_after"]["gflops"])
    lines = ["| fp32 GEMM, batch 1 | M×K×N | eager GFLOP/s | torch.compile GFLOP/s "
             "| lowerkit GFLOP/s | lowerkit % of peak | eager % of peak "
             "| lowerkit's matmul dispatch GFLOP/s | its % of peak | error / scale |",
             "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for r in data["shapes"]:
        g = r.get("gflops") or {}
        kernel = (r.get("profile") or {}).get("matmul_gflops", math.nan)
        lines.append(f"| {r['model']} | {'×'.join(map(str, r['shape']))} | "
                     + " | ".join(_num(g.get(k)) for k in ("eager", "torch.compile", "lowerkit"))
                     + f" | {_num(100 * g.get('lowerkit', math.nan) / peak, 2)}"
                     f" | {_num(100 * g.get('eager', math.nan) / peak, 2)}"
                     f" | {_num(kernel)} | {_num(100 * kernel / peak, 2)}"
                     f" | {_num(r.get('error'), 2)} |")
    p = data["peak"]
    text = (f"Measured fp32 peak: **{_num(peak)} GFLOP/s** (the better of "
            f"{_num(data['peak']['gflops'])} before and {_num(data['peak_after']['gflops'])} "
            f"after the run; an FMA loop on {p['vector_bytes']}-byte vectors, {p['threads']} "
            f"threads, `{p['build']}`).")
    above = [r["model"] for r in data["shapes"]
             if any(v > peak for v in (r.get("gflops") or {}).values() if math.isfinite(v))]
    if above:  # the loop spilled (16 accumulators on AVX2 did) or the clock moved
        text += (f" **The measured peak is too low**: {', '.join(above)} ran faster than it, "
                 "so no percentage of it here means anything.")
    load = data["meta"].get("load_average_end")
    if load:
        text += f" Load average {_num(load[0], 2)} at the end of the run."
    return "\n".join(lines) + "\n\n" + text + "\n\n" + provenance(path, data["meta"])


# -- profile_real.py --json -------------------------------------------------------------------------
def _slowest(row: dict, n: int = 2) -> str:
    return "; ".join(f"`{d['name'].split('_dispatch_', 1)[-1]}` {_num(d['ms_per_call'])} "
                     f"({_num(100 * d['ms_per_call'] / row['call_ms'], 2)} %)"
                     for d in row["dispatches"][:n])


def render_profile_real(before: dict, now: dict, paths: tuple[str, str]) -> str:
    """Per real-shape model: a call's time and its slowest dispatches inside the call, from
    IREE's runtime profiling, at an earlier commit and now."""
    old = {r["name"]: r for r in before["rows"]}
    lines = ["| model | before: a call ms | before: slowest dispatches, ms a call (share) "
             "| now: a call ms | now: executions a call | now: slowest dispatches, ms a call "
             "(share) | now: ms by root op |",
             "| --- | ---: | --- | ---: | ---: | --- | --- |"]
    for r in now["rows"]:
        if not r["matches_eager"]:
            raise ResultError(f"{paths[1]}: {r['name']} did not match eager")
        b = old.get(r["name"])
        kinds = ", ".join(f"{k} {_num(ms)}" for k, ms in list(r["by_kind"].items())[:3])
        lines.append(f"| {r['name']} | {_num(b['call_ms']) if b else '-'} | "
                     f"{_slowest(b) if b else '-'} | {_num(r['call_ms'])} "
                     f"| {_num(r.get('executions_per_call'))} | {_slowest(r)} "
                     f"| {kinds} |")
    return ("\n".join(lines) + "\n\nA call is `iree-benchmark-module`'s, with profiling on; the "
            "dispatch names drop their `main_dispatch_N_` prefix.\n\n"
            + provenance(paths[0], before["meta"]) + "\n\n" + provenance(paths[1], now["meta"]))


def host_name(meta: dict) -> str:
    """A CPU named the way the pages name hosts: AMD's family and model give the Zen generation
    (the model string of a cloud VM says only "AMD EPYC")."""
    cpu = meta.get("cpu", {})
    model, family, number = cpu.get("model", "?"), cpu.get("family"), cpu.get("model_number")
    family, number = (int(v) if v is not None else None for v in (family, number))  # stored as text
    if "AMD" in model and family is not None:
        zen = {26: "Zen 5"}.get(family) or (
            "Zen 4" if family == 25 and number is not None and 0x10 <= number <= 0x1F
            else "Zen 3" if family == 25 else None)
        if zen:
            return f"{model}, {zen}"
    return model


def machine_name(cpu: dict) -> str:
    """A host kind as the benchmark suite's asv machine name (``amd-epyc-zen-4-2cores``): the
    CPU as the pages name it (`host_name`) and the cores a run could use."""
    cores = cpu.get("cores_usable") or cpu.get("cores")
    slug = re.sub(r"[^a-z0-9]+", "-", host_name({"cpu": cpu}).lower()).strip("-")
    return f"{slug}-{cores}cores"


# -- the benchmark suite (benchmarks/suite/, asv; benchmarks/run_suite.py) -------------------------
SUITE_COMMAND = ".venv/bin/python benchmarks/run_suite.py"
SUITE_GEOMEAN = "geomean"
# the suite's sets: asv's class, what the pages call it, the benchmark giving "× eager"
SUITE_SETS = {
    "real_shapes.RealShapes": "real-shape set",
    "real_models.RealModels": "real-size zoo",
    "zoo.Zoo": "zoo",
    "call_floor.CallFloor": "call floor",
}


@dataclass(frozen=True)
class SuiteRun:
    """One asv results file of the suite: a host kind (asv's machine), a commit, the run's
    provenance (``benchmarks/results/asv-provenance/MACHINE/COMMIT.json``) and each
    benchmark's value per program."""

    machine: str
    commit: str
    meta: dict
    path: str                                  # the asv file, from the repository's root
    values: dict[str, dict[str, float | None]]

    @property
    def quick(self) -> bool:
        return bool(self.meta.get("quick"))

    def has(self, cls: str) -> bool:
        return any(k.startswith(cls + ".") for k in self.values)

    def get(self, cls: str, track: str) -> dict[str, float | None]:
        return self.values.get(f"{cls}.{track}", {})


def _asv_values(data: dict) -> dict[str, dict[str, float | None]]:
    """An asv results file's values: per benchmark, per program (its one parameter)."""
    import ast
    import itertools

    out = {}
    for name, row in data["results"].items():
        cols = dict(zip(data["result_columns"], row))
        params = cols.get("params") or []
        result = cols.get("result")
        combos = list(itertools.product(*params)) if params else [()]
        result = result if isinstance(result, list) else [result]
        out[name] = {(ast.literal_eval(c[0]) if c else ""): (v if isinstance(v, (int, float))
                                                              else None)
                     for c, v in zip(combos, result)}
    return out


def load_suite(results: Path = RESULTS) -> list[SuiteRun]:
    """Every run of the suite stored under ``results/asv`` (asv's results: a folder per
    machine), each with its provenance; oldest first."""
    runs = []
    base = results / "asv"
    if not base.is_dir():
        return runs
    for machine in sorted(d for d in base.iterdir() if (d / "machine.json").is_file()):
        for f in sorted(machine.glob("*.json")):
            if f.name == "machine.json":
                continue
            data = json.loads(f.read_text())
            prov = results / "asv-provenance" / machine.name / f"{data['commit_hash']}.json"
            if not prov.is_file():
                raise ResultError(f"{f}: no provenance ({prov}): run the suite with "
                                  f"`{SUITE_COMMAND}`, which stores it")
            meta = json.loads(prov.read_text())
            if meta.get("commit") != data["commit_hash"] or not meta.get("cpu", {}).get("model"):
                raise ResultError(f"{prov}: not the provenance of {f} (commit, CPU)")
            try:
                rel = str(f.relative_to(ROOT))
            except ValueError:
                rel = f"benchmarks/results/asv/{machine.name}/{f.name}"
            runs.append(SuiteRun(machine.name, data["commit_hash"], meta, rel, _asv_values(data)))
    return sorted(runs, key=lambda r: r.meta.get("date", ""))


def _check_suite_run(run: SuiteRun, torch_threads: int = 2) -> SuiteRun:
    """A suite run that backs a figure of the current code (`load_result`'s rules)."""
    from lowerkit.target import CPU_SPEED_FLAGS

    if run.meta.get("iree_cpu_flags") != list(CPU_SPEED_FLAGS):
        raise ResultError(f"{run.path}: taken with the cpu flags {run.meta.get('iree_cpu_flags')},"
                          f" lowerkit now uses {list(CPU_SPEED_FLAGS)}: run the suite again")
    used = run.meta.get("threads", {}).get("torch")
    if used != torch_threads:
        raise ResultError(f"{run.path}: taken with {used} torch threads, the suite's tables are "
                          f"for {torch_threads}")
    return run


def newest_suite_runs(suite: list[SuiteRun], cls: str, quick: bool = False) -> dict[str, SuiteRun]:
    """Per machine, its newest run of the set ``cls`` (quick runs only when ``quick``)."""
    newest: dict[str, SuiteRun] = {}
    for run in suite:  # oldest first
        if run.has(cls) and (quick or not run.quick):
            newest[run.machine] = run
    return newest


def _speed(time_over: float | None) -> float:
    """A suite ratio of times (lowerkit's over another's: lower is better, as asv reads every
    value) as the pages' speed ratio ("2.00× eager")."""
    return 1.0 / time_over if time_over else math.nan


def _programs(values: dict[str, float | None]) -> list[str]:
    return [p for p in values if p != SUITE_GEOMEAN]


def _suite_cell(run: SuiteRun) -> str:
    source = run.meta.get("imported_from")
    return (f"`{run.machine}`, commit `{run.commit[:10]}`, {run.meta.get('date', '?')[:10]}"
            + (f" (stored as `{Path(source).name}`)" if source else "")
            + (" (quick)" if run.quick else ""))


def render_suite(*_files, suite: list[SuiteRun]) -> str:
    """The performance page's table of the suite: per host kind and set, its newest run (a quick
    run where the host has no other): programs, geomeans against eager and torch.compile, and
    lowerkit's own geomean time; then each run's provenance."""
    if not suite:
        return ("_Not measured yet: no run of the suite in `benchmarks/results/asv/`. On a quiet "
                "machine:_\n\n```bash\n" + SUITE_COMMAND + "\n" + REGENERATE + "\n```")
    lines = ["| host | set | programs | geomean × eager | geomean × torch.compile "
             "| lowerkit, geomean | run |",
             "| --- | --- | ---: | ---: | ---: | ---: | --- |"]
    used: dict[str, SuiteRun] = {}
    machines = sorted({r.machine for r in suite})
    for machine in machines:
        for cls, label in SUITE_SETS.items():
            run = (newest_suite_runs(suite, cls).get(machine)
                   or newest_suite_runs(suite, cls, quick=True).get(machine))
            if run is None:
                continue
            _check_suite_run(run)
            used[run.path] = run
            if cls == "call_floor.CallFloor":
                eager, lk = run.get(cls, "track_eager_us"), run.get(cls, "track_lowerkit_us")
                floor = run.get(cls, "track_floor_us").get(SUITE_GEOMEAN)
                ge, gc = ((eager.get(SUITE_GEOMEAN) or math.nan) / (lk.get(SUITE_GEOMEAN) or
                                                                    math.nan), None)
                own = f"{_num(lk.get(SUITE_GEOMEAN))} µs a call (floor {_num(floor)} µs)"
                count = len(_programs(lk))
            else:
                ge = _speed(run.get(cls, "track_time_over_eager").get(SUITE_GEOMEAN))
                gc = _speed(run.get(cls, "track_time_over_torch_compile").get(SUITE_GEOMEAN))
                own = f"{_num(run.get(cls, 'track_lowerkit_ms').get(SUITE_GEOMEAN))} ms a call"
                count = len(_programs(run.get(cls, "track_time_over_eager")))
            lines.append(f"| {host_name(run.meta)} | {label} | {count} | {_ratio(ge)} "
                         f"| {_ratio(gc)} | {own} | {_suite_cell(run)} |")
    return "\n".join(lines) + "\n\n" + "\n\n".join(
        provenance(r.path, r.meta) for r in sorted(used.values(), key=lambda r: r.path))


def render_headline(*args, suite: list[SuiteRun] | None = None) -> str:
    """The README's one table: per host, its newest run of the real-shape set: from the
    benchmark suite's history (`load_suite`), or a stored file of the block for a host the suite
    has no newer run of."""
    *runs, paths = args
    rows: dict[str, tuple[str, str]] = {}  # machine -> (date, row)
    for data, path in zip(runs, paths):
        meta = data["meta"]
        ge, gc = _zoo_geomeans(data)
        slower = _slower(data)
        rows[machine_name(meta["cpu"])] = (meta.get("date", ""), _headline_row(
            meta, len(data["models"]), ge, gc, slower,
            f"`{Path(path).name}`, commit `{meta['commit'][:10]}`, {meta.get('date', '?')[:10]}"))
    cls = "real_shapes.RealShapes"
    for machine, run in newest_suite_runs(suite or [], cls).items():
        if machine in rows and rows[machine][0] > run.meta.get("date", ""):
            continue
        _check_suite_run(run)
        over_eager = run.get(cls, "track_time_over_eager")
        slower = [p for p in _programs(over_eager)
                  if over_eager[p] is not None and over_eager[p] > 1.0]
        rows[machine] = (run.meta.get("date", ""), _headline_row(
            run.meta, len(_programs(over_eager)), _speed(over_eager.get(SUITE_GEOMEAN)),
            _speed(run.get(cls, "track_time_over_torch_compile").get(SUITE_GEOMEAN)), slower,
            "suite: " + _suite_cell(run)))
    lines = ["| host | AVX-512 | real-shape programs | geomean × eager | geomean × torch.compile "
             "| slower than eager | stored run |",
             "| --- | --- | ---: | ---: | ---: | --- | --- |"]
    return "\n".join(lines + [row for _, row in rows.values()])


def _headline_row(meta: dict, count: int, ge, gc, slower: list[str], run: str) -> str:
    avx512 = "yes" if any(f.startswith("avx512") for f in meta["cpu"].get("flags") or []) else "no"
    return (f"| {host_name(meta)} | {avx512} | {count} | {_ratio(ge)} | {_ratio(gc)} "
            f"| {', '.join(slower) if slower else 'none'} | {run} |")


ZOO_2 = "zoo-cpu-2threads.json"
ZOO_1 = "zoo-cpu-1thread.json"
BLOCKS: dict[str, Block] = {
    # The README's headline: each host's newest real-shape run (the commands are those of the
    # per-host blocks on the performance pages that write these files).
    "headline": Block(
        ("real-shapes-zen5-s69-final.json", "real-shapes-zen4-s68.json", "real-shapes-zen3.json",
         "real-shapes-xeon.json"),
        ("OMP_WAIT_POLICY=PASSIVE .venv/bin/lowerkit bench real --target cpu"
         " --rounds 15 --settle-ms 30 --gemm-size 1024 --torch-threads 2"
         " --json benchmarks/results/real-shapes-HOST.json",),
        render_headline, torch_threads=2, reads_suite=True),
    # The suite's newest run per host kind and set (benchmarks/suite/, benchmarks/run_suite.py).
    "suite": Block((), (SUITE_COMMAND,), render_suite, reads_suite=True),
    "zoo-summary": Block((ZOO_2, ZOO_1), (), render_zoo_summary, whole_zoo=True),
    "real-models-zen4": Block(
        ("real-models-zen4.json",),
        ("OMP_WAIT_POLICY=PASSIVE .venv/bin/lowerkit bench real-models --peers --rounds 7"
         " --torch-threads 2 --json benchmarks/results/real-models-zen4.json",),
        render_real_models, torch_threads=2),
    "real-models-zen4-inception": Block(
        ("real-models-zen4-inception.json",),
        ("OMP_WAIT_POLICY=PASSIVE .venv/bin/lowerkit bench inception_v3,inception_v3 --peers"
         " --rounds 9 --torch-threads 2 --json benchmarks/results/real-models-zen4-inception.json",),
        render_real_models, torch_threads=2),
    "real-models-zen3": Block(
        ("real-models-zen3.json",),
        ("OMP_WAIT_POLICY=PASSIVE .venv/bin/lowerkit bench real-models --peers --rounds 7"
         " --torch-threads 2 --json benchmarks/results/real-models-zen3.json",),
        render_real_models, torch_threads=2),
    "real-models-zen3-513ddae": Block(
        ("real-models-zen3-513ddae.json",),
        ("OMP_WAIT_POLICY=PASSIVE .venv/bin/lowerkit bench real-models --peers --rounds 7"
         " --torch-threads 2 --json benchmarks/results/real-models-zen3-513ddae.json",),
        render_real_models, torch_threads=2),
    "real-models-tuned-zen4": Block(
        ("real-models-tuned-zen4.json",),
        ("for m in regnet_y_400mf mobilenet_v3_small convnext_tiny resnet50; do "
         "OMP_WAIT_POLICY=PASSIVE .venv/bin/lowerkit tune $m --database "
         "benchmarks/results/tuning-real-models-zen4.json --no-dispatches --no-matmul-tile "
         "--rounds 9; done",
         "LOWERKIT_TUNING_DB=off OMP_WAIT_POLICY=PASSIVE .venv/bin/lowerkit bench "
         "regnet_y_400mf,convnext_tiny,mobilenet_v3_small,resnet50 --peers --tuned "
         "benchmarks/results/tuning-real-models-zen4.json --rounds 9 --torch-threads 2 --json "
         "benchmarks/results/real-models-tuned-zen4.json"),
        render_real_models_tuned, torch_threads=2),
    "zoo-2threads": Block(
        (ZOO_2,),
        (f".venv/bin/lowerkit bench zoo --torch-threads 2 --json benchmarks/results/{ZOO_2}",),
        render_zoo, torch_threads=2, whole_zoo=True),
    "zoo-1thread": Block(
        (ZOO_1,),
        (f".venv/bin/lowerkit bench zoo --torch-threads 1 --json benchmarks/results/{ZOO_1}",),
        render_zoo, torch_threads=1, whole_zoo=True),
    "zoo-2threads-xeon": Block(
        ("zoo-cpu-2threads-xeon.json",),
        (".venv/bin/lowerkit bench zoo --torch-threads 2"
         " --json benchmarks/results/zoo-cpu-2threads-xeon.json",),
        render_zoo, torch_threads=2, whole_zoo=True),
    "cpu-flags": Block(
        ("cpu-flags.json",),
        (".venv/bin/python benchmarks/compile_time.py resnet18,bert_tiny --repeats 2 --calls 20"
         " --variant default --variant iree-defaults --variant flags:--iree-opt-const-eval=true"
         " --json benchmarks/results/cpu-flags.json",),
        render_compile_time),
    "compile-cold": Block(
        ("compile-cold.json",),
        (".venv/bin/python benchmarks/compile_cold.py resnet18,resnet50,mobilenet_v2,bert_base,"
         "gpt2_base --json benchmarks/results/compile-cold.json",),
        render_compile_cold),
    "conv-strategy-zen4": Block(
        ("conv-strategy-zen4.json",),
        ("OMP_WAIT_POLICY=PASSIVE .venv/bin/python benchmarks/conv_strategy.py"
         " --json benchmarks/results/conv-strategy-zen4.json",),
        render_conv_strategy, torch_threads=2),
    "compile-cold-zen4": Block(
        ("compile-cold-zen4.json",),
        ("LOWERKIT_TUNING_DB=off OMP_WAIT_POLICY=PASSIVE .venv/bin/python benchmarks/"
         "compile_cold.py resnet18,resnet50,mobilenet_v2,bert_base,gpt2_base"
         " --json benchmarks/results/compile-cold-zen4.json",),
        render_compile_cold),
    "compile-cold-zen4-repeated": Block(
        ("compile-cold-zen4-repeated.json",),
        ("LOWERKIT_TUNING_DB=off OMP_WAIT_POLICY=PASSIVE .venv/bin/python benchmarks/"
         "compile_cold.py resnet18,resnet50,mobilenet_v2,bert_base,gpt2_base --repeats 5"
         " --json benchmarks/results/compile-cold-zen4-repeated.json",),
        render_compile_cold),
    "compile-cold-zen4-s60": Block(
        ("compile-cold-zen4-s60.json",),
        ("LOWERKIT_TUNING_DB=off OMP_WAIT_POLICY=PASSIVE .venv/bin/python benchmarks/"
         "compile_cold.py resnet18,resnet50 --repeats 5"
         " --json benchmarks/results/compile-cold-zen4-s60.json",),
        render_compile_cold),
    "compile-cold-zen4-s61-before": Block(
        ("compile-cold-zen4-s61-before.json",),
        ("git worktree add /tmp/before 2136e84 && cd /tmp/before && LOWERKIT_TUNING_DB=off "
         "OMP_WAIT_POLICY=PASSIVE PYTHONPATH=/tmp/before/python $REPO/.venv/bin/python benchmarks/"
         "compile_cold.py resnet18,resnet50 --repeats 5"
         " --json benchmarks/results/compile-cold-zen4-s61-before.json",),
        render_compile_cold),
    "compile-cold-zen4-s61": Block(
        ("compile-cold-zen4-s61.json",),
        ("LOWERKIT_TUNING_DB=off OMP_WAIT_POLICY=PASSIVE .venv/bin/python benchmarks/"
         "compile_cold.py resnet18,resnet50 --repeats 5"
         " --json benchmarks/results/compile-cold-zen4-s61.json",),
        render_compile_cold),
    "real-shapes-zen4-s62": Block(
        ("real-shapes-zen4-s62.json",),
        ("LOWERKIT_TUNING_DB=off OMP_WAIT_POLICY=PASSIVE .venv/bin/lowerkit bench real --target cpu"
         " --rounds 15 --settle-ms 30 --gemm-size 1024 --torch-threads 2"
         " --json benchmarks/results/real-shapes-zen4-s62.json",),
        render_real_shapes, torch_threads=2),
    "real-shapes-zen4-s64": Block(
        ("real-shapes-zen4-s64.json",),
        ("LOWERKIT_TUNING_DB=off OMP_WAIT_POLICY=PASSIVE .venv/bin/lowerkit bench real --target cpu"
         " --rounds 15 --settle-ms 30 --gemm-size 1024 --torch-threads 2"
         " --json benchmarks/results/real-shapes-zen4-s64.json",),
        render_real_shapes, torch_threads=2),
    "real-shapes-zen4-s64-final": Block(
        ("real-shapes-zen4-s64-final.json",),
        ("LOWERKIT_TUNING_DB=off OMP_WAIT_POLICY=PASSIVE .venv/bin/lowerkit bench real --target cpu"
         " --rounds 15 --settle-ms 30 --gemm-size 1024 --torch-threads 2"
         " --json benchmarks/results/real-shapes-zen4-s64-final.json",),
        render_real_shapes, torch_threads=2),
    "real-shapes-zen4-s66": Block(
        ("real-shapes-zen4-s66.json",),
        ("LOWERKIT_TUNING_DB=off OMP_WAIT_POLICY=PASSIVE .venv/bin/lowerkit bench real --target cpu"
         " --rounds 15 --settle-ms 30 --gemm-size 1024 --torch-threads 2"
         " --json benchmarks/results/real-shapes-zen4-s66.json",),
        render_real_shapes, torch_threads=2),
    "real-shapes-zen4-s68-kernels-off": Block(
        ("real-shapes-zen4-s68-kernels-off.json",),
        ("LOWERKIT_CPU_KERNELS=0 LOWERKIT_TUNING_DB=off OMP_WAIT_POLICY=PASSIVE .venv/bin/lowerkit"
         " bench real --target cpu --rounds 15 --settle-ms 30 --gemm-size 1024 --torch-threads 2"
         " --json benchmarks/results/real-shapes-zen4-s68-kernels-off.json",),
        render_real_shapes, torch_threads=2),
    "real-shapes-zen4-s68": Block(
        ("real-shapes-zen4-s68.json",),
        ("LOWERKIT_TUNING_DB=off OMP_WAIT_POLICY=PASSIVE .venv/bin/lowerkit bench real --target cpu"
         " --rounds 15 --settle-ms 30 --gemm-size 1024 --torch-threads 2"
         " --json benchmarks/results/real-shapes-zen4-s68.json",),
        render_real_shapes, torch_threads=2),
    "real-shapes-zen5-s69": Block(
        ("real-shapes-zen5-s69.json",),
        ("OMP_WAIT_POLICY=PASSIVE .venv/bin/lowerkit bench real --target cpu"
         " --rounds 15 --settle-ms 30 --gemm-size 1024 --torch-threads 2"
         " --json benchmarks/results/real-shapes-zen5-s69.json",),
        render_real_shapes, torch_threads=2),
    "real-shapes-zen5-s69-two-vectors": Block(
        ("real-shapes-zen5-s69-two-vectors.json",),
        ("OMP_WAIT_POLICY=PASSIVE .venv/bin/lowerkit bench real --target cpu"
         " --rounds 15 --settle-ms 30 --gemm-size 1024 --torch-threads 2"
         " --json benchmarks/results/real-shapes-zen5-s69-two-vectors.json",),
        render_real_shapes, torch_threads=2),
    "real-ceiling-zen5": Block(
        ("real-ceiling-zen5.json",),
        (".venv/bin/python benchmarks/real_ceiling.py --run"
         " benchmarks/results/real-shapes-zen5-s69-two-vectors.json"
         " --json benchmarks/results/real-ceiling-zen5.json",),
        render_real_ceiling),
    "real-ceiling-zen4": Block(
        ("real-ceiling-zen4.json",),
        (".venv/bin/python benchmarks/real_ceiling.py --run benchmarks/results/real-shapes-zen4-s62.json"
         " --json benchmarks/results/real-ceiling-zen4.json",),
        render_real_ceiling),
    "fresh-process": Block(
        ("fresh-process.json",),
        ("git clone REPO /tmp/before && (cd /tmp/before && git checkout 0eba029 && scripts/setup)"
         " && OMP_WAIT_POLICY=PASSIVE .venv/bin/python benchmarks/fresh_process.py --tree /tmp/before"
         " --tree FRESH_CLONE_AFTER --rounds 5 --json benchmarks/results/fresh-process.json",),
        render_fresh_process),
    "fresh-process-parts": Block(
        ("fresh-process-parts.json",),
        ("(two fresh clones, each after scripts/setup: at 3f3b297 and at e400900) "
         "OMP_WAIT_POLICY=PASSIVE .venv/bin/python benchmarks/fresh_process.py --tree BEFORE"
         " --tree AFTER --rounds 7 --json benchmarks/results/fresh-process-parts.json",),
        functools.partial(render_fresh_process, parts=True)),
    "fresh-process-collections": Block(
        ("fresh-process-collections.json",),
        ("(two fresh clones, each after scripts/setup: at 4308cdb and at 028e032) "
         "OMP_WAIT_POLICY=PASSIVE .venv/bin/python benchmarks/fresh_process.py --tree BEFORE"
         " --tree AFTER --rounds 7 --json benchmarks/results/fresh-process-collections.json",),
        functools.partial(render_fresh_process, parts=True)),
    "compile-cold-zen4-s62": Block(
        ("compile-cold-zen4-s62.json",),
        ("(in a fresh clone after scripts/setup) LOWERKIT_TUNING_DB=off OMP_WAIT_POLICY=PASSIVE "
         ".venv/bin/python benchmarks/compile_cold.py resnet18,resnet50 --repeats 5"
         " --json benchmarks/results/compile-cold-zen4-s62.json",),
        render_compile_cold),
    "compile-cold-zen4-s63": Block(
        ("compile-cold-zen4-s63.json",),
        ("(in a fresh clone at 028e032 after scripts/setup) LOWERKIT_TUNING_DB=off "
         "OMP_WAIT_POLICY=PASSIVE .venv/bin/python benchmarks/compile_cold.py resnet18,resnet50"
         " --repeats 5 --json benchmarks/results/compile-cold-zen4-s63.json",),
        render_compile_cold),
    "compile-cold-zen4-s64": Block(
        ("compile-cold-zen4-s64.json",),
        ("LOWERKIT_TUNING_DB=off OMP_WAIT_POLICY=PASSIVE .venv/bin/python benchmarks/compile_cold.py"
         " resnet18,resnet50 --repeats 7 --json benchmarks/results/compile-cold-zen4-s64.json",),
        render_compile_cold),
    "compile-cold-zen4-s65": Block(
        ("compile-cold-zen4-s65.json",),
        ("LOWERKIT_TUNING_DB=off OMP_WAIT_POLICY=PASSIVE .venv/bin/python benchmarks/compile_cold.py"
         " resnet18,resnet50 --repeats 7 --json benchmarks/results/compile-cold-zen4-s65.json",),
        render_compile_cold),
    "compile-cold-zen4-s65-again": Block(
        ("compile-cold-zen4-s65-again.json",),
        ("LOWERKIT_TUNING_DB=off OMP_WAIT_POLICY=PASSIVE .venv/bin/python benchmarks/compile_cold.py"
         " resnet18,resnet50 --repeats 7"
         " --json benchmarks/results/compile-cold-zen4-s65-again.json",),
        render_compile_cold),
    "compile-cold-zen4-s66": Block(
        ("compile-cold-zen4-s66.json",),
        ("LOWERKIT_TUNING_DB=off OMP_WAIT_POLICY=PASSIVE .venv/bin/python benchmarks/compile_cold.py"
         " resnet18,resnet50 --repeats 5 --json benchmarks/results/compile-cold-zen4-s66.json",),
        render_compile_cold),
    "compile-cold-zen4-s67-before": Block(
        ("compile-cold-zen4-s67-before.json",),
        ("(in a git worktree at 1daf837, with PYTHONPATH=WORKTREE/python) LOWERKIT_TUNING_DB=off"
         " OMP_WAIT_POLICY=PASSIVE .venv/bin/python benchmarks/compile_cold.py resnet18,resnet50"
         " --repeats 5 --json benchmarks/results/compile-cold-zen4-s67-before.json",),
        render_compile_cold),
    "compile-cold-zen4-s84-before": Block(
        ("compile-cold-zen4-s84-before.json",),
        ("(in a git worktree at 0dec83e, with PYTHONPATH=WORKTREE/python and this commit's"
         " compile_cold.py) LOWERKIT_TUNING_DB=off OMP_WAIT_POLICY=PASSIVE .venv/bin/python"
         " benchmarks/compile_cold.py resnet18,resnet50 --repeats 5"
         " --json benchmarks/results/compile-cold-zen4-s84-before.json",),
        render_compile_cold),
    "compile-cold-zen4-s84": Block(
        ("compile-cold-zen4-s84.json",),
        ("LOWERKIT_TUNING_DB=off OMP_WAIT_POLICY=PASSIVE .venv/bin/python benchmarks/compile_cold.py"
         " resnet18,resnet50 --repeats 5 --inductor"
         " --json benchmarks/results/compile-cold-zen4-s84.json",),
        render_compile_cold),
    "compile-cold-zen4-s67": Block(
        ("compile-cold-zen4-s67.json",),
        ("LOWERKIT_TUNING_DB=off OMP_WAIT_POLICY=PASSIVE .venv/bin/python benchmarks/compile_cold.py"
         " resnet18,resnet50 --repeats 5 --json benchmarks/results/compile-cold-zen4-s67.json",),
        render_compile_cold),
    "compile-cold-zen4-s67-fresh-clone": Block(
        ("compile-cold-zen4-s67-fresh-clone.json",),
        ("(in a fresh clone at 912f68d, after scripts/setup and scripts/test) LOWERKIT_TUNING_DB=off"
         " OMP_WAIT_POLICY=PASSIVE .venv/bin/python benchmarks/compile_cold.py resnet18,resnet50"
         " --repeats 5 --json benchmarks/results/compile-cold-zen4-s67-fresh-clone.json",),
        render_compile_cold),
    "fresh-process-s67": Block(
        ("fresh-process-s67.json",),
        ("(git worktrees at 1daf837 and ad5fefb, each with a venv over this checkout's"
         " site-packages, lowerkit's own bytecode compiled) LOWERKIT_TUNING_DB=off"
         " OMP_WAIT_POLICY=PASSIVE .venv/bin/python benchmarks/fresh_process.py --tree BEFORE"
         " --tree AFTER --rounds 10 --json benchmarks/results/fresh-process-s67.json",),
        functools.partial(render_fresh_process,
                          stages=("torch-import", "keep-nan-arg-reductions", "iree-compile"))),
    "compile-cold-zen4-s64-again": Block(
        ("compile-cold-zen4-s64-again.json",),
        ("(straight after, one commit later: a test) LOWERKIT_TUNING_DB=off OMP_WAIT_POLICY=PASSIVE"
         " .venv/bin/python benchmarks/compile_cold.py resnet18,resnet50 --repeats 7"
         " --json benchmarks/results/compile-cold-zen4-s64-again.json",),
        render_compile_cold),
    "compile-cold-zen4-s63-again": Block(
        ("compile-cold-zen4-s63-again.json",),
        ("(the same clone, straight after) LOWERKIT_TUNING_DB=off OMP_WAIT_POLICY=PASSIVE "
         ".venv/bin/python benchmarks/compile_cold.py resnet18,resnet50 --repeats 5"
         " --json benchmarks/results/compile-cold-zen4-s63-again.json",),
        render_compile_cold),
    "compile-cold-zen5": Block(
        ("compile-cold-zen5.json",),
        ("LOWERKIT_TUNING_DB=off OMP_WAIT_POLICY=PASSIVE .venv/bin/python benchmarks/"
         "compile_cold.py resnet18,resnet50,mobilenet_v2,bert_base,gpt2_base --repeats 5"
         " --json benchmarks/results/compile-cold-zen5.json",),
        render_compile_cold),
    "compile-cold-zen5-resnet18": Block(
        ("compile-cold-zen5-resnet18.json",),
        ("LOWERKIT_TUNING_DB=off OMP_WAIT_POLICY=PASSIVE .venv/bin/python benchmarks/"
         "compile_cold.py resnet18 --repeats 10"
         " --json benchmarks/results/compile-cold-zen5-resnet18.json",),
        render_compile_cold),
    "compile-cold-zen3": Block(
        ("compile-cold-zen3.json",),
        ("LOWERKIT_TUNING_DB=off OMP_WAIT_POLICY=PASSIVE .venv/bin/python benchmarks/"
         "compile_cold.py resnet18,resnet50,mobilenet_v2,bert_base,gpt2_base --repeats 5"
         " --json benchmarks/results/compile-cold-zen3.json",),
        render_compile_cold),
    "compile-cold-zen3-rule": Block(
        ("compile-cold-zen3-rule.json",),
        ("LOWERKIT_TUNING_DB=off OMP_WAIT_POLICY=PASSIVE .venv/bin/python benchmarks/"
         "compile_cold.py resnet18,resnet50 --repeats 3"
         " --json benchmarks/results/compile-cold-zen3-rule.json",),
        render_compile_cold),
    "compile-cold-zen3-tuned": Block(
        ("compile-cold-zen3-tuned.json",),
        ("LOWERKIT_TUNING_DB=benchmarks/results/tuning-zen3.json OMP_WAIT_POLICY=PASSIVE "
         ".venv/bin/python benchmarks/compile_cold.py resnet18,resnet50 --repeats 3"
         " --json benchmarks/results/compile-cold-zen3-tuned.json",),
        render_compile_cold),
    "compile-cold-zen3-thick": Block(
        ("compile-cold-zen3-thick.json",),
        ("LOWERKIT_TUNING_DB=off OMP_WAIT_POLICY=PASSIVE .venv/bin/python benchmarks/"
         "compile_cold.py resnet18,resnet50 --repeats 3"
         " --json benchmarks/results/compile-cold-zen3-thick.json",),
        render_compile_cold),
    "compile-cold-zen3-im2col": Block(
        ("compile-cold-zen3-im2col.json",),
        ("LOWERKIT_TUNING_DB=off OMP_WAIT_POLICY=PASSIVE .venv/bin/python benchmarks/"
         "compile_cold.py resnet18,resnet50 --repeats 3 --convolutions im2col"
         " --json benchmarks/results/compile-cold-zen3-im2col.json",),
        render_compile_cold),
    "compile-cold-zen5-unheld": Block(
        ("compile-cold-zen5-unheld.json",),
        ("LOWERKIT_HOLD_COLLECTIONS=0 LOWERKIT_TUNING_DB=off OMP_WAIT_POLICY=PASSIVE .venv/bin/python"
         " benchmarks/compile_cold.py resnet18,bert_base --repeats 5"
         " --json benchmarks/results/compile-cold-zen5-unheld.json",),
        render_compile_cold),
    "conv-strategy-zen3": Block(
        ("conv-strategy-zen3.json",),
        ("OMP_WAIT_POLICY=PASSIVE .venv/bin/python benchmarks/conv_strategy.py"
         " --models resnet18,resnet_small,unet_small,resnet50"
         " --json benchmarks/results/conv-strategy-zen3.json",),
        render_conv_strategy, torch_threads=2),
    "conv-forms-zen3": Block(
        ("conv-forms-zen3.json",),
        ("OMP_WAIT_POLICY=PASSIVE .venv/bin/python benchmarks/conv_strategy.py"
         " --models resnet18,unet_small,resnet50 --im2col"
         " --json benchmarks/results/conv-forms-zen3.json",),
        render_conv_strategy, torch_threads=2),
    "conv-rule-zen3": Block(
        ("conv-rule-zen3.json",),
        ("OMP_WAIT_POLICY=PASSIVE .venv/bin/python benchmarks/conv_strategy.py"
         " --models resnet18,resnet_small,unet_small,resnet50 --forms rule-before,rule,im2col"
         " --json benchmarks/results/conv-rule-zen3.json",),
        render_conv_rule, torch_threads=2),
    "conv-strategy-xeon": Block(
        ("conv-strategy-xeon.json",),
        ("OMP_WAIT_POLICY=PASSIVE .venv/bin/python benchmarks/conv_strategy.py"
         " --json benchmarks/results/conv-strategy-xeon.json",),
        render_conv_strategy, torch_threads=2),
    "compile-cold-xeon": Block(
        ("compile-cold-xeon.json",),
        ("LOWERKIT_TUNING_DB=off .venv/bin/python benchmarks/compile_cold.py resnet18,resnet50,"
         "mobilenet_v2,bert_base,gpt2_base --json benchmarks/results/compile-cold-xeon.json",),
        render_compile_cold),
    "compile-cold-xeon-data-tiled": Block(
        ("compile-cold-xeon-data-tiled.json",),
        ("LOWERKIT_TUNING_DB=off .venv/bin/python benchmarks/compile_cold.py resnet18,resnet50,"
         "mobilenet_v2 --convolutions data-tiled"
         " --json benchmarks/results/compile-cold-xeon-data-tiled.json",),
        render_compile_cold),
    "compile-cold-tuned": Block(
        ("compile-cold-tuned.json",),
        ("LOWERKIT_TUNING_DB=benchmarks/results/tuning-resnet.json .venv/bin/python "
         "benchmarks/compile_cold.py resnet18,resnet50 "
         "--json benchmarks/results/compile-cold-tuned.json",),
        render_compile_cold),
    "compile-time": Block(
        ("compile-time.json",),
        (".venv/bin/python benchmarks/compile_time.py resnet18,resnet50 --repeats 3"
         " --variant default --variant phases --variant flags:--iree-opt-level=O0"
         " --json benchmarks/results/compile-time.json",),
        render_compile_time),
    "backend": Block(
        ("backend-cpu.json",),
        (".venv/bin/python benchmarks/backend.py --torch-threads 2 --json benchmarks/results/backend-cpu.json",),
        render_backend, torch_threads=2, whole_zoo=True),
    "backend-zen3": Block(
        ("backend-cpu-zen3.json",),
        ("LOWERKIT_TUNING_DB=off .venv/bin/python benchmarks/backend.py --torch-threads 2 "
         "--json benchmarks/results/backend-cpu-zen3.json",),
        render_backend, torch_threads=2, whole_zoo=True),
    "backend-zen4": Block(
        ("backend-cpu-zen4.json",),
        ("LOWERKIT_TUNING_DB=off OMP_WAIT_POLICY=PASSIVE .venv/bin/python benchmarks/backend.py"
         " --torch-threads 2 --json benchmarks/results/backend-cpu-zen4.json",),
        render_backend, torch_threads=2, whole_zoo=True),
    "profile-real": Block(
        ("profile-real-before.json", "profile-real.json"),
        (".venv/bin/python benchmarks/profile_real.py --json benchmarks/results/profile-real.json"
         "  # and, in a checkout of the commit before (31a8eee) with tools/profile.py copied in,"
         " --json benchmarks/results/profile-real-before.json",),
        render_profile_real),
    "tool-startup": Block(
        ("tool-startup-before.json", "tool-startup.json"),
        (".venv/bin/python benchmarks/tool_startup.py --tree CHECKOUT_BEFORE --lit"
         " --json benchmarks/results/tool-startup-before.json",
         ".venv/bin/python benchmarks/tool_startup.py --lit --json benchmarks/results/tool-startup.json"),
        render_tool_startup),
    "e2e-backend": Block(
        ("e2e-backend.json",),
        (".venv/bin/python benchmarks/e2e_suite.py --torch-mlir TORCH_MLIR_CHECKOUT --via backend"
         " --jobs 2 --check-export --json benchmarks/results/e2e-backend.json"
         " --expectations test/e2e/expectations_backend.py",),
        render_e2e),
    "e2e-backend-capture": Block(
        ("e2e-backend-capture.json",),
        (".venv/bin/python benchmarks/e2e_suite.py --torch-mlir TORCH_MLIR_CHECKOUT --via backend"
         " --capture-scalars --capture-dynamic-shapes --jobs 2 --check-export"
         " --json benchmarks/results/e2e-backend-capture.json"
         " --expectations test/e2e/expectations_backend_capture.py",),
        render_e2e),
    "e2e-compile": Block(
        ("e2e-compile.json",),
        (".venv/bin/python benchmarks/e2e_suite.py --torch-mlir TORCH_MLIR_CHECKOUT --via compile"
         " --jobs 1 --check-export --json benchmarks/results/e2e-compile.json"
         " --expectations test/e2e/expectations_compile.py",),
        render_e2e),
    "graph-view": Block(
        ("graph-view.json",),
        (".venv/bin/python benchmarks/graph_view.py resnet50 --repeats 3"
         " --json benchmarks/results/graph-view.json",),
        render_graph_view),
    "executor-scaling": Block(
        ("executor-scaling.json",),
        (".venv/bin/python benchmarks/executor_scaling.py --torch-mlir TORCH_MLIR_CHECKOUT"
         " --json benchmarks/results/executor-scaling.json",),
        render_executor_scaling),
    "fuzz": Block(
        ("fuzz.json",),
        (".venv/bin/python benchmarks/fuzz_campaign.py --examples 2000 --seed 2114"
         " --target cpu,vulkan:llvmpipe,vulkan --shards 2 --json benchmarks/results/fuzz.json"
         " [--resume] [--timeout SECONDS]",),
        render_fuzz),
    "import-trace": Block(
        ("import-trace.json",),
        (".venv/bin/python benchmarks/import_trace.py resnet50 mobilenet_v2 bert_small gpt2_small"
         " --json benchmarks/results/import-trace.json",),
        render_import_trace),
    "cuda-weights": Block(
        ("cuda-weights.json",),
        (".venv/bin/python benchmarks/cuda_weights.py prepare --target cuda:sm_90 --dir DIR",
         "python3 benchmarks/cuda_weights.py run --dir DIR --json benchmarks/results/cuda-weights.json"
         "  # on the GPU machine",),
        render_cuda_weights),
    "ecosystem": Block(
        ("ecosystem-cpu.json",),
        (".venv/bin/python benchmarks/ecosystem.py --json benchmarks/results/ecosystem-cpu.json",),
        render_ecosystem),
    "attention": Block(
        ("attention.json",),
        ("OMP_WAIT_POLICY=PASSIVE .venv/bin/python benchmarks/attention.py"
         " --json benchmarks/results/attention.json",),
        render_attention, torch_threads=2),
    "conv3d": Block(
        ("conv3d.json",),
        ("OMP_WAIT_POLICY=PASSIVE .venv/bin/python benchmarks/conv3d.py"
         " --json benchmarks/results/conv3d.json",),
        render_conv3d, torch_threads=2),
    "attention-lengths": Block(
        ("attention-lengths.json",),
        ("OMP_WAIT_POLICY=PASSIVE .venv/bin/python benchmarks/attention.py --cases "
         "d64-plain-128,d64-plain-197,d64-plain-200,d64-plain-224,d64-plain-256,d64-plain-1500,"
         "d64-plain-1504 --no-profile "
         "--json benchmarks/results/attention-lengths.json",),
        render_attention, torch_threads=2),
    "attention-tiles-zen3": Block(
        ("attention-tiles-zen3.json",),
        ("LOWERKIT_TUNING_DB=off OMP_WAIT_POLICY=PASSIVE .venv/bin/python benchmarks/attention.py"
         " --cases d16-plain-1500,d64-plain-512,d64-plain-1024,d64-plain-1504"
         " --tiles '64,4,32;64,2,32;32,1,32;16,2,32;32,2,16' --no-profile"
         " --json benchmarks/results/attention-tiles-zen3.json",),
        render_attention, torch_threads=2),
    "attention-loop-zen4": Block(
        ("attention-loop-zen4.json",),
        ("LOWERKIT_TUNING_DB=off OMP_WAIT_POLICY=PASSIVE .venv/bin/python benchmarks/attention_loop.py"
         " --tiles '32,2,32' --json benchmarks/results/attention-loop-zen4.json",),
        render_attention_loop),
    "attention-zen4-s66": Block(
        ("attention-zen4-s66.json",),
        ("LOWERKIT_TUNING_DB=off OMP_WAIT_POLICY=PASSIVE .venv/bin/python benchmarks/attention.py"
         " --no-profile --rounds 9 --json benchmarks/results/attention-zen4-s66.json",),
        render_attention, torch_threads=2),
    "attention-masks-before": Block(
        ("attention-masks-before.json",),
        ("LOWERKIT_TUNING_DB=off OMP_WAIT_POLICY=PASSIVE .venv/bin/python benchmarks/attention.py"
         " --cases d64-mask-128,d64-mask-1024,d64-mask-4096,d64-boolmask-1024 --no-profile"
         " --rounds 9 --json benchmarks/results/attention-masks-before.json",),
        render_attention, torch_threads=2),
    "attention-masks": Block(
        ("attention-masks.json",),
        ("LOWERKIT_TUNING_DB=off OMP_WAIT_POLICY=PASSIVE .venv/bin/python benchmarks/attention.py"
         " --cases d64-mask-128,d64-mask-1024,d64-mask-4096,d64-boolmask-1024 --no-profile"
         " --rounds 9 --json benchmarks/results/attention-masks.json",),
        render_attention, torch_threads=2),
    "attention-masks-huge-pages": Block(
        ("attention-masks-huge-pages.json",),
        ("LOWERKIT_TUNING_DB=off OMP_WAIT_POLICY=PASSIVE .venv/bin/python benchmarks/attention.py"
         " --cases d64-mask-128,d64-mask-1024,d64-mask-4096,d64-boolmask-1024 --no-profile"
         " --rounds 9 --json benchmarks/results/attention-masks-huge-pages.json",),
        render_attention, torch_threads=2),
    "attention-keymask-before": Block(
        ("attention-keymask-before.json",),
        ("(a worktree at 912f68d with this commit's benchmarks/attention.py copied in, hence"
         " dirty; PYTHONPATH=WORKTREE/python) LOWERKIT_TUNING_DB=off OMP_WAIT_POLICY=PASSIVE"
         " .venv/bin/python benchmarks/attention.py --cases d64-keymask-1024,d64-keymask-4096"
         " --no-profile --rounds 9 --json benchmarks/results/attention-keymask-before.json",),
        render_attention, torch_threads=2),
    "attention-keymask": Block(
        ("attention-keymask.json",),
        ("LOWERKIT_TUNING_DB=off OMP_WAIT_POLICY=PASSIVE .venv/bin/python benchmarks/attention.py"
         " --cases d64-keymask-1024,d64-keymask-4096 --no-profile --rounds 9"
         " --json benchmarks/results/attention-keymask.json",),
        render_attention, torch_threads=2),
    "attention-kernel-off": Block(
        ("attention-kernel-off.json",),
        ("LOWERKIT_CPU_KERNELS=0 LOWERKIT_TUNING_DB=off OMP_WAIT_POLICY=PASSIVE .venv/bin/python"
         " benchmarks/attention.py --no-profile --rounds 9"
         " --json benchmarks/results/attention-kernel-off.json",),
        render_attention, torch_threads=2),
    "attention-kernel": Block(
        ("attention-kernel.json",),
        ("LOWERKIT_TUNING_DB=off OMP_WAIT_POLICY=PASSIVE .venv/bin/python benchmarks/attention.py"
         " --no-profile --rounds 9 --json benchmarks/results/attention-kernel.json",),
        render_attention, torch_threads=2),
    "attention-zen5": Block(
        ("attention-zen5.json",),
        ("LOWERKIT_TUNING_DB=off OMP_WAIT_POLICY=PASSIVE .venv/bin/python benchmarks/attention.py"
         " --no-profile --rounds 9 --json benchmarks/results/attention-zen5.json",),
        render_attention, torch_threads=2),
    "attention-zen5-s69": Block(
        ("attention-zen5-s69.json",),
        ("LOWERKIT_TUNING_DB=off OMP_WAIT_POLICY=PASSIVE .venv/bin/python benchmarks/attention.py"
         " --no-profile --rounds 9 --json benchmarks/results/attention-zen5-s69.json",),
        render_attention, torch_threads=2),
    "attention-causal-before": Block(
        ("attention-causal-before.json",),
        ("LOWERKIT_TUNING_DB=off OMP_WAIT_POLICY=PASSIVE .venv/bin/python benchmarks/attention.py"
         " --cases d64-causal-128,d64-causal-1024,d64-causal-4096 --no-profile --rounds 9"
         " --json benchmarks/results/attention-causal-before.json",),
        render_attention, torch_threads=2),
    "attention-causal": Block(
        ("attention-causal.json",),
        ("LOWERKIT_TUNING_DB=off OMP_WAIT_POLICY=PASSIVE .venv/bin/python benchmarks/attention.py"
         " --cases d64-causal-128,d64-causal-1024,d64-causal-4096 --no-profile --rounds 9"
         " --json benchmarks/results/attention-causal.json",),
        render_attention, torch_threads=2),
    "attention-tiles-zen4": Block(
        ("attention-tiles-zen4.json",),
        ("LOWERKIT_TUNING_DB=off OMP_WAIT_POLICY=PASSIVE .venv/bin/python benchmarks/attention.py"
         " --cases d16-plain-1500,d64-plain-512,d64-plain-1024,d64-plain-1504"
         " --tiles '16,4,32;32,8,32;64,4,16;32,4,64;32,2,32' --no-profile --rounds 21"
         " --json benchmarks/results/attention-tiles-zen4.json",),
        render_attention, torch_threads=2),
    "gemm-zen3": Block(
        ("gemm-zen3.json",),
        ("LOWERKIT_TUNING_DB=off OMP_WAIT_POLICY=PASSIVE .venv/bin/python benchmarks/gemm.py"
         " --json benchmarks/results/gemm-zen3.json",),
        render_gemm, torch_threads=2),
    "gemm-zen5": Block(
        ("gemm-zen5.json",),
        ("LOWERKIT_TUNING_DB=off OMP_WAIT_POLICY=PASSIVE .venv/bin/python benchmarks/gemm.py"
         " --json benchmarks/results/gemm-zen5.json",),
        render_gemm, torch_threads=2),
    "gemm-zen5-b": Block(
        ("gemm-zen5-b.json",),
        ("LOWERKIT_TUNING_DB=off OMP_WAIT_POLICY=PASSIVE .venv/bin/python benchmarks/gemm.py"
         " --json benchmarks/results/gemm-zen5-b.json",),
        render_gemm, torch_threads=2),
    "gemm": Block(
        ("gemm.json",),
        ("OMP_WAIT_POLICY=PASSIVE .venv/bin/python benchmarks/gemm.py"
         " --json benchmarks/results/gemm.json",),
        render_gemm, torch_threads=2),
    "conv-taps": Block(
        ("conv-taps.json",),
        ("OMP_WAIT_POLICY=PASSIVE .venv/bin/python benchmarks/conv_taps.py"
         " --json benchmarks/results/conv-taps.json",),
        render_conv_taps, torch_threads=2),
    "conv-taps-zen3": Block(
        ("conv-taps-zen3.json",),
        ("OMP_WAIT_POLICY=PASSIVE .venv/bin/python benchmarks/conv_taps.py"
         " --json benchmarks/results/conv-taps-zen3.json",),
        render_conv_taps, torch_threads=2),
    "depthwise": Block(
        ("depthwise.json",),
        ("OMP_WAIT_POLICY=PASSIVE .venv/bin/python benchmarks/depthwise.py"
         " --json benchmarks/results/depthwise.json",),
        render_depthwise, torch_threads=2),
    "depthwise-zen3": Block(
        ("depthwise-zen3.json",),
        ("OMP_WAIT_POLICY=PASSIVE .venv/bin/python benchmarks/depthwise.py --rounds 9"
         " --json benchmarks/results/depthwise-zen3.json",),
        render_depthwise, torch_threads=2),
    "grouped-zen4": Block(
        ("grouped-zen4.json",),
        ("OMP_WAIT_POLICY=PASSIVE .venv/bin/python benchmarks/grouped.py"
         " --json benchmarks/results/grouped-zen4.json",),
        render_grouped, torch_threads=2),
    "grouped-zen3": Block(
        ("grouped-zen3.json",),
        ("OMP_WAIT_POLICY=PASSIVE .venv/bin/python benchmarks/grouped.py --rounds 9"
         " --json benchmarks/results/grouped-zen3.json",),
        render_grouped, torch_threads=2),
    "dilated-zen4": Block(
        ("dilated-zen4.json",),
        ("OMP_WAIT_POLICY=PASSIVE .venv/bin/python benchmarks/dilated.py"
         " --json benchmarks/results/dilated-zen4.json",),
        render_dilated, torch_threads=2),
    "conv3d-forms-zen3": Block(
        ("conv3d-forms-zen3.json",),
        ("OMP_WAIT_POLICY=PASSIVE .venv/bin/python benchmarks/conv3d_forms.py"
         " --json benchmarks/results/conv3d-forms-zen3.json",),
        render_conv3d_forms, torch_threads=2),
    "transients-zen4-every-program": Block(
        ("transients-zen4-every-program.json",),
        ("LOWERKIT_TUNING_DB=off OMP_WAIT_POLICY=PASSIVE .venv/bin/python benchmarks/transients.py"
         " --json benchmarks/results/transients-zen4.json",),
        render_transients_every_program, torch_threads=2),
    "transients-zen4": Block(
        ("transients-zen4.json",),
        ("LOWERKIT_TUNING_DB=off OMP_WAIT_POLICY=PASSIVE .venv/bin/python benchmarks/transients.py"
         " --json benchmarks/results/transients-zen4.json",),
        render_transients, torch_threads=2),
    "tap-rows-zen3": Block(
        ("tap-rows-zen3.json",),
        ("OMP_WAIT_POLICY=PASSIVE .venv/bin/python benchmarks/tap_rows.py"
         " --json benchmarks/results/tap-rows-zen3.json",),
        render_tap_rows, torch_threads=2),
    "conv-strategy-grouped-zen4": Block(
        ("conv-strategy-grouped-zen4.json",),
        ("OMP_WAIT_POLICY=PASSIVE .venv/bin/python benchmarks/depthwise_share.py"
         " --json benchmarks/results/conv-strategy-grouped-zen4.json",),
        render_depthwise_share, torch_threads=2),
    "conv-strategy-grouped-zen4-again": Block(
        ("conv-strategy-grouped-zen4-again.json",),
        ("OMP_WAIT_POLICY=PASSIVE .venv/bin/python benchmarks/depthwise_share.py"
         " --models efficientnet_v2_s --rounds 15"
         " --json benchmarks/results/conv-strategy-grouped-zen4-again.json",),
        render_depthwise_share, torch_threads=2),
    "tap-rows-zen3-resnet50": Block(
        ("tap-rows-zen3-resnet50.json",),
        ("OMP_WAIT_POLICY=PASSIVE .venv/bin/python benchmarks/tap_rows.py --shapes none"
         " --models resnet50,resnet50 --rounds 9"
         " --json benchmarks/results/tap-rows-zen3-resnet50.json",),
        render_tap_rows, torch_threads=2),
    "dilated-zen3": Block(
        ("dilated-zen3.json",),
        ("OMP_WAIT_POLICY=PASSIVE .venv/bin/python benchmarks/dilated.py --rounds 7"
         " --json benchmarks/results/dilated-zen3.json",),
        render_dilated, torch_threads=2),
    "conv-phases": Block(
        ("conv-phases.json",),
        ("OMP_WAIT_POLICY=PASSIVE .venv/bin/python benchmarks/conv_phases.py"
         " --json benchmarks/results/conv-phases.json",),
        render_conv_phases, torch_threads=2),
    "conv-folding": Block(
        ("conv-folding.json",),
        ("OMP_WAIT_POLICY=PASSIVE .venv/bin/python benchmarks/conv_folding.py"
         " --json benchmarks/results/conv-folding.json",),
        render_conv_folding, torch_threads=2),
    "conv-folding-compile": Block(
        ("conv-folding-compile.json",),
        ("OMP_WAIT_POLICY=PASSIVE .venv/bin/python benchmarks/conv_folding.py"
         " --models resnet18,resnet50 --repeats 9"
         " --json benchmarks/results/conv-folding-compile.json",),
        render_conv_folding, torch_threads=2),
    "conv-folding-taps": Block(
        ("conv-folding-taps.json",),
        ("OMP_WAIT_POLICY=PASSIVE .venv/bin/python benchmarks/conv_folding.py"
         " --models dw_separable,mobilenet_v2 --repeats 5"
         " --json benchmarks/results/conv-folding-taps.json",),
        render_conv_folding, torch_threads=2),
    "real-shapes": Block(
        ("real-shapes.json",),
        ("OMP_WAIT_POLICY=PASSIVE .venv/bin/lowerkit bench real --torch-threads 2"
         " --json benchmarks/results/real-shapes.json",),
        render_real_shapes, torch_threads=2),
    "real-shapes-zen4-head": Block(
        ("real-shapes-zen4-head.json",),
        ("OMP_WAIT_POLICY=PASSIVE .venv/bin/lowerkit bench real --torch-threads 2"
         " --json benchmarks/results/real-shapes-zen4-head.json",),
        render_real_shapes, torch_threads=2),
    "real-shapes-zen4-s60": Block(
        ("real-shapes-zen4-s60.json",),
        ("LOWERKIT_TUNING_DB=off OMP_WAIT_POLICY=PASSIVE .venv/bin/lowerkit bench real --target cpu"
         " --rounds 15 --settle-ms 30 --gemm-size 1024 --torch-threads 2"
         " --json benchmarks/results/real-shapes-zen4-s60.json",),
        render_real_shapes, torch_threads=2),
    "real-shapes-zen3": Block(
        ("real-shapes-zen3.json",),
        ("OMP_WAIT_POLICY=PASSIVE .venv/bin/lowerkit bench real --torch-threads 2"
         " --json benchmarks/results/real-shapes-zen3.json",),
        render_real_shapes, torch_threads=2),
    "real-shapes-xeon": Block(
        ("real-shapes-xeon.json",),
        ("OMP_WAIT_POLICY=PASSIVE .venv/bin/lowerkit bench real --torch-threads 2"
         " --json benchmarks/results/real-shapes-xeon.json",),
        render_real_shapes, torch_threads=2),
    "real-shapes-xeon-tuned": Block(
        ("real-shapes-xeon-tuned.json",),
        ("LOWERKIT_TUNING_DB=benchmarks/results/tuning-xeon.json OMP_WAIT_POLICY=PASSIVE"
         " .venv/bin/lowerkit bench real --torch-threads 2"
         " --json benchmarks/results/real-shapes-xeon-tuned.json",),
        render_real_shapes, torch_threads=2),
    "matmul-tile-xeon": Block(
        ("matmul-tile-xeon.json",),
        ("OMP_WAIT_POLICY=PASSIVE .venv/bin/python benchmarks/matmul_tile.py"
         " --database benchmarks/results/tuning-xeon.json"
         " --json benchmarks/results/matmul-tile-xeon.json",),
        render_matmul_tile, torch_threads=2),
    "gemm-xeon": Block(
        ("gemm-xeon.json",),
        ("OMP_WAIT_POLICY=PASSIVE .venv/bin/python benchmarks/gemm.py"
         " --json benchmarks/results/gemm-xeon.json",),
        render_gemm, torch_threads=2),
    "mmt4d-tiles-zen5": Block(
        ("mmt4d-tiles-zen5.json",),
        ("LOWERKIT_TUNING_DB=off OMP_WAIT_POLICY=PASSIVE .venv/bin/python benchmarks/mmt4d_tiles.py"
         " --json benchmarks/results/mmt4d-tiles-zen5.json",),
        render_mmt4d_tiles),
    "mmt4d-tiles": Block(
        ("mmt4d-tiles.json",),
        (".venv/bin/python benchmarks/mmt4d_tiles.py --json benchmarks/results/mmt4d-tiles.json",),
        render_mmt4d_tiles),
    "tuned": Block(
        ("tuned.json",),
        ("OMP_WAIT_POLICY=PASSIVE .venv/bin/python benchmarks/tuned.py"
         " --json benchmarks/results/tuned.json",),
        render_tuned, torch_threads=2),
    "backend-call-aot-wrappers": Block(
        ("backend-call-aot-wrappers.json",),
        ("LOWERKIT_TUNING_DB=off OMP_WAIT_POLICY=PASSIVE .venv/bin/python benchmarks/backend_call.py "
         "--json benchmarks/results/backend-call-aot-wrappers.json (at a commit before "
         "GraphRecord.direct)",),
        render_backend_call),
    "backend-call": Block(
        ("backend-call.json",),
        ("LOWERKIT_TUNING_DB=off OMP_WAIT_POLICY=PASSIVE .venv/bin/python benchmarks/backend_call.py "
         "--json benchmarks/results/backend-call.json",),
        render_backend_call),
    "backend-call-larger": Block(
        ("backend-call-larger.json",),
        ("LOWERKIT_TUNING_DB=off OMP_WAIT_POLICY=PASSIVE .venv/bin/python benchmarks/backend_call.py "
         "resnet_small,mobilenet_v2_small,vit_tiny --calls 200 --rounds 11 "
         "--json benchmarks/results/backend-call-larger.json",),
        render_backend_call),
    "backend-call-guards": Block(
        ("backend-call-guards.json",),
        ("LOWERKIT_TUNING_DB=off OMP_WAIT_POLICY=PASSIVE .venv/bin/python benchmarks/backend_call.py "
         "resnet_small,mobilenet_v2_small,vit_tiny --calls 200 --rounds 11 "
         "--json benchmarks/results/backend-call-guards.json",),
        render_backend_call),
    "backend-call-guards-2": Block(
        ("backend-call-guards-2.json",),
        ("LOWERKIT_TUNING_DB=off OMP_WAIT_POLICY=PASSIVE .venv/bin/python benchmarks/backend_call.py "
         "resnet_small,mobilenet_v2_small,vit_tiny --calls 200 --rounds 11 "
         "--json benchmarks/results/backend-call-guards-2.json (a second run, right after the first)",),
        render_backend_call),
    "backend-call-zen4": Block(
        ("backend-call-zen4.json",),
        ("LOWERKIT_TUNING_DB=off OMP_WAIT_POLICY=PASSIVE .venv/bin/python benchmarks/backend_call.py "
         "resnet_small,mobilenet_v2_small,vit_tiny --calls 200 --rounds 11 "
         "--json benchmarks/results/backend-call-zen4.json",),
        render_backend_call),
    "backend-call-zen4-s60": Block(
        ("backend-call-zen4-s60.json",),
        ("LOWERKIT_TUNING_DB=off OMP_WAIT_POLICY=PASSIVE .venv/bin/python benchmarks/backend_call.py "
         "resnet_small,mobilenet_v2_small,vit_tiny --calls 200 --rounds 11 "
         "--json benchmarks/results/backend-call-zen4-s60.json",),
        render_backend_call),
    "backend-call-zen4-larger": Block(
        ("backend-call-zen4-larger.json",),
        ("LOWERKIT_TUNING_DB=off OMP_WAIT_POLICY=PASSIVE .venv/bin/python benchmarks/backend_call.py "
         "resnet18,mobilenet_v2,bert_small --calls 10 --rounds 11 "
         "--json benchmarks/results/backend-call-zen4-larger.json",),
        render_backend_call),
    "backend-call-zoo-zen4-before": Block(
        ("backend-call-zoo-zen4-before.json",),
        ("LOWERKIT_TUNING_DB=off OMP_WAIT_POLICY=PASSIVE .venv/bin/python benchmarks/backend_call.py "
         "--zoo --rounds 31 --sample-ms 2 --json benchmarks/results/backend-call-zoo-zen4-before.json "
         "(the backend at 8274e83, the script of d6c8498)",),
        render_backend_call_zoo),
    "backend-call-zoo-zen4": Block(
        ("backend-call-zoo-zen4.json",),
        ("LOWERKIT_TUNING_DB=off OMP_WAIT_POLICY=PASSIVE .venv/bin/python benchmarks/backend_call.py "
         "--zoo --rounds 31 --sample-ms 2 --json benchmarks/results/backend-call-zoo-zen4.json",),
        render_backend_call_zoo),
    "composite-overrides": Block(
        ("composite-overrides.json",),
        (".venv/bin/python benchmarks/composite_overrides.py "
         "--json benchmarks/results/composite-overrides.json",),
        render_composite_overrides),
    "yielding-wait": Block(
        ("yielding-wait.json",),
        (".venv/bin/python benchmarks/yielding_wait.py --json benchmarks/results/yielding-wait.json",),
        render_yielding_wait, torch_threads=2),
    "weights-call": Block(
        ("weights-call.json",),
        ("OMP_WAIT_POLICY=PASSIVE .venv/bin/python benchmarks/weights_call.py "
         "--json benchmarks/results/weights-call.json",),
        render_weights_call, torch_threads=2),
    "executable-kinds": Block(
        ("executable-kinds.json",),
        ("OMP_WAIT_POLICY=PASSIVE .venv/bin/python benchmarks/executable_kinds.py "
         "--json benchmarks/results/executable-kinds.json",),
        render_executable_kinds),
    "weights-call-s61": Block(
        ("weights-call-s61.json",),
        ("OMP_WAIT_POLICY=PASSIVE .venv/bin/python benchmarks/weights_call.py "
         "--json benchmarks/results/weights-call-s61.json",),
        render_weights_call, torch_threads=2),
    "weights-call-s67": Block(
        ("weights-call-s67.json",),
        ("LOWERKIT_TUNING_DB=off OMP_WAIT_POLICY=PASSIVE .venv/bin/python benchmarks/weights_call.py "
         "--json benchmarks/results/weights-call-s67.json",),
        render_weights_call, torch_threads=2),
    "executable-kinds-s61": Block(
        ("executable-kinds-s61.json",),
        ("OMP_WAIT_POLICY=PASSIVE .venv/bin/python benchmarks/executable_kinds.py "
         "--json benchmarks/results/executable-kinds-s61.json",),
        render_executable_kinds),
    "derived-weights": Block(
        ("derived-weights.json",),
        ("LOWERKIT_TUNING_DB=off OMP_WAIT_POLICY=PASSIVE .venv/bin/python benchmarks/"
         "derived_weights.py --rounds 7 --json benchmarks/results/derived-weights.json",),
        render_derived_weights),
    "call-floor": Block(
        ("call-floor.json",),
        (".venv/bin/python benchmarks/call_floor.py --json benchmarks/results/call-floor.json",),
        render_call_floor),
}


def _commands_for(name: str) -> list[str]:
    block = BLOCKS[name]
    if block.commands:
        return list(block.commands)
    return [c for other in BLOCKS.values() for c in other.commands
            if any(f in c for f in block.files)]


def render_block(name: str, results: Path = RESULTS) -> str:
    """The body of block ``name``: its table(s) from the stored files, or a placeholder naming
    the missing files and the commands that write them."""
    if name not in BLOCKS:
        raise ResultError(f"block 'results:{name}' is not one of {sorted(BLOCKS)}")
    block = BLOCKS[name]
    missing = [f for f in block.files if not (results / f).exists()]
    if missing:
        body = ("_Not measured yet: no stored run" + ("s " if len(missing) > 1 else " ") + ", ".join(
            f"`benchmarks/results/{f}`" for f in missing) + ". On a quiet machine:_\n\n"
            "```bash\n" + "\n".join(_commands_for(name) + [REGENERATE]) + "\n```")
    else:
        data = [load_result(results, f) for f in block.files]
        for f, d in zip(block.files, data):
            used = d["meta"].get("threads", {}).get("torch")
            if block.torch_threads is not None and used != block.torch_threads:
                raise ResultError(f"{results / f}: taken with {used} torch threads, the "
                                  f"'{name}' table is for {block.torch_threads}")
            if block.whole_zoo:
                _check_whole_zoo(results / f, d)
        paths = tuple(f"benchmarks/results/{f}" for f in block.files)
        extra = {"suite": load_suite(results)} if block.reads_suite else {}
        if len(data) == 1:
            body = block.render(data[0], paths[0], **extra)
        else:
            body = block.render(*data, paths, **extra)
    return f"\n\n{body}\n\n"


def pages(root: Path = ROOT) -> list[Path]:
    """The pages that hold generated blocks: README.md and every Markdown file under docs/."""
    return [root / "README.md"] + sorted((root / "docs").rglob("*.md"))


def render_text(text: str, results: Path = RESULTS) -> str:
    """``text`` with each of its generated blocks' bodies rendered again."""
    return BLOCK_RE.sub(lambda m: m[1] + render_block(m["name"], results) + m[4], text)


def render_pages(texts: dict[str, str], results: Path = RESULTS) -> dict[str, str]:
    """Each page's text rendered again; every block must appear on exactly one page, so that a
    figure has one home and none is forgotten when a page moves."""
    seen = [(m["name"], page) for page, text in texts.items() for m in BLOCK_RE.finditer(text)]
    names = [n for n, _ in seen]
    absent = sorted(set(BLOCKS) - set(names))
    if absent:
        raise ResultError(f"the pages lack the generated blocks {absent}")
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        where = {n: sorted(p for m, p in seen if m == n) for n in twice}
        raise ResultError(f"the generated blocks {twice} appear more than once: {where}")
    return {page: render_text(text, results) for page, text in texts.items()}


def check(root: Path = ROOT, results: Path = RESULTS) -> str:
    """A unified diff from the pages under ``root`` to what the stored results render ('' when
    they agree)."""
    texts = {str(p.relative_to(root)): p.read_text() for p in pages(root)}
    rendered = render_pages(texts, results)
    return "".join("".join(difflib.unified_diff(
        texts[page].splitlines(keepends=True), rendered[page].splitlines(keepends=True),
        page, f"{page} rendered from {results}")) for page in texts)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--check", action="store_true", help="only compare; exit 1 on a difference")
    p.add_argument("--list", action="store_true", help="each block, its files, their commands")
    p.add_argument("--root", type=Path, default=ROOT, help="the tree holding README.md and docs/")
    p.add_argument("--results", type=Path, default=RESULTS)
    a = p.parse_args(argv)
    if a.list:
        for name, block in BLOCKS.items():
            state = ["stored" if (a.results / f).exists() else "missing" for f in block.files]
            print(f"{name}: " + ", ".join(f"{f} ({s})" for f, s in zip(block.files, state)))
            for c in block.commands:
                print(f"    {c}")
        return 0
    try:
        if a.check:
            diff = check(a.root, a.results)
            sys.stdout.write(diff or f"every generated block of {a.root} matches {a.results}\n")
            return 1 if diff else 0
        texts = {p: p.read_text() for p in pages(a.root)}
        for path, text in render_pages(texts, a.results).items():
            if text != texts[path]:
                path.write_text(text)
    except ResultError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
