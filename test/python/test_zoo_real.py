"""The real-size zoo (`lowerkit.zoo.real`): what it lists, the sizes it builds at, and the
rotating shard CI takes of it. Compiling a model at its published size takes a minute or more;
test_zoo_real_share.py runs this commit's shard."""

from __future__ import annotations

import importlib.util
import subprocess

import pytest

from lowerkit.tools.executor import parse_shard

pytestmark = pytest.mark.skipif(
    any(importlib.util.find_spec(lib) is None for lib in ("torchvision", "timm", "transformers")),
    reason="needs torchvision, timm and transformers: pip install -e '.[ecosystem]'")


def test_the_zoo_lists_every_torchvision_model_of_the_three_kinds_and_the_issues_families():
    from lowerkit.zoo.ecosystem import import_torchvision
    from lowerkit.zoo.real import real_zoo

    m = import_torchvision().models
    zoo = {z.name: z for z in real_zoo()}
    for module in (m, m.segmentation, m.video):
        listed = m.list_models(module=module)
        assert listed and {f"tv_{n}" for n in listed} <= set(zoo)
    timm = {n for n in zoo if n.startswith("timm_")}
    assert len(timm) >= 15
    for name in ("bert_base", "gpt2_small", "t5_small", "bart_base", "whisper_tiny", "vit_base",
                 "wav2vec2_base", "qwen2_0_5b"):
        assert f"hf_{name}" in zoo
    assert all(z.group == "real" and z.slow for z in zoo.values())


def test_inputs_are_the_sizes_torchvision_publishes():
    from lowerkit.zoo.real import published_input

    assert published_input("resnet50") == (1, 3, 224, 224)
    assert published_input("inception_v3") == (1, 3, 299, 299)
    assert published_input("efficientnet_b3") == (1, 3, 300, 300)
    assert published_input("efficientnet_v2_s") == (1, 3, 384, 384)
    assert published_input("deeplabv3_resnet50") == (1, 3, 520, 520)
    assert published_input("r3d_18") == (1, 3, 16, 112, 112)


@pytest.mark.parametrize("factory, parameters, bound", [
    ("bert_base", 109.5e6, 0.01),
    ("gpt2_small", 124.4e6, 0.01),
    ("whisper_tiny", 37.8e6, 0.02),
    ("t5_small", 60.5e6, 0.01),
])
def test_transformers_models_have_their_checkpoints_size(factory, parameters, bound):
    """The configurations are the published checkpoints', not the library's defaults by luck:
    the parameter count is the checkpoint's (tied embeddings counted once)."""
    import lowerkit.zoo.real as real

    model = getattr(real, factory)()[0]
    n = sum(p.numel() for p in model.parameters())
    assert abs(n - parameters) / parameters < bound, n


def test_a_torchvision_entry_builds_its_model_at_its_size_with_calibrated_norms():
    from lowerkit.zoo.real import real_zoo

    entry = next(z for z in real_zoo() if z.name == "tv_mobilenet_v3_small")
    model, (x,), _ = entry.make()
    assert tuple(x.shape) == (1, 3, 224, 224) and not model.training
    norms = [b for b in model.modules() if b.__class__.__name__ == "BatchNorm2d"]
    assert norms and all(abs(float(b.running_var.mean()) - 1.0) > 1e-3 for b in norms[:3])


def test_shard_auto_rotates_through_every_shard_with_the_commit_count():
    assert [parse_shard("auto/4", commits=c) for c in range(8)] == [
        (1, 4), (2, 4), (3, 4), (4, 4), (1, 4), (2, 4), (3, 4), (4, 4)]
    here = subprocess.run(["git", "rev-list", "--count", "HEAD"], capture_output=True, text=True)
    if here.returncode == 0:
        assert parse_shard("auto/4") == (int(here.stdout) % 4 + 1, 4)


def test_shard_auto_outside_a_checkout_says_to_give_the_shard(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path.parent))
    with pytest.raises(ValueError, match="no git checkout here: give K/N"):
        parse_shard("auto/4")
