"""The entry-point groups lowerkit.passes / .pipelines / .dialects, read from a real dist-info
on sys.path (test/lit/Inputs/entry_points; test/lit/opt/entry-points.mlir runs the same
package through lowerkit-opt)."""

from __future__ import annotations

from pathlib import Path

import pytest

from lowerkit import Pipeline, PythonPassStage, RegistryError
from lowerkit.dialects.irdl import IRDLDialect
from lowerkit.registry import Registry

PACKAGE_DIR = Path(__file__).resolve().parents[1] / "lit" / "Inputs" / "entry_points"


@pytest.fixture
def demo_package_on_path(monkeypatch):
    monkeypatch.syspath_prepend(str(PACKAGE_DIR))
    # the tests make fresh registries; the process's own ones stay free of the demo
    import lowerkit.registry as registry

    for kind in ("passes", "pipelines", "dialects"):
        monkeypatch.setattr(getattr(registry, kind), "_entry_points_loaded", True)


def test_each_group_is_found_by_its_registry(demo_package_on_path):
    passes = Registry("passes", {})
    pipelines = Registry("pipelines", {})
    dialects = Registry("dialects", {})
    assert passes.names() == ["epdemo-tag-functions"]
    assert pipelines.names() == ["epdemo-pipeline"]
    assert dialects.names() == ["epdemo"]

    stage = passes.get("epdemo-tag-functions")
    assert isinstance(stage, PythonPassStage) and stage.name == "epdemo-tag-functions"
    dialect = dialects.get("epdemo")
    assert isinstance(dialect, IRDLDialect) and dialect.ops == ("epdemo.twice",)


def test_the_pipeline_from_an_entry_point_runs(demo_package_on_path, monkeypatch):
    import lowerkit.registry as registry

    # the demo's pipeline looks its pass up in lowerkit.registry.passes: read the group there
    monkeypatch.setattr(registry.passes, "_lazy", dict(registry.passes._lazy))
    monkeypatch.setattr(registry.passes, "_factories", dict(registry.passes._factories))
    monkeypatch.setattr(registry.passes, "_entry_points_loaded", False)
    pipeline = Registry("pipelines", {}).get("epdemo-pipeline")
    assert isinstance(pipeline, Pipeline)

    from torch_mlir import ir

    module = ir.Module.parse("func.func @f() { return }", ir.Context())
    out = pipeline.run(module).module
    assert "epdemo.tagged" in str(out)


def test_an_entry_point_may_not_take_a_registered_name(demo_package_on_path):
    passes = Registry("passes", {"epdemo-tag-functions": "lowerkit.stages.custom_ops:lower_custom_ops"})
    with pytest.raises(RegistryError, match="passes 'epdemo-tag-functions' from entry point "
                       "lk_entry_point_demo:tag_functions is already registered"):
        passes.names()
