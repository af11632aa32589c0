"""Make a Python pass fail, then run the replay command its StageError prints."""

import shlex
import subprocess
import sys

from torch_mlir import ir

from lowerkit import PythonPassStage, StageError


def fails(op, pass_):
    pass_.signal_pass_failure()


module = ir.Module.parse("func.func @f() { return }", ir.Context())
try:
    PythonPassStage("erase-zero-add", fails)(module)
except StageError as e:
    print(f"replay with: {e.command}")
    rc = subprocess.run(shlex.split(e.command), capture_output=True, text=True).returncode
    print("replayed" if rc == 0 else f"replay failed ({rc})")
