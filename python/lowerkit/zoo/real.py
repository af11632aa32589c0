"""`lowerkit.zoo.real`: models at their published sizes, random weights, batch 1, f32.

The ecosystem zoo builds each family small (2 layers, 32-64 px), which checks what lowerkit
imports; what real sizes bring (stack limits, tile rules, data-tiling rungs, the attention
kernel's long paths) shows only at the sizes models ship with. This zoo takes every model
torchvision lists for classification, segmentation and video, a set of timm families, and
transformers models at their published configurations, each at the input size its library
publishes (torchvision's weights transforms, timm's pretrained config).

Entries are listed from the installed libraries (`real_zoo`); each factory is resolved by name
(``real:tv__resnet50``), so a new torchvision model joins the zoo without an edit here.
`lowerkit zoo --real` runs them, one shard of it with ``--shard K/N`` or ``--shard auto/N``
(the shard picked by the commit).
"""

from __future__ import annotations

import functools
import importlib.util

import torch

from . import ZooModel
from .real_models import _calibrated

# timm families, each a small member at its pretrained config's input size
TIMM_MODELS = (
    "resnet50", "efficientnet_b0", "convnext_atto", "regnetx_002", "mobilenetv3_large_100",
    "levit_128s", "coatnet_nano_rw_224", "vit_tiny_patch16_224", "deit_tiny_patch16_224",
    "mixer_b16_224", "poolformer_s12", "ghostnet_100", "dla34", "densenet121",
    "edgenext_xx_small", "mobilevit_xxs", "cspdarknet53", "rexnet_100", "efficientformer_l1",
    "fastvit_t8", "pvt_v2_b0", "inception_v4", "xception41", "hrnet_w18_small",
)

# transformers models at the configuration of the named checkpoint
TRANSFORMERS_MODELS = ("bert_base", "gpt2_small", "t5_small", "bart_base", "whisper_tiny",
                       "vit_base", "wav2vec2_base", "qwen2_0_5b")

VIDEO_FRAMES = 16           # the clip length torchvision's Kinetics recipes evaluate with
SEQUENCE = 128              # tokens of a text model's input


def _generator(seed: int) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


# -- torchvision ---------------------------------------------------------------------------------
def _tv():
    from .ecosystem import import_torchvision

    return import_torchvision()


def _tv_kind(name: str) -> str:
    m = _tv().models
    for kind, module in (("segmentation", m.segmentation), ("video", m.video)):
        if name in m.list_models(module=module):
            return kind
    return "classification"


def published_input(name: str) -> tuple[int, ...]:
    """The input shape torchvision evaluates ``name`` at: its default weights' crop (or resize,
    for segmentation), batch 1; video models take `VIDEO_FRAMES` frames."""
    weights = _tv().models.get_model_weights(name).DEFAULT
    sizes = getattr(weights.transforms, "keywords", {})
    size = sizes.get("crop_size") or sizes.get("resize_size")
    h, w = (size, size) if isinstance(size, int) else tuple(size)
    if _tv_kind(name) == "video":
        return (1, 3, VIDEO_FRAMES, h, w)
    return (1, 3, h, w)


class _SegmentationLogits(torch.nn.Module):
    """A segmentation model's ``out`` alone (torchvision returns a dict with ``aux``)."""

    def __init__(self, model: torch.nn.Module):
        super().__init__()
        self.model = model

    def forward(self, x):
        return self.model(x)["out"]


def _torchvision(name: str):
    tv = _tv()
    kind = _tv_kind(name)
    kwargs = {}
    if name in ("inception_v3", "googlenet"):
        kwargs = {"aux_logits": False, "init_weights": False}
    if kind == "segmentation":
        kwargs = {"aux_loss": False, "weights_backbone": None}  # nothing is downloaded
    torch.manual_seed(0)
    model = tv.models.get_model(name, weights=None, **kwargs)
    if name.startswith("vit_"):  # an untrained ViT's head is zero: every logit would be 0
        with torch.no_grad():
            torch.nn.init.normal_(model.heads.head.weight, std=0.02)
    x = torch.randn(*published_input(name), generator=_generator(7))
    model = _calibrated(model, x)
    if kind == "segmentation":
        model = _SegmentationLogits(model).eval()
    return model, (x,)


# -- timm ----------------------------------------------------------------------------------------
def _timm_model(name: str):
    from .ecosystem import _timm

    timm = _timm()
    size = timm.models.get_pretrained_cfg(name).input_size
    torch.manual_seed(0)
    model = timm.create_model(name, pretrained=False)
    x = torch.randn(1, *size, generator=_generator(7))
    return _calibrated(model, x), (x,)


# -- transformers --------------------------------------------------------------------------------
def _tf():
    from .ecosystem import import_transformers

    return import_transformers()


