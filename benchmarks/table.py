"""Render a `lowerkit bench --json` file as the Markdown table in the README's Performance section.

    .venv/bin/python benchmarks/table.py benchmarks/zoo-cpu.json
"""

from __future__ import annotations

import json
import math
import sys


def main(path: str) -> None:
    data = json.load(open(path))
    rows = data["models"] + ([data["gemm"]] if data.get("gemm") else [])
    print("| model | eager ms | torch.compile ms | lowerkit ms | × eager | × torch.compile "
          "| lowerkit compile s (cold / cached) |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    ve, vc = [], []
    for r in rows:
        m = r["median_ms"]
        cold = r["compile_cold_s"].get("lowerkit")
        cached = r["compile_cached_s"].get("lowerkit")
        e, c = r["lowerkit_vs_eager"], r["lowerkit_vs_torch_compile"]
        if r in data["models"]:
            ve.append(e)
            vc.append(c)
        fmt = lambda v: "-" if v is None or not math.isfinite(v) else f"{v:.3f}"  # noqa: E731
        print(f"| {r['model']} | {fmt(m.get('eager'))} | {fmt(m.get('torch.compile'))} | "
              f"{fmt(m.get('lowerkit'))} | {e:.2f} | {c:.2f} | "
              f"{cold:.1f} / {cached:.1f} |" if cold is not None else "| - |")

    def geo(v):
        v = [x for x in v if x and math.isfinite(x) and x > 0]
        return math.exp(sum(map(math.log, v)) / len(v)) if v else float("nan")

    print(f"| **geomean ({len(ve)} models)** | | | | **{geo(ve):.2f}** | **{geo(vc):.2f}** | |")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "benchmarks/zoo-cpu.json")
