# Without a registered lowering the error names the custom op and how to add one.
# RUN: %PYTHON %s | FileCheck %s
import os
import sys
import tempfile
from pathlib import Path

os.environ["LOWERKIT_CACHE_DIR"] = tempfile.mkdtemp()  # the same program compiles elsewhere

import lowerkit

sys.path.insert(0, str(Path(__file__).parent.parent / "Inputs"))
import custom_op  # noqa: E402

model, args = custom_op.model_without_lowering()
try:
    lowerkit.compile(model, args)
except lowerkit.StageError as e:
    print(e.stage)
    print(e.diagnostics[0].message)
    print(e.diagnostics[0].location)
# CHECK: lower-custom-ops
# CHECK-NEXT: custom op 'lit_demo::squared_relu' has no lowering; register one with @lowerkit.custom_op_lowering('lit_demo::squared_relu')
# CHECK-NEXT: {{.*}}custom_op.py:{{[0-9]+}}