def _ids(vocab: int, n: int = SEQUENCE, seed: int = 1) -> torch.Tensor:
    return torch.randint(0, vocab, (1, n), generator=_generator(seed))


def _built(model_class: str, config) -> torch.nn.Module:
    torch.manual_seed(0)
    return getattr(_tf(), model_class)(config).eval()


def bert_base():
    cfg = _tf().BertConfig()  # bert-base-uncased: 12 layers, 768 wide, 30522 tokens
    ids = _ids(cfg.vocab_size)
    return _built("BertModel", cfg), (ids,), {"attention_mask": torch.ones_like(ids)}


def gpt2_small():
    cfg = _tf().GPT2Config(use_cache=False)  # gpt2: 124M, 12 layers, 768 wide
    return _built("GPT2LMHeadModel", cfg), (_ids(cfg.vocab_size),)


def t5_small():
    cfg = _tf().T5Config(use_cache=False)  # t5-small: 6+6 layers, 512 wide
    return (_built("T5Model", cfg), (_ids(cfg.vocab_size),),
            {"decoder_input_ids": _ids(cfg.vocab_size, 16, seed=2)})


def bart_base():
    cfg = _tf().BartConfig(d_model=768, encoder_layers=6, decoder_layers=6,
                           encoder_attention_heads=12, decoder_attention_heads=12,
                           encoder_ffn_dim=3072, decoder_ffn_dim=3072, use_cache=False)
    return (_built("BartModel", cfg), (_ids(cfg.vocab_size),),
            {"decoder_input_ids": _ids(cfg.vocab_size, 16, seed=2)})


def whisper_tiny():
    cfg = _tf().WhisperConfig(use_cache=False)  # whisper-tiny: 4+4 layers, 384 wide, 80 mels
    features = torch.randn(1, cfg.num_mel_bins, 2 * cfg.max_source_positions,
                           generator=_generator(4))
    decoder_ids = torch.tensor([[cfg.decoder_start_token_id]])
    return _built("WhisperModel", cfg), (features,), {"decoder_input_ids": decoder_ids}


def vit_base():
    cfg = _tf().ViTConfig()  # vit-base-patch16-224
    x = torch.randn(1, 3, cfg.image_size, cfg.image_size, generator=_generator(2))
    return _built("ViTModel", cfg), (x,)


def wav2vec2_base():
    cfg = _tf().Wav2Vec2Config()  # wav2vec2-base: 12 layers, 768 wide; one second at 16 kHz
    return _built("Wav2Vec2Model", cfg), (torch.randn(1, 16000, generator=_generator(3)),)


def qwen2_0_5b():
    """Qwen2-0.5B's configuration (494M parameters); the prefill returns its DynamicCache."""
    cfg = _tf().Qwen2Config(hidden_size=896, intermediate_size=4864, num_hidden_layers=24,
                            num_attention_heads=14, num_key_value_heads=2, vocab_size=151936,
                            max_position_embeddings=32768, rope_theta=1000000.0,
                            tie_word_embeddings=True, use_cache=True)
    return _built("Qwen2ForCausalLM", cfg), (_ids(cfg.vocab_size, 32),)


# -- the registry --------------------------------------------------------------------------------
def __getattr__(name: str):
    """``tv__NAME`` and ``timm__NAME``: the factory `ZooModel.factory` resolves."""
    library, sep, model = name.partition("__")
    if sep and library == "tv":
        return functools.partial(_torchvision, model)
    if sep and library == "timm":
        return functools.partial(_timm_model, model)
    raise AttributeError(name)


def _entry(name: str, factory: str, library: str, kind: str) -> ZooModel:
    return ZooModel(name, f"real:{factory}", "real", frozenset({"real", library, kind, "slow"}),
                    note=f"needs {library}")


def real_zoo() -> list[ZooModel]:
    """Every entry whose library is installed: torchvision's classification, segmentation and
    video models, then `TIMM_MODELS`, then `TRANSFORMERS_MODELS`."""
    entries = []
    if importlib.util.find_spec("torchvision") is not None:
        m = _tv().models
        for kind, module in (("classification", m), ("segmentation", m.segmentation),
                             ("video", m.video)):
            entries += [_entry(f"tv_{n}", f"tv__{n}", "torchvision", kind)
                        for n in m.list_models(module=module)]
    if importlib.util.find_spec("timm") is not None and entries:  # timm imports torchvision
        entries += [_entry(f"timm_{n}", f"timm__{n}", "timm", "classification")
                    for n in TIMM_MODELS]
    if importlib.util.find_spec("transformers") is not None:
        entries += [_entry(f"hf_{n}", n, "transformers", "transformers")
                    for n in TRANSFORMERS_MODELS]
    return entries
