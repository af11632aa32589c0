"""Models built from the libraries people compile (``transformers``, ``torchvision``, ``timm``),
from small configs with random weights, at batch 1: the ecosystem zoo.

Each factory imports its library when called, so lowerkit needs none of them; `ECOSYSTEM`
names the entries beside the hand-written `lowerkit.zoo.ZOO`. Decoders and seq2seq models are
built with ``use_cache=False``, so these entries test the model body; their caches as outputs
and inputs (a decode loop) are tested in ``test/python/test_transformers_caches.py``.

torchvision on PyPI is a CUDA build: beside the CPU torch its C++ library does not load, and
``import torchvision`` (also from ``timm``, and from ``transformers`` wherever torchvision is
installed) dies on ``operator torchvision::nms does not exist``. `patch_torchvision` defines
the two schemas torchvision's Python side registers fake kernels for (``nms``, ``qnms``; none
of these models calls them) when that library does not load. It is applied by each factory
here and by the test suite's ``conftest.py``, never by lowerkit itself.
"""

from __future__ import annotations

import importlib
from typing import Any

import torch

from . import ZOO, ZooModel
from ..errors import LowerkitError

__all__ = ["ECOSYSTEM", "ecosystem_models", "find", "patch_torchvision", "import_torchvision",
           "LIBRARIES"]

LIBRARIES = ("transformers", "torchvision", "timm")

# torchvision's own schemas (csrc/ops/nms.cpp, csrc/ops/quantized/cpu/qnms_kernel.cpp)
_TORCHVISION_SCHEMAS = (
    "nms(Tensor dets, Tensor scores, float iou_threshold) -> Tensor",
    "qnms(Tensor dets, Tensor scores, float iou_threshold) -> Tensor",
)
_TORCHVISION_LIB: list[Any] = []


def _torchvision_ops_load() -> bool:
    """Whether torchvision's C++ ops are registered (its library loaded, or the schemas defined)."""
    try:
        torch.ops.torchvision.nms  # noqa: B018 - the lookup is the test
        return True
    except (AttributeError, RuntimeError):
        return False


def patch_torchvision() -> bool:
    """Where torchvision is installed but its C++ library does not load beside this torch (a
    CUDA wheel with the CPU torch), define the ops its import registers fake kernels for,
    without kernels, so that ``import torchvision`` works; calling them
    (``torchvision.ops.nms``) then fails, and none of these models does. Imports nothing of
    torchvision. True when the schemas were defined (now or before)."""
    import glob
    import importlib.util
    import os

    if _TORCHVISION_LIB:
        return True
    spec = importlib.util.find_spec("torchvision")
    if spec is None or _torchvision_ops_load():
        return False
    for path in glob.glob(os.path.join(spec.submodule_search_locations[0], "_C*.so")):
        try:
            torch.ops.load_library(path)  # what torchvision.extension would load
            return False
        except OSError:
            break
    lib = torch.library.Library("torchvision", "FRAGMENT")
    for schema in _TORCHVISION_SCHEMAS:
        lib.define(schema)
    _TORCHVISION_LIB.append(lib)
    return True


def import_torchvision():
    """``import torchvision``, after `patch_torchvision`; ImportError when not installed."""
    import importlib.util

    if importlib.util.find_spec("torchvision") is None:
        raise ImportError("torchvision is not installed (pip install -e '.[ecosystem]')")
    patch_torchvision()
    return importlib.import_module("torchvision")


def import_transformers():
    """``import transformers``, after `patch_torchvision`: transformers imports torchvision
    wherever it is installed, and without the patch that import fails beside the CPU torch."""
    patch_torchvision()
    return importlib.import_module("transformers")


def _timm():
    import_torchvision()
    return importlib.import_module("timm")


def _seeded(build):
    torch.manual_seed(0)
    return build().eval()


# -- transformers: decoders (use_cache=False: the body, without the DynamicCache output) -------
_SEQ = 8
_VOCAB = 128


def _ids(n: int = _SEQ) -> torch.Tensor:
    return torch.randint(0, _VOCAB, (1, n), generator=torch.Generator().manual_seed(1))


