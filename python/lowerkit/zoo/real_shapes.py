"""Issue 22's real-shape set: programs at the sizes real models run at (batch 1, fp32, random
weights), where the hand-written zoo's small sizes hide what lowerkit does with long sequences,
large matmuls and depthwise convolutions. ``lowerkit bench real`` times them.

The entries need nothing but torch, except two that come from libraries: ``vit_b16``
(torchvision) and ``whisper_encoder_1500`` (transformers). They are left out, with the reason,
where the library is not installed (`available`).
"""

from __future__ import annotations

import importlib.util

import torch
from torch import nn

from . import ZooModel
from .vision import resnet50  # noqa: F401 - an entry of this set too


def _seeded(make):
    torch.manual_seed(0)
    return make().eval()


def sdpa_1500():
    """``F.scaled_dot_product_attention``, 4 heads × 1500 × 16 (Whisper's encoder length)."""
    g = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(1, 4, 1500, 16, generator=g) for _ in range(3))
    return (lambda q, k, v: nn.functional.scaled_dot_product_attention(q, k, v)), (q, k, v)


def vit_b_stack():
    """Two ViT-B/16 encoder blocks (d=768, 12 heads, MLP 3072, pre-norm) over 197 tokens."""
    def make():
        layer = dict(d_model=768, nhead=12, dim_feedforward=3072, dropout=0.0,
                     activation="gelu", batch_first=True, norm_first=True)
        return nn.Sequential(nn.TransformerEncoderLayer(**layer),
                             nn.TransformerEncoderLayer(**layer))
    return _seeded(make), (torch.randn(1, 197, 768, generator=torch.Generator().manual_seed(1)),)


def bert_base_layer():
    """One BERT-base layer (d=768, 12 heads, FFN 3072, post-norm) over 128 tokens."""
    return (_seeded(lambda: nn.TransformerEncoderLayer(768, 12, 3072, dropout=0.0,
                                                      activation="gelu", batch_first=True)),
            (torch.randn(1, 128, 768, generator=torch.Generator().manual_seed(2)),))


def dw_separable():
    """Issue 22's depthwise-separable CNN: a stride-2 stem, then four blocks of a 3x3 depthwise
    and a 1x1 convolution, each with BatchNorm and ReLU6, on 112x112 feature maps."""
    def block(c_in, c_out, stride):
        return [nn.Conv2d(c_in, c_in, 3, stride, 1, groups=c_in, bias=False),
                nn.BatchNorm2d(c_in), nn.ReLU6(),
                nn.Conv2d(c_in, c_out, 1, bias=False), nn.BatchNorm2d(c_out), nn.ReLU6()]

    def make():
        layers = [nn.Conv2d(3, 32, 3, 2, 1, bias=False), nn.BatchNorm2d(32), nn.ReLU6()]
        for c_in, c_out, stride in ((32, 64, 1), (64, 128, 2), (128, 128, 1), (128, 256, 2)):
            layers += block(c_in, c_out, stride)
        model = nn.Sequential(*layers)
        for m in model.modules():
            if isinstance(m, nn.BatchNorm2d):
                m.running_mean.uniform_(-0.1, 0.1)
                m.running_var.uniform_(0.5, 1.5)
        return model
    return _seeded(make), (torch.randn(1, 3, 224, 224, generator=torch.Generator().manual_seed(3)),)


def vit_b16():
    """torchvision's ViT-B/16 at 224x224."""
    from .ecosystem import import_torchvision

    tv = import_torchvision()
    return (_seeded(lambda: tv.models.vit_b_16()),
            (torch.randn(1, 3, 224, 224, generator=torch.Generator().manual_seed(4)),))


def whisper_encoder_1500():
    """transformers' Whisper encoder at whisper-tiny's width (d=384, 6 heads, FFN 1536), two
    layers, over 30 s of 80-bin features (3000 frames, 1500 positions)."""
    from .ecosystem import import_transformers

    tf = import_transformers()
    cfg = tf.WhisperConfig(d_model=384, encoder_layers=2, decoder_layers=1,
                           encoder_attention_heads=6, decoder_attention_heads=6,
                           encoder_ffn_dim=1536, decoder_ffn_dim=1536, num_mel_bins=80,
                           max_source_positions=1500, use_cache=False)
    encoder = _seeded(lambda: tf.WhisperModel(cfg).get_encoder())
    return encoder, (torch.randn(1, 80, 3000, generator=torch.Generator().manual_seed(5)),)


def _r(name: str, needs: str = "") -> ZooModel:
    return ZooModel(name, f"real_shapes:{name}", "real", frozenset({"real", "slow"}),
                    note=f"needs {needs}" if needs else "")


_ENTRIES = [
    _r("sdpa_1500"), _r("whisper_encoder_1500", "transformers"), _r("vit_b16", "torchvision"),
    _r("vit_b_stack"), _r("dw_separable"), _r("resnet50"), _r("bert_base_layer"),
]
REAL_SHAPES: dict[str, ZooModel] = {m.name: m for m in _ENTRIES}


def available() -> tuple[list[ZooModel], dict[str, str]]:
    """The entries whose libraries are installed, and why each other one is left out."""
    found, missing = [], {}
    for m in _ENTRIES:
        library = m.note.removeprefix("needs ") if m.note else ""
        if library and importlib.util.find_spec(library) is None:
            missing[m.name] = f"{library} is not installed"
        else:
            found.append(m)
    return found, missing
