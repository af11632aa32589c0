"""Stage and Pipeline: records, until=, instruments, the crossing into IREE, refusals."""

from __future__ import annotations

import pytest
import torch

import lowerkit
from lowerkit import (Build, FunctionStage, Instrument, PassPipelineStage, Pipeline,
                      PythonPassStage, StageError)


def _raw_module():
    return lowerkit.import_program(lambda x: torch.relu(x) * 2, (torch.randn(4),)).module


def test_default_pipeline_records_every_stage_and_stops_until():
    pipe = lowerkit.resolve_pipeline("torch-to-linalg")
    full = pipe.run(_raw_module(), keep_ir=True)
    assert [r.name for r in full.records] == pipe.stage_names
    assert all(r.seconds >= 0 for r in full.records)
    assert "linalg.generic" in full.records[-1].ops and "torch" not in full.records[-1].dialects()
    assert "torch.aten.relu" in full.record("torch-backend-contract").ir
    part = pipe.run(_raw_module(), until="torch-backend-contract")
    assert part.records[-1].name == "torch-backend-contract"
    assert "torch.aten.relu" in str(part.module)
    with pytest.raises(ValueError, match="no stage 'nope'"):
        pipe.run(_raw_module(), until="nope")


def test_pipeline_is_a_stage_and_nests():
    inner = lowerkit.resolve_pipeline("torch-to-linalg")
    seen = []
    outer = Pipeline("outer", [inner, FunctionStage("count-ops", lambda m: seen.append(
        len(lowerkit.op_histogram(m))))])
    out = outer(_raw_module())
    assert seen and lowerkit.Build.of(out) is Build.TORCH_MLIR
    assert outer.stage_names[-1] == "count-ops"
    assert outer.run(_raw_module(), until="torch-to-linalg").records[-1].name == inner.stage_names[-1]


def test_crossing_into_iree_happens_once_and_is_recorded():
    pipe = Pipeline("mixed", [
        lowerkit.resolve_pipeline(None),
        PassPipelineStage("iree-canonicalize", "canonicalize,cse", build=Build.IREE),
    ])
    result = pipe.run(_raw_module())
    assert [r.name for r in result.records][-2:] == ["bridge-to-iree", "iree-canonicalize"]
    assert Build.of(result.module) is Build.IREE
    with pytest.raises(ValueError, match="never back"):
        Pipeline("bad", [PassPipelineStage("a", "cse", build=Build.IREE),
                         PassPipelineStage("b", "cse")])


def test_stage_refuses_module_of_other_build():
    iree_stage = PassPipelineStage("cse-in-iree", "cse", build=Build.IREE)
    with pytest.raises(StageError, match="runs in iree's MLIR but was given a module of torch-mlir"):
        iree_stage(_raw_module())


def test_python_pass_failure_names_the_stage():
    def refuse(op, pass_):
        pass_.signal_pass_failure()

    with pytest.raises(StageError, match="stage 'always-fails' failed") as info:
        PythonPassStage("always-fails", refuse)(_raw_module())
    assert info.value.reproducer.exists()


def test_instruments_see_every_stage_and_dump_numbers_files(tmp_path):
    (tmp_path / "keep.txt").write_text("not ours")
    names = []

    class Names(Instrument):
        def after_stage(self, stage, module, record):
            names.append(stage.name)

    dump = lowerkit.DumpInstrument(tmp_path)
    lowerkit.resolve_pipeline(None).run(_raw_module(), instruments=[Names(), dump])
    assert names == lowerkit.resolve_pipeline(None).stage_names
    assert [p.name for p in dump.written] == [f"{i:02d}-{n}.mlir" for i, n in enumerate(names)]
    assert (tmp_path / "keep.txt").read_text() == "not ours"


def test_stage_names_are_kebab_case_and_registry_refuses_duplicates():
    with pytest.raises(ValueError, match="kebab-case"):
        PassPipelineStage("Bad_Name", "cse")
    with pytest.raises(lowerkit.RegistryError, match="already registered"):
        lowerkit.registry.pipelines.register("torch-to-linalg", lambda: None)
    with pytest.raises(lowerkit.RegistryError, match="no pipelines named 'nope'"):
        lowerkit.registry.pipelines.get("nope")


def test_running_stages_does_not_keep_contexts_alive():
    # The diagnostic handler of every stage run kept its context (and module) alive: the
    # fuzzer grew by ~3 MB a program (4 GB over 1000 programs).
    import gc

    from torch_mlir import ir

    def alive() -> int:
        gc.collect()
        return sum(1 for o in gc.get_objects() if isinstance(o, ir.Context))

    stage = PythonPassStage("noop-pass", lambda op, pass_: None)
    before = alive()
    for _ in range(20):
        module = ir.Module.parse("func.func @f() { return }", ir.Context())
        stage(module)
        del module
    assert alive() - before <= 1