def _decoder(config_name: str, model_name: str, **config):
    tf = import_transformers()
    cfg = getattr(tf, config_name)(vocab_size=_VOCAB, use_cache=False, **config)
    model = _seeded(lambda: getattr(tf, model_name)(cfg))
    return model, (_ids(),)


_LLAMA_LIKE = dict(hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                   num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64)


def gpt2():
    return _decoder("GPT2Config", "GPT2LMHeadModel", n_embd=32, n_layer=2, n_head=4,
                    n_positions=64, bos_token_id=0, eos_token_id=0)


def llama():
    return _decoder("LlamaConfig", "LlamaForCausalLM", **_LLAMA_LIKE)


def mistral():
    return _decoder("MistralConfig", "MistralForCausalLM", sliding_window=4, **_LLAMA_LIKE)


def qwen2():
    return _decoder("Qwen2Config", "Qwen2ForCausalLM", **_LLAMA_LIKE)


def phi3():
    return _decoder("Phi3Config", "Phi3ForCausalLM", pad_token_id=0, bos_token_id=0,
                    eos_token_id=0, **_LLAMA_LIKE)


def gemma2():
    return _decoder("Gemma2Config", "Gemma2ForCausalLM", head_dim=8, sliding_window=4,
                    **_LLAMA_LIKE)


def opt():
    return _decoder("OPTConfig", "OPTForCausalLM", hidden_size=32, ffn_dim=64,
                    word_embed_proj_dim=32, num_hidden_layers=2, num_attention_heads=4,
                    max_position_embeddings=64, pad_token_id=1)


def gpt_neox():
    return _decoder("GPTNeoXConfig", "GPTNeoXForCausalLM", hidden_size=32,
                    intermediate_size=64, num_hidden_layers=2, num_attention_heads=4,
                    max_position_embeddings=64)


def falcon():
    return _decoder("FalconConfig", "FalconForCausalLM", hidden_size=32, num_hidden_layers=2,
                    num_attention_heads=4)


# -- transformers: encoders ---------------------------------------------------------------------
_BERT_LIKE = dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                  intermediate_size=64, max_position_embeddings=64)


def _encoder(config_name: str, model_name: str, **config):
    tf = import_transformers()
    cfg = getattr(tf, config_name)(vocab_size=_VOCAB, **config)
    model = _seeded(lambda: getattr(tf, model_name)(cfg))
    return model, (_ids(),), {"attention_mask": torch.ones(1, _SEQ, dtype=torch.long)}


def bert():
    return _encoder("BertConfig", "BertModel", **_BERT_LIKE)


def roberta():
    return _encoder("RobertaConfig", "RobertaModel", pad_token_id=1, **_BERT_LIKE)


def distilbert():
    return _encoder("DistilBertConfig", "DistilBertModel", dim=32, n_layers=2, n_heads=4,
                    hidden_dim=64, max_position_embeddings=64)


def albert():
    return _encoder("AlbertConfig", "AlbertModel", embedding_size=16, **_BERT_LIKE)


def electra():
    return _encoder("ElectraConfig", "ElectraModel", embedding_size=16, **_BERT_LIKE)


# -- transformers: seq2seq (use_cache=False: no EncoderDecoderCache output) ----------------------
def _seq2seq(config_name: str, model_name: str, **config):
    tf = import_transformers()
    cfg = getattr(tf, config_name)(vocab_size=_VOCAB, use_cache=False, **config)
    model = _seeded(lambda: getattr(tf, model_name)(cfg))
    return model, (_ids(),), {"decoder_input_ids": _ids(4)}


def t5():
    return _seq2seq("T5Config", "T5Model", d_model=32, d_kv=8, d_ff=64, num_layers=2,
                    num_heads=4, decoder_start_token_id=0)


def bart():
    return _seq2seq("BartConfig", "BartModel", d_model=32, encoder_layers=2, decoder_layers=2,
                    encoder_attention_heads=4, decoder_attention_heads=4, encoder_ffn_dim=64,
                    decoder_ffn_dim=64, max_position_embeddings=64)


