"""lowerkit-opt in-process: diagnostics instead of tracebacks; IRDL dialects; registries."""

from torch_mlir import ir

import lowerkit
from lowerkit import registry
from lowerkit.tools import opt


def test_parse_error_is_an_mlir_diagnostic(tmp_path, capsys):
    f = tmp_path / "bad.mlir"
    f.write_text("func.func @f() {\n  return %x : i32\n}\n")
    assert opt.main([str(f)]) == 1
    err = capsys.readouterr().err
    assert f"{f}:2:10: error: use of undeclared SSA value name" in err
    assert "Traceback" not in err


def test_python_pass_by_name(tmp_path, capsys):
    f = tmp_path / "in.mlir"
    f.write_text("func.func @f(%x: f32) -> f32 {\n  %0 = arith.negf %x : f32\n"
                 "  %1 = arith.negf %0 : f32\n  return %1 : f32\n}\n")
    assert opt.main([str(f), "--pass=fold-double-negation,count-ops"]) == 0
    out = capsys.readouterr().out
    assert "arith.negf" not in out and "lowerkit.op_count" in out


def test_irdl_dialect_loads_once_per_context():
    ctx = ir.Context()
    lowerkit.load_dialect(ctx, "fused")
    lowerkit.load_dialect(ctx, "fused")  # would crash MLIR if loaded again
    assert ctx.is_registered_operation("fused.rms_norm")


def test_registries_are_lazy_and_complete():
    assert {"torch-to-linalg", "torch-to-linalg-fused", "stage-kinds"} <= set(registry.pipelines.names())
    assert {"lower-custom-ops", "raise-to-fused", "lower-fused-to-linalg"} <= set(registry.passes.names())
    assert registry.dialects.names() == ["fused"]
