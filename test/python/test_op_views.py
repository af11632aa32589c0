"""`lowerkit.op_views`: lowerkit's stages read IREE's linalg ops through the generated op
classes, without importing ``iree.compiler.dialects.linalg``'s op-building DSL (0.08 s of a
first compile); code that builds linalg ops still gets IREE's whole module."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

DSL = "iree.compiler.dialects.linalg.opdsl"

# a fresh interpreter: a data-tiled compile (the stages that walk and rewrite IREE's linalg ops:
# the reduction fences, the filters made HWCF), its first call against eager, and what it imported
PROBE = textwrap.dedent(f"""
    import json, sys, warnings
    warnings.simplefilter("ignore")
    import torch, lowerkit
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Conv2d(3, 16, 3), torch.nn.BatchNorm2d(16),
                                torch.nn.ReLU(), torch.nn.Conv2d(16, 16, 3),
                                torch.nn.AdaptiveAvgPool2d(1)).eval()
    x = torch.randn(1, 3, 16, 16)
    art = lowerkit.compile(model, (x,), cache=False, convolutions="data-tiled")
    with torch.no_grad():
        error = (art(x) - model(x)).abs().max().item()
    stages = [r.name for r in art.records]
    print(json.dumps({{"dsl": "{DSL}" in sys.modules, "error": error, "stages": stages}}))
""")


def test_a_compile_reads_linalg_ops_without_importing_the_op_dsl():
    env = {**os.environ, "LOWERKIT_CACHE_DIR": "off"}
    proc = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True,
                          env=env, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    found = json.loads(proc.stdout.strip().splitlines()[-1])
    assert "filters-channels-last" in found["stages"] and "fence-reductions" in found["stages"]
    assert found["error"] < 1e-4, found
    assert not found["dsl"], f"a compile imported {DSL} (IREE's op-building DSL)"


def test_linalg_ops_read_from_python_have_their_generated_classes_and_building_still_works():
    from lowerkit.ir import Build

    ir = Build.IREE.ir
    with ir.Context() as ctx, ir.Location.unknown():
        module = ir.Module.parse(
            "func.func @f(%a: tensor<2x3xf32>) -> tensor<3x2xf32> {\n"
            "  %e = tensor.empty() : tensor<3x2xf32>\n"
            "  %t = linalg.transpose ins(%a : tensor<2x3xf32>) outs(%e : tensor<3x2xf32>)"
            " permutation = [1, 0]\n"
            "  return %t : tensor<3x2xf32>\n}", ctx)
        func = module.body.operations[0]
        ops = list(func.regions[0].blocks[0].operations)
        assert type(ops[1]).__name__ == "TransposeOp"
        assert list(ops[1].permutation) == [1, 0]
        # a user (or a pass) that builds linalg ops imports IREE's module and gets its builders
        from iree.compiler.dialects import linalg

        with ir.InsertionPoint(ops[2]):
            again = linalg.transpose(func.regions[0].blocks[0].arguments[0],
                                     outs=[ops[0].result], permutation=[1, 0])
        assert again.operation.name == "linalg.transpose"
        assert module.operation.verify()