# -- transformers: vision and speech ---------------------------------------------------------------
def _image(size: int = 32, channels: int = 3) -> torch.Tensor:
    return torch.randn(1, channels, size, size, generator=torch.Generator().manual_seed(2))


def vit():
    tf = import_transformers()
    cfg = tf.ViTConfig(hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                       intermediate_size=64, image_size=32, patch_size=8)
    return _seeded(lambda: tf.ViTModel(cfg, add_pooling_layer=False)), (_image(),)


def hf_swin():
    tf = import_transformers()
    cfg = tf.SwinConfig(image_size=32, patch_size=4, embed_dim=16, depths=[1, 1],
                        num_heads=[2, 4], window_size=4)
    return _seeded(lambda: tf.SwinModel(cfg)), (_image(),)


def hf_convnext():
    tf = import_transformers()
    cfg = tf.ConvNextConfig(hidden_sizes=[16, 32], depths=[1, 1], num_stages=2)
    return _seeded(lambda: tf.ConvNextModel(cfg)), (_image(),)


def wav2vec2():
    tf = import_transformers()
    cfg = tf.Wav2Vec2Config(hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                            intermediate_size=64, conv_dim=(32, 32, 32),
                            conv_stride=(5, 2, 2), conv_kernel=(10, 3, 3),
                            num_conv_pos_embeddings=16, num_conv_pos_embedding_groups=4)
    audio = torch.randn(1, 1600, generator=torch.Generator().manual_seed(3))
    return _seeded(lambda: tf.Wav2Vec2Model(cfg)), (audio,)


def whisper_encoder():
    tf = import_transformers()
    cfg = tf.WhisperConfig(d_model=32, encoder_layers=2, decoder_layers=1,
                           encoder_attention_heads=4, decoder_attention_heads=4,
                           encoder_ffn_dim=64, decoder_ffn_dim=64, num_mel_bins=16,
                           max_source_positions=16, vocab_size=_VOCAB, use_cache=False,
                           pad_token_id=0, bos_token_id=0, eos_token_id=0,
                           decoder_start_token_id=0)
    encoder = _seeded(lambda: tf.WhisperModel(cfg).get_encoder())
    features = torch.randn(1, 16, 32, generator=torch.Generator().manual_seed(4))
    return encoder, (features,)


# -- torchvision ------------------------------------------------------------------------------------
def tv_swin():
    tv = import_torchvision()
    return _seeded(lambda: tv.models.SwinTransformer(
        patch_size=[4, 4], embed_dim=16, depths=[1, 1], num_heads=[2, 4], window_size=[4, 4],
        num_classes=10)), (_image(64),)


def tv_convnext():
    tv = import_torchvision()
    CNBlockConfig = tv.models.convnext.CNBlockConfig

    return _seeded(lambda: tv.models.ConvNeXt(
        [CNBlockConfig(16, 32, 1), CNBlockConfig(32, None, 1)], num_classes=10)), (_image(64),)


def tv_efficientnet_b0():
    tv = import_torchvision()
    return _seeded(lambda: tv.models.efficientnet_b0(num_classes=10)), (_image(64),)


def tv_efficientnet_v2_s():
    tv = import_torchvision()
    return _seeded(lambda: tv.models.efficientnet_v2_s(num_classes=10)), (_image(64),)


def tv_mobilenet_v3_small():
    tv = import_torchvision()
    return _seeded(lambda: tv.models.mobilenet_v3_small(num_classes=10)), (_image(64),)


def tv_regnet_y_400mf():
    tv = import_torchvision()
    return _seeded(lambda: tv.models.regnet_y_400mf(num_classes=10)), (_image(64),)


# -- timm ----------------------------------------------------------------------------------------------
def _timm_model(name: str, size: int, **kwargs):
    timm = _timm()
    return _seeded(lambda: timm.create_model(name, pretrained=False, num_classes=10,
                                             **kwargs)), (_image(size),)


def timm_levit():
    return _timm_model("levit_128s", 64, img_size=64)


def timm_coatnet():
    return _timm_model("coatnet_nano_rw_224", 64, img_size=64)


