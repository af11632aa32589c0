"""PDLStage given the path of a PDL pattern file (the README's "text, a .mlir path, or a
builder"), as a Path or a string: the file's patterns are applied; a missing file is a
StageError naming the stage and the file."""

from __future__ import annotations

from pathlib import Path

import pytest
from torch_mlir import ir

from lowerkit import PDLStage, StageError
from lowerkit.pipelines.stage_kinds import DOUBLE_NEGATION_PDL

# -(-y) + -z: one double negation to fold, one single negation to keep
INPUT = """
func.func @f(%y: f32, %z: f32) -> f32 {
  %a = arith.negf %y : f32
  %b = arith.negf %a : f32
  %c = arith.negf %z : f32
  %d = arith.addf %b, %c : f32
  return %d : f32
}
"""


@pytest.mark.parametrize("as_type", [Path, str], ids=["Path", "str"])
def test_patterns_are_read_from_a_path(tmp_path, as_type):
    pdl_file = tmp_path / "double_negation.mlir"
    pdl_file.write_text(DOUBLE_NEGATION_PDL)
    module = ir.Module.parse(INPUT, ir.Context())
    out = str(PDLStage("fold-double-negation-file", as_type(pdl_file))(module))
    assert out.count("arith.negf") == 1 and "arith.negf %arg1" in out
    assert "arith.addf %arg0, %0" in out


def test_a_missing_pattern_file_names_the_stage_and_the_file(tmp_path):
    missing = tmp_path / "absent.mlir"
    module = ir.Module.parse(INPUT, ir.Context())
    with pytest.raises(StageError, match=r"(?s)stage 'from-missing-file' failed: .*No such file.*absent\.mlir"):
        PDLStage("from-missing-file", Path(missing))(module)
