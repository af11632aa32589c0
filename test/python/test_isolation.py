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


# torch-mlir's linalg lowering of a 2-D boolean index allocates without end (6 GB in 30 s);
# lowerkit's import no longer hands it this op (`decompositions._mask_index`), so it serves
# here as a pass that never stops growing.
BOOL_MASK_INDEX = """
func.func @main(%arg0: !torch.vtensor<[5,7],f32>) -> !torch.vtensor<[?],f32> {
  %int0 = torch.constant.int 0
  %0 = torch.aten.gt.Scalar %arg0, %int0 : !torch.vtensor<[5,7],f32>, !torch.int -> !torch.vtensor<[5,7],i1>
  %1 = torch.prim.ListConstruct %0 : (!torch.vtensor<[5,7],i1>) -> !torch.list<vtensor>
  %2 = torch.aten.index.Tensor_hacked_twin %arg0, %1 : !torch.vtensor<[5,7],f32>, !torch.list<vtensor> -> !torch.vtensor<[?],f32>
  return %2 : !torch.vtensor<[?],f32>
}
"""

GROWING = textwrap.dedent("""
    import sys
    from torch_mlir import ir
    from torch_mlir.dialects import torch as torch_dialect
    from lowerkit import PassPipelineStage, StageError

    ctx = ir.Context()
    torch_dialect.register_dialect(ctx)
    stage = PassPipelineStage("linalg-on-tensors",
                              "torch-backend-to-linalg-on-tensors-backend-pipeline")
    try:
        stage(ir.Module.parse(sys.argv[1], ctx))
    except StageError as e:
        print("ERROR:", str(e).replace("\\n", " | "))
""")


def test_a_stage_that_grows_without_end_stops_at_its_memory_budget(tmp_path):
    # half a GiB over what the child starts with: reached in seconds at the rate below
    env = {**os.environ, "LOWERKIT_REPRO_DIR": str(tmp_path), "LOWERKIT_STAGE_MEMORY_GIB": "0.5"}
    env.pop("LOWERKIT_ISOLATE", None)
    # 60 s: at the rate seen (about 200 MB/s) an unbudgeted child would take ~12 GB by then;
    # it dies with this interpreter (PR_SET_PDEATHSIG)
    proc = subprocess.run([sys.executable, "-c", GROWING, BOOL_MASK_INDEX], capture_output=True,
                          text=True, timeout=60, env=env)
    assert proc.returncode == 0, proc.stderr[-2000:]
    error = dict(line.split(": ", 1) for line in proc.stdout.splitlines() if ": " in line)["ERROR"]
    assert error.startswith("stage 'linalg-on-tensors' failed"), error
    assert "past its memory budget of 0.5 GiB" in error, error
    assert "LOWERKIT_STAGE_MEMORY_GIB" in error


STUCK = textwrap.dedent("""
    import os, sys, time
    from dataclasses import dataclass
    from torch_mlir import ir
    from lowerkit import Build
    from lowerkit.stages.stage import Stage

    @dataclass(repr=False)
    class Stuck(Stage):
        name: str = "stuck"
        build: Build = Build.TORCH_MLIR
        isolated: bool = True

        def apply(self, module):
            open(sys.argv[1], "w").write(str(os.getpid()))
            time.sleep(600)

    Stuck()(ir.Module.create(ir.Location.unknown(ir.Context())))
""")


def test_an_isolated_stage_dies_with_its_interpreter(tmp_path):
    """A compile interrupted from outside (a killed job, a timeout) leaves no stage running."""
    import signal
    import time

    pid_file = tmp_path / "child.pid"
    env = {k: v for k, v in os.environ.items() if k != "LOWERKIT_ISOLATE"}
    proc = subprocess.Popen([sys.executable, "-c", STUCK, str(pid_file)], env=env)
    try:
        deadline = time.monotonic() + 120
        while not (pid_file.exists() and pid_file.read_text()):
            assert proc.poll() is None, "the interpreter ended before its stage started"
            assert time.monotonic() < deadline
            time.sleep(0.1)
        child = int(pid_file.read_text())
        assert child != proc.pid  # the stage ran in a child of its own
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    deadline = time.monotonic() + 10
    try:
        while os.path.exists(f"/proc/{child}") and time.monotonic() < deadline:
            with open(f"/proc/{child}/stat") as f:
                if f.read().split(") ")[1].startswith("Z"):  # ended, not yet reaped
                    break
            time.sleep(0.1)
        else:
            assert not os.path.exists(f"/proc/{child}"), "the stage's child outlived its interpreter"
    finally:
        try:
            os.kill(child, signal.SIGKILL)
        except ProcessLookupError:
            pass