def timm_efficientnet_b0():
    return _timm_model("efficientnet_b0", 64)


def timm_vit_tiny():
    return _timm_model("vit_tiny_patch16_224", 64, img_size=64)


def timm_convnext_atto():
    return _timm_model("convnext_atto", 64)


def timm_mobilenetv3():
    return _timm_model("mobilenetv3_small_050", 64)


def timm_regnetx():
    return _timm_model("regnetx_002", 64)


# -- the registry ------------------------------------------------------------------------------------
_NO_CACHE = ("built with use_cache=False: the prefill alone (a DynamicCache in and out: "
             "test_transformers_caches.py)")
_NO_CACHE_S2S = ("built with use_cache=False: the forward alone (an EncoderDecoderCache in and "
                 "out: test_transformers_caches.py)")


def _e(name: str, library: str, *tags: str, note: str = "", known: str = "") -> ZooModel:
    """An entry; ``fast`` ones run in the default test suite, ``known`` names the stage that
    stops the model and why (the test expects that failure)."""
    tags = {library, *tags} | ({"known-failure"} if known else set())
    return ZooModel(name, f"ecosystem:{name}", "ecosystem", frozenset(tags), note=note,
                    known=known)


_ENTRIES = [
    # transformers decoders
    _e("gpt2", "transformers", "fast", note=_NO_CACHE),  # the one run by default (~15 s)
    _e("llama", "transformers", note=_NO_CACHE),
    _e("mistral", "transformers", note=_NO_CACHE),
    _e("qwen2", "transformers", note=_NO_CACHE),
    _e("phi3", "transformers", note=_NO_CACHE),
    _e("gemma2", "transformers", note=_NO_CACHE),
    _e("opt", "transformers", note=_NO_CACHE),
    _e("gpt_neox", "transformers", note=_NO_CACHE),
    _e("falcon", "transformers", note=_NO_CACHE),
    # transformers encoders
    _e("bert", "transformers"),
    _e("roberta", "transformers"),
    _e("distilbert", "transformers"),
    _e("albert", "transformers"),
    _e("electra", "transformers"),
    # transformers seq2seq
    _e("t5", "transformers", note=_NO_CACHE_S2S),
    _e("bart", "transformers", note=_NO_CACHE_S2S),
    # transformers vision and speech
    _e("vit", "transformers"),
    _e("hf_swin", "transformers"),
    _e("hf_convnext", "transformers"),
    _e("wav2vec2", "transformers"),
    _e("whisper_encoder", "transformers"),
    # torchvision
    _e("tv_swin", "torchvision"),
    _e("tv_convnext", "torchvision"),
    _e("tv_efficientnet_b0", "torchvision"),
    _e("tv_efficientnet_v2_s", "torchvision"),
    _e("tv_mobilenet_v3_small", "torchvision"),
    _e("tv_regnet_y_400mf", "torchvision"),
    # timm
    _e("timm_levit", "timm"),
    _e("timm_coatnet", "timm"),
    _e("timm_efficientnet_b0", "timm"),
    _e("timm_vit_tiny", "timm"),
    _e("timm_convnext_atto", "timm"),
    _e("timm_mobilenetv3", "timm"),
    _e("timm_regnetx", "timm"),
]

ECOSYSTEM: dict[str, ZooModel] = {m.name: m for m in _ENTRIES}


def ecosystem_models(fast_only: bool = False, names: list[str] | None = None) -> list[ZooModel]:
    """Ecosystem entries in order: the given names, the ``fast`` ones, or all."""
    if names:
        return [ECOSYSTEM[n] for n in names]
    return [m for m in _ENTRIES if not fast_only or "fast" in m.tags]


def find(name: str) -> ZooModel:
    """A model of the hand-written zoo (`lowerkit.zoo.ZOO`) or of this one."""
    try:
        return ZOO[name] if name in ZOO else ECOSYSTEM[name]
    except KeyError:
        raise LowerkitError(f"no zoo model {name!r}; known: {', '.join([*ZOO, *ECOSYSTEM])}") from None
