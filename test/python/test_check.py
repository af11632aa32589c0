"""``lowerkit check`` through IREE: an op that the torch pipeline lowers but iree-compile
rejects is reported by check, with its stage and the user's source line."""

from __future__ import annotations

import torch

from lowerkit.cli import main as cli_main

HERE = __file__


class KthSmallest(torch.nn.Module):
    def forward(self, x):
        # torch-mlir lowers kthvalue to tm_tensor.topk, whose region iree-compile 3.13 rejects
        # ("region block must end with a linalg_ext.yield i1!")
        return torch.kthvalue(x, 2, 1).values * 2  # LINE kthvalue


def kth_smallest():
    torch.manual_seed(0)
    return KthSmallest(), (torch.rand(4, 6),)


def _line(tag: str) -> int:
    return next(i for i, text in enumerate(open(HERE).read().splitlines(), 1) if f"# LINE {tag}" in text)


def test_check_reports_an_op_iree_compile_rejects(capsys, monkeypatch):
    # torch-mlir lowers kthvalue to a tm_tensor.topk that IREE 3.13 rejects; lowerkit's own
    # decompositions sort instead, so they are off here to keep an op IREE rejects
    monkeypatch.setenv("LOWERKIT_DECOMPOSITIONS", "0")
    monkeypatch.setenv("COLUMNS", "250")
    spec = f"{HERE}:kth_smallest"
    assert cli_main(["check", spec, "--no-iree"]) == 0  # the torch pipeline lowers it ...
    assert "kth_smallest: every op lowers" in capsys.readouterr().out

    assert cli_main(["check", spec]) == 1  # ... IREE does not
    out = capsys.readouterr().out
    assert "1 op(s) cannot be lowered" in out
    row = next(line for line in out.splitlines() if "tm_tensor.topk" in line)
    assert "iree-compile" in row and f"{HERE}:{_line('kthvalue')}" in row
    assert "linalg_ext.yield" in row


def small_mlp():
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(8, 4), torch.nn.ReLU()), (torch.rand(2, 8),)


def test_check_runs_the_stages_compile_runs_for_the_target():
    """`check --target T` walks what `compile(target=T)` builds: the pipeline, the crossing,
    the target's fixes (for the portable Vulkan target, widen-narrow-io and the fences) and
    iree-compile, in the same order."""
    import lowerkit

    from lowerkit.api import default_weights

    model, args = small_mlp()
    for target in ("cpu", "vulkan"):
        # the weights as compile() takes them for the target (compiled in on Vulkan)
        imported = lowerkit.import_program(model, args, weights=default_weights(target))
        art = lowerkit.compile(model, args, target=target, cache=False)
        compiled = [r.name for r in art.records if r.name != "torch-import"]
        report = lowerkit.check_program(imported.module, lowerkit.resolve_pipeline(None),
                                        target=target)
        assert report.ok, report.errors
        assert report.passed == compiled
        fixes = lowerkit.registry.pipelines.factory("target-fixes")(target=target).stage_names
        # the weights become IREE parameters right after the fixes (a model with weights),
        # where they are not compiled in
        if default_weights(target) == "external":
            fixes = [*fixes, "externalize-weights"]
        uncrossed = [n for n in compiled if n != "bridge-to-iree"]
        assert fixes and uncrossed[-1 - len(fixes):-1] == fixes
    assert "widen-narrow-io" in report.passed and "fence-pad-sources" in report.passed
