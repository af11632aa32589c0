"""Real models at their published sizes (torchvision and timm, random weights, batch 1, f32).

The ecosystem zoo (`lowerkit.zoo.ecosystem`) builds the same families at 32-64 px, which
checks what lowerkit imports but hides what real sizes bring: stack limits, tile rules, the
convolution forms that pay only on large feature maps. These entries are the ones issue 71
timed on an Intel Xeon host, at the input size each was published with; ``lowerkit bench
real-models`` times them against eager, Inductor, OpenVINO and IREE's own defaults.

Each factory imports its library when called (the ``ecosystem`` extra), so lowerkit needs
neither; `available` says which entries this environment can build.
"""

from __future__ import annotations

import importlib.util

import torch

from . import ZooModel


# Each entry's input, batch 1, at its published evaluation size.
PUBLISHED_INPUT = {
    "inception_v3": (1, 3, 299, 299), "convnext_tiny": (1, 3, 224, 224),
    "deeplabv3_mobilenet_v3_large": (1, 3, 520, 520), "r3d_18": (1, 3, 16, 112, 112),
    "regnet_y_400mf": (1, 3, 224, 224), "convnext_atto": (1, 3, 224, 224),
    "efficientnet_v2_s": (1, 3, 384, 384), "vit_b_16": (1, 3, 224, 224),
    "resnet50": (1, 3, 224, 224), "mobilenet_v3_small": (1, 3, 224, 224),
}


def _image(name: str) -> torch.Tensor:
    return torch.randn(*PUBLISHED_INPUT[name], generator=torch.Generator().manual_seed(7))


def _torchvision(name: str, **kwargs):
    from .ecosystem import import_torchvision

    tv = import_torchvision()
    video = len(PUBLISHED_INPUT[name]) == 5
    build = getattr(tv.models.video if video else
                    tv.models.segmentation if name.startswith("deeplab") else tv.models, name)
    torch.manual_seed(0)
    if name.startswith("deeplab"):
        kwargs["weights_backbone"] = None  # not ImageNet's: nothing is downloaded
    model = build(weights=None, **kwargs)
    return _calibrated(model, _image(name)), (_image(name),)


def _timm(name: str):
    from .ecosystem import _timm as import_timm  # timm imports torchvision: patched first

    timm = import_timm()
    torch.manual_seed(0)
    return _calibrated(timm.create_model(name, pretrained=False), _image(name)), (_image(name),)


def _calibrated(model: torch.nn.Module, example: torch.Tensor) -> torch.nn.Module:
    """``model`` in eval mode with each BatchNorm's running statistics taken from one batch
    (two random inputs of the example's size). With the initial statistics (mean 0, variance 1)
    random weights make activations fade or explode through a deep net (Inception-v3's logits
    reached 1e12, or every output was the classifier's bias, which any compiler matches
    exactly): an error check against eager then tests little."""
    norms = [m for m in model.modules() if isinstance(m, torch.nn.modules.batchnorm._BatchNorm)]
    for m in norms:
        m.reset_running_stats()
        m.momentum = None  # a cumulative average: one batch's statistics
    model.train()
    with torch.no_grad():
        model(torch.randn(2, *example.shape[1:], generator=torch.Generator().manual_seed(8)))
    return model.eval()


class _SegmentationLogits(torch.nn.Module):
    """torchvision's segmentation models return a dict (``out``, ``aux``); the logits alone."""

    def __init__(self, model: torch.nn.Module):
        super().__init__()
        self.model = model

    def forward(self, x):
        return self.model(x)["out"]


def inception_v3():
    """299x299: its 1x7 and 7x1 convolutions are the asymmetric kernels issue 71 names."""
    return _torchvision("inception_v3", aux_logits=False, init_weights=False)


def convnext_tiny():
    """224x224: 7x7 depthwise convolutions and LayerNorm over channels-last."""
    return _torchvision("convnext_tiny")


def deeplabv3_mobilenet_v3_large():
    """520x520 (torchvision's evaluation size): dilated depthwise convolutions, an ASPP head."""
    model, args = _torchvision("deeplabv3_mobilenet_v3_large", aux_loss=False)
    return _SegmentationLogits(model).eval(), args


def r3d_18():
    """16 frames of 112x112: 3-D convolutions."""
    return _torchvision("r3d_18")


def regnet_y_400mf():
    """224x224: grouped convolutions (group width 8) and squeeze-excitation."""
    return _torchvision("regnet_y_400mf")


def efficientnet_v2_s():
    """384x384 (its published evaluation size): fused MBConv and depthwise blocks."""
    return _torchvision("efficientnet_v2_s")


def vit_b_16():
    """224x224: 197 tokens through twelve 768-wide blocks, f32 matmuls."""
    model, args = _torchvision("vit_b_16")
    with torch.no_grad():  # torchvision zeroes the head of an untrained ViT: every logit 0
        torch.nn.init.normal_(model.heads.head.weight, std=0.02)
    return model, args


def resnet50():
    """224x224: dense 3x3 and 1x1 convolutions."""
    return _torchvision("resnet50")


def mobilenet_v3_small():
    """224x224: 3x3 and 5x5 depthwise convolutions, hard-swish, squeeze-excitation."""
    return _torchvision("mobilenet_v3_small")


def convnext_atto():
    """timm's ConvNeXt-atto at 224x224."""
    return _timm("convnext_atto")


def _m(name: str, library: str) -> ZooModel:
    return ZooModel(name, f"real_models:{name}", "real-models",
                    frozenset({"real-models", library, "slow"}), note=f"needs {library}")


_ENTRIES = [
    _m("inception_v3", "torchvision"), _m("convnext_tiny", "torchvision"),
    _m("deeplabv3_mobilenet_v3_large", "torchvision"), _m("r3d_18", "torchvision"),
    _m("regnet_y_400mf", "torchvision"), _m("convnext_atto", "timm"),
    _m("efficientnet_v2_s", "torchvision"), _m("vit_b_16", "torchvision"),
    _m("resnet50", "torchvision"), _m("mobilenet_v3_small", "torchvision"),
]
REAL_MODELS: dict[str, ZooModel] = {m.name: m for m in _ENTRIES}


def available(names: list[str] | None = None) -> tuple[list[ZooModel], dict[str, str]]:
    """The entries (all, or ``names``) whose library is installed, and why each other one is
    left out."""
    found, missing = [], {}
    for m in ([REAL_MODELS[n] for n in names] if names else _ENTRIES):
        library = m.note.removeprefix("needs ")
        if importlib.util.find_spec(library) is None or (
                library == "timm" and importlib.util.find_spec("torchvision") is None):
            missing[m.name] = f"{library} is not installed (pip install -e '.[ecosystem]')"
        else:
            found.append(m)
    return found, missing
