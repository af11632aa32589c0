"""The command a StageError prints reproduces the failure when run in a shell, for every kind of
stage, the user's own unregistered Python code included; where none can be given, it says why."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from lowerkit.ir import Build
from lowerkit.errors import StageError

INPUTS = Path(__file__).parent / "inputs"
sys.path.insert(0, str(INPUTS))
import failing_stages  # noqa: E402  (a user's file: found through sys.path, as a script's neighbour is)

sys.path.remove(str(INPUTS))


@pytest.fixture(autouse=True)
def repro_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("LOWERKIT_REPRO_DIR", str(tmp_path))
    return tmp_path


def _parse(stage, text: str):
    from lowerkit.dialects.irdl import dialects_used_in, load_dialects

    ctx = stage.build.ir.Context()
    if stage.build is Build.TORCH_MLIR:
        from torch_mlir.dialects import torch as torch_dialect

        torch_dialect.register_dialect(ctx)
    load_dialects(ctx, dialects_used_in(text))
    return stage.build.ir.Module.parse(text, ctx)


def _fail(stage, text: str) -> StageError:
    with pytest.raises(StageError) as info:
        stage(_parse(stage, text))
    return info.value


def _shell(command: str, cwd: Path) -> subprocess.CompletedProcess:
    # another directory than the user's, as a user pasting the command elsewhere would
    return subprocess.run(command, shell=True, capture_output=True, text=True, cwd=cwd, timeout=300)


@pytest.mark.parametrize("case", list(failing_stages.CASES))
def test_printed_command_reproduces_the_failure(case, tmp_path):
    stage, text, message = failing_stages.CASES[case]
    error = _fail(stage, text)
    assert message in str(error), str(error)
    assert error.command and f"replay with: {error.command}" in str(error)
    replay = _shell(error.command, cwd=tmp_path)
    output = replay.stdout + replay.stderr
    assert replay.returncode == 1, f"{error.command}\n{output}"
    assert message in output, f"{error.command}\n{output}"


EXPECTED_TOOL = {"pass-pipeline": "torch-mlir-opt", "pass-pipeline-iree": "iree-opt",
                 "transform-path-iree": "iree-opt", "registered": "lowerkit-opt"}


@pytest.mark.parametrize("case", list(failing_stages.CASES))
def test_command_uses_the_tool_of_its_stage_kind(case):
    stage, text, _ = failing_stages.CASES[case]
    error = _fail(stage, text)
    program = Path(error.command.split()[0]).name
    assert program == EXPECTED_TOOL.get(case, Path(sys.executable).name), error.command
    if case not in EXPECTED_TOOL:  # a replay script beside the saved input
        assert error.command.split()[1] == str(error.reproducer.with_suffix(".replay.py"))


def test_replay_of_a_stage_that_no_longer_fails_exits_0(tmp_path):
    stage, text, _ = failing_stages.CASES["python-pass"]
    error = _fail(stage, text)
    error.reproducer.write_text("module {\n}\n")  # no func.return for the pass to refuse
    replay = _shell(error.command, cwd=tmp_path)
    assert replay.returncode == 0, replay.stderr
    assert "did not reproduce" in replay.stderr


def _stage_of(run) -> object:
    from lowerkit import PythonPassStage

    return PythonPassStage("refuse-all", run)


def test_lambda_gets_no_command_and_says_why():
    error = _fail(_stage_of(lambda op, pass_: pass_.signal_pass_failure()), failing_stages.ADD)
    assert error.command is None
    assert "is a lambda" in error.why_no_command and "no replay command:" in str(error)


def test_nested_function_gets_no_command_and_says_why():
    def refuse(op, pass_):
        pass_.signal_pass_failure()

    error = _fail(_stage_of(refuse), failing_stages.ADD)
    assert error.command is None
    assert "defined inside a function" in error.why_no_command, error.why_no_command


def _run_python(source: str, tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, *args], input=source if not args else None,
                          capture_output=True, text=True, cwd=tmp_path, timeout=300)


USER_SCRIPT = textwrap.dedent("""
    from torch_mlir import ir
    from lowerkit import PythonPassStage, StageError

    def refuse(op, pass_):
        op.location.emit_error("user-script: refused")
        pass_.signal_pass_failure()

    def main():
        try:
            PythonPassStage("refuse-all", refuse)(ir.Module.parse("func.func @f() {{ return }}", ir.Context()))
        except StageError as e:
            print("COMMAND:", e.command)
            print("WHY:", e.why_no_command)
    {call}
""")


def test_code_typed_at_a_prompt_gets_no_command(tmp_path):
    run = _run_python(USER_SCRIPT.format(call="main()"), tmp_path)  # `python` reading stdin
    assert "COMMAND: None" in run.stdout, run.stdout + run.stderr
    assert "interactive prompt" in run.stdout


def test_script_running_the_stage_at_top_level_gets_no_command(tmp_path):
    script = tmp_path / "user_script.py"
    script.write_text(USER_SCRIPT.format(call="main()"))
    run = _run_python("", tmp_path, str(script))
    assert "COMMAND: None" in run.stdout, run.stdout + run.stderr
    assert "if __name__ ==" in run.stdout and f"{script}" in run.stdout


def test_script_with_a_main_guard_replays_its_own_pass(tmp_path):
    script = tmp_path / "user_script.py"
    script.write_text(USER_SCRIPT.format(call='if __name__ == "__main__":\n    main()'))
    run = _run_python("", tmp_path, str(script))
    command = run.stdout.partition("COMMAND: ")[2].splitlines()[0]
    assert command != "None", run.stdout + run.stderr
    replay = _shell(command, cwd=tmp_path)
    assert replay.returncode == 1 and "user-script: refused" in replay.stderr, replay.stderr
    assert "COMMAND:" not in replay.stdout  # the replay imported the script without running main()
