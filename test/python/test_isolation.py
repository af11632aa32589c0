"""A native crash inside a real PassPipelineStage: torch-mlir's convert-torch-to-linalg divides
by the element count when it infers the -1 of ``aten.view`` of a tensor with no elements, and
dies with SIGFPE (the defect `replace-empty-results` works around). Run isolated, the stage
becomes a StageError and the interpreter lives on."""

from __future__ import annotations

import os
import platform
import shlex
import subprocess
import sys
import textwrap

import pytest

EMPTY_VIEW = """
func.func @main(%arg0: !torch.vtensor<[0,3],f32>) -> !torch.vtensor<[0],f32> {
  %int-1 = torch.constant.int -1
  %0 = torch.prim.ListConstruct %int-1 : (!torch.int) -> !torch.list<int>
  %1 = torch.aten.view %arg0, %0 : !torch.vtensor<[0,3],f32>, !torch.list<int> -> !torch.vtensor<[0],f32>
  return %1 : !torch.vtensor<[0],f32>
}
"""

# In a child interpreter: were isolation broken, the SIGFPE would end pytest itself.
SCRIPT = textwrap.dedent("""
    import sys
    from torch_mlir import ir
    from torch_mlir.dialects import torch as torch_dialect
    from lowerkit import PassPipelineStage, StageError

    ctx = ir.Context()
    torch_dialect.register_dialect(ctx)
    stage = PassPipelineStage("view-to-linalg", "func.func(convert-torch-to-linalg)")
    module = ir.Module.parse(sys.argv[1], ctx)
    try:
        stage(module)
    except StageError as e:
        print("ERROR:", str(e).replace("\\n", " | "))
        print("COMMAND:", e.command)
    # the same stage, in the same interpreter, on a view it can lower
    good = ir.Module.parse(sys.argv[1].replace("[0,3]", "[2,3]").replace("[0]", "[6]"), ctx)
    print("LOWERED:", "tensor.collapse_shape" in str(stage(good)))
""")


@pytest.mark.skipif(platform.machine() not in ("x86_64", "AMD64"),
                    reason="integer division by zero traps (SIGFPE) only on x86")
def test_a_crashing_pass_pipeline_is_a_stage_error_and_the_interpreter_lives_on(tmp_path):
    env = {**os.environ, "LOWERKIT_REPRO_DIR": str(tmp_path)}
    env.pop("LOWERKIT_ISOLATE", None)
    proc = subprocess.run([sys.executable, "-c", SCRIPT, EMPTY_VIEW], capture_output=True,
                          text=True, timeout=300, env=env)
    assert proc.returncode == 0, proc.stderr[-2000:]
    lines = dict(line.split(": ", 1) for line in proc.stdout.splitlines() if ": " in line)
    assert lines["ERROR"].startswith("stage 'view-to-linalg' failed: crashed with SIGFPE"), proc.stdout
    assert "a native crash inside MLIR, isolated from this process" in lines["ERROR"]
    assert lines["LOWERED"] == "True"

    # the saved input replays the crash with the printed command
    command = shlex.split(lines["COMMAND"])
    # the tool by name where it is on PATH, else by its path beside the interpreter: run as printed
    assert os.path.basename(command[0]) == "torch-mlir-opt" and os.path.dirname(command[-1]) == str(tmp_path)
    replay = subprocess.run(command, capture_output=True, text=True, timeout=120)
    # torch-mlir-opt is a Python wrapper: the tool's SIGFPE comes back as exit status -8 & 255
    assert replay.returncode == 256 - 8, (replay.returncode, replay.stderr[-2000:])
    assert "convert-torch-to-linalg" in replay.stderr and "Stack dump" in replay.stderr
