"""Zoo models compiled here for a CUDA GPU with their weights as IREE parameters, run there.

A machine with a GPU often lacks the compiler (torch-mlir, iree-base-compiler), so this is two
steps that share a folder:

    .venv/bin/python benchmarks/cuda_weights.py prepare --target cuda:sm_90 --dir DIR
    python3 benchmarks/cuda_weights.py run --dir DIR --json cuda-weights.json

``prepare`` compiles each zoo model for ``--target`` (``weights="external"``, the default)
and saves the artifact (``NAME.lkart``, code only) with its ``.irpa`` beside it. ``run`` needs
only torch and iree-base-runtime: it builds each zoo model again (seeded, so the same weights
and inputs), computes eager's outputs there, and checks the GPU's against them:

1. the artifact loaded on ``cuda``, its weights mapped from the ``.irpa``;
2. a second checkpoint of the same architecture bound by reference (``bind_weights(model)``,
   no compile);
3. that model changed in place back to the first checkpoint (``load_state_dict``): the next
   call must see it (a stale hoisted weight would give the second checkpoint's answer).

It stores each check's error against the output's scale, the compile rung and the mean call.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "python"))

# the zoo but its slow models and resnet18 (45 MB of weights: the folder travels to the GPU)
MODELS = ["resnet_small", "mobilenet_v2_small", "vit_tiny", "unet_small", "simple_cnn",
          "bert_tiny", "gpt2_tiny", "llama_tiny_prefill", "llama_tiny_decode", "lstm", "gru",
          "lstm_bidirectional", "tcn", "embedding_bag", "gather_scatter", "topk_sort", "cumsum",
          "interpolate", "einsum", "views_inplace", "boolean_masks", "index_ops",
          "normalisations", "mlp", "nonpersistent_buffer"]


def _other_checkpoint(model):
    """The same architecture with other weights: every floating parameter and buffer moved by
    a seeded noise of its own scale (running variances kept positive)."""
    import torch

    gen = torch.Generator().manual_seed(7)
    state = {}
    for name, t in model.state_dict().items():
        if t.is_floating_point() and t.numel():
            noise = torch.randn(t.shape, generator=gen, dtype=t.dtype)
            t = (t + 0.1 * (t.abs().mean() + 1e-3) * noise)
            t = t.abs() if name.endswith("running_var") else t
        state[name] = t.clone()
    return state


def prepare(a) -> int:
    import torch

    import lowerkit
    from lowerkit.zoo import get

    a.dir.mkdir(parents=True, exist_ok=True)
    done = {}
    for name in a.models or MODELS:
        model, args, kwargs = get(name).make()
        start = time.perf_counter()
        try:
            art = lowerkit.compile(model, args, kwargs, target=a.target, cache=False)
        except Exception as e:  # noqa: BLE001 - the run reports what did not compile
            done[name] = {"compiled": False, "error": str(e).splitlines()[0][:300]}
            print(f"{name}: not compiled: {done[name]['error']}")
            continue
        seconds = time.perf_counter() - start
        art.save(a.dir / f"{name}.lkart")
        done[name] = {"compiled": True, "compile_s": round(seconds, 2), "rung": art.compile_rung,
                      "parameters": len(art.parameters)}
        print(f"{name}: compiled for {a.target} in {seconds:.1f} s (rung {art.compile_rung}),"
              f" {len(art.parameters)} weights as parameters")
    (a.dir / "models.json").write_text(json.dumps(
        {"target": a.target, "models": done, "prepared": _meta(" ".join(sys.argv)),
         "torch_here": torch.__version__}, indent=1))
    return 0


def _meta(command: str) -> dict:
    try:
        from lowerkit.tools.bench import run_metadata
        return run_metadata(command)
    except Exception as e:  # noqa: BLE001 - the GPU machine may lack what it reads
        return {"command": command, "error": str(e)}


def _mean_call_ms(art, args, kwargs, repeats: int = 20) -> float:
    art(*args, **kwargs)
    start = time.perf_counter()
    for _ in range(repeats):
        art(*args, **kwargs)
    return (time.perf_counter() - start) / repeats * 1e3


def run(a) -> int:
    import torch

    from lowerkit import Artifact
    from lowerkit.runtime.numerics import compare
    from lowerkit.zoo import get

    listing = json.loads((a.dir / "models.json").read_text())
    rows = []
    for name, built in listing["models"].items():
        row = {"model": name, **built}
        if not built["compiled"]:
            row["ok"] = False
            rows.append(row)
            continue
        entry = get(name)
        model, args, kwargs = entry.make()
        try:
            with torch.no_grad():
                expected = model(*args, **kwargs)
                first = {k: v.clone() for k, v in model.state_dict().items()}
                model.load_state_dict(_other_checkpoint(model))
                expected_other = model(*args, **kwargs)
            art = Artifact.load(a.dir / f"{name}.lkart", device=a.device)
            checks = [("irpa", art(*args, **kwargs), expected)]
            row["call_ms"] = round(_mean_call_ms(art, args, kwargs), 4)
            if art.parameters:
                art.bind_weights(model)
                checks.append(("other checkpoint", art(*args, **kwargs), expected_other))
                with torch.no_grad():
                    model.load_state_dict(first)
                checks.append(("changed in place", art(*args, **kwargs), expected))
            row["checks"] = {}
            for check, actual, want in checks:
                c = compare(actual, want, tol=entry.tol)
                row["checks"][check] = {"ok": c.ok, "max_rel_error": c.max_rel_error,
                                        **({} if c.ok else {"message": c.message[:300]})}
            row["ok"] = all(c["ok"] for c in row["checks"].values())
        except Exception as e:  # noqa: BLE001 - each model's failure is its row
            row.update(ok=False, error=f"{type(e).__name__}: {str(e)[:400]}")
        rows.append(row)
        print(json.dumps(row))
    gpu = _gpu_name()
    out = {"meta": {**listing["prepared"], "ran_on": gpu, "torch_there": torch.__version__,
                    "torch_here": listing["torch_here"], "run_command": " ".join(sys.argv)},
           "target": listing["target"], "device": a.device, "models": rows,
           "passed": sum(r["ok"] for r in rows), "total": len(rows)}
    a.json.write_text(json.dumps(out, indent=1) + "\n")
    print(f"{out['passed']}/{out['total']} models match eager on {gpu}")
    return 0 if out["passed"] == out["total"] else 1


def _gpu_name() -> str:
    import subprocess
    try:
        return subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader"],
                              capture_output=True, text=True, timeout=30).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return "unknown"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="step", required=True)
    pp = sub.add_parser("prepare")
    pp.add_argument("--target", default="cuda:sm_90", help="any target (cpu for a dry run)")
    pp.add_argument("--dir", type=Path, required=True)
    pp.add_argument("models", nargs="*")
    pr = sub.add_parser("run")
    pr.add_argument("--dir", type=Path, required=True)
    pr.add_argument("--json", type=Path, required=True)
    pr.add_argument("--device", default="cuda")
    a = p.parse_args(argv)
    return prepare(a) if a.step == "prepare" else run(a)


if __name__ == "__main__":
    sys.exit(main())
