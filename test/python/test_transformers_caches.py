"""transformers' caches through `lowerkit.compile`, as outputs and as inputs: a decoder's
prefill returns its ``DynamicCache``, and one decode step compiled with a dynamic cache length
takes each step's cache back for 20 tokens, as eager does (issue 20, item 2)."""

from __future__ import annotations

import pytest
import torch
from torch.export import Dim

import lowerkit
from lowerkit.runtime.numerics import compare

transformers = pytest.importorskip("transformers")
from transformers.cache_utils import DynamicCache, EncoderDecoderCache  # noqa: E402

STEPS = 20


def _llama(layers=1):
    from transformers import LlamaConfig, LlamaForCausalLM

    cfg = LlamaConfig(vocab_size=128, hidden_size=64, intermediate_size=128,
                      num_hidden_layers=layers, num_attention_heads=4, num_key_value_heads=2,
                      max_position_embeddings=128)
    torch.manual_seed(0)
    return LlamaForCausalLM(cfg).eval(), cfg


def _cache_tensors(cache):
    return [t for layer in cache.layers for t in (layer.keys, layer.values)]


def _decode_matches_eager(model, prefill, step, first_inputs, step_kwargs):
    """Greedy decoding, eager and compiled side by side: same tokens, and logits and cache
    within float32's tolerance at every step."""
    with torch.no_grad():
        ref, got = model(**first_inputs), prefill(**first_inputs)
        tokens_ref, tokens_got = [], []
        for i in range(STEPS):
            assert compare(got.logits, ref.logits).ok, f"step {i}: {compare(got.logits, ref.logits).message}"
            t_ref, t_got = ref.logits[:, -1:].argmax(-1), got.logits[:, -1:].argmax(-1)
            tokens_ref.append(t_ref.item())
            tokens_got.append(t_got.item())
            ref = model(**step_kwargs(t_ref, ref.past_key_values))
            got = step(**step_kwargs(t_got, got.past_key_values))
    assert tokens_got == tokens_ref
    assert len(set(tokens_ref)) > 1, "a degenerate model would not tell a stale cache apart"
    return ref, got


def test_a_decoder_prefill_returns_its_dynamic_cache():
    model, cfg = _llama()
    ids = torch.randint(0, cfg.vocab_size, (1, 8))
    art = lowerkit.compile(model, (ids,), {"use_cache": True}, cache=False)
    with torch.no_grad():
        expected, got = model(ids, use_cache=True), art(ids, use_cache=True)
    assert type(got) is type(expected) and isinstance(got.past_key_values, DynamicCache)
    assert got.past_key_values.get_seq_length() == 8
    result = compare([got.logits, *_cache_tensors(got.past_key_values)],
                     [expected.logits, *_cache_tensors(expected.past_key_values)])
    assert result.ok, result.message


@pytest.mark.slow  # 50 s; the prefill test feeds back one cache
def test_one_compiled_decode_step_takes_each_steps_cache_for_20_tokens():
    model, cfg = _llama()
    ids = torch.randint(0, cfg.vocab_size, (1, 8))
    prefill = lowerkit.compile(model, (), {"input_ids": ids, "use_cache": True}, cache=False)
    with torch.no_grad():
        warm = model(ids, use_cache=True)
    # the cache's length grows each step: one dynamic dim per key and value tensor
    length = [[{2: Dim.AUTO}] * cfg.num_hidden_layers] * 2
    example = {"input_ids": warm.logits[:, -1:].argmax(-1), "cache": warm.past_key_values,
               "use_cache": True}
    step = lowerkit.compile(model, (), example, cache=False,
                            dynamic_shapes={"input_ids": None, "cache": length, "use_cache": None})
    ref, got = _decode_matches_eager(
        model, prefill, step, {"input_ids": ids, "use_cache": True},
        lambda token, cache: {"input_ids": token, "cache": cache, "use_cache": True})
    assert got.past_key_values.get_seq_length() == 8 + STEPS
    result = compare(_cache_tensors(got.past_key_values), _cache_tensors(ref.past_key_values))
    assert result.ok, result.message


@pytest.mark.slow
def test_a_seq2seq_decoder_step_takes_its_encoder_decoder_cache():
    from transformers import BartConfig, BartForConditionalGeneration

    cfg = BartConfig(vocab_size=96, d_model=32, encoder_layers=1, decoder_layers=1,
                     encoder_attention_heads=2, decoder_attention_heads=2, encoder_ffn_dim=64,
                     decoder_ffn_dim=64, max_position_embeddings=64)
    torch.manual_seed(0)
    model = BartForConditionalGeneration(cfg).eval()
    src, start = torch.randint(3, 96, (1, 7)), torch.tensor([[2, 5]])  # length 1 would specialise
    first = {"input_ids": src, "decoder_input_ids": start, "use_cache": True}
    prefill = lowerkit.compile(model, (), first, cache=False)
    with torch.no_grad():
        warm = model(**first)
    assert isinstance(prefill(**first).past_key_values, EncoderDecoderCache)
    encoder = (warm.encoder_last_hidden_state,)
    grows = [[{2: Dim.AUTO}]] * 2   # self-attention keys and values, one layer
    fixed = [[None]] * 2            # cross-attention: the encoder's length
    example = {"encoder_outputs": encoder, "decoder_input_ids": warm.logits[:, -1:].argmax(-1),
               "cache": warm.past_key_values, "use_cache": True}
    step = lowerkit.compile(model, (), example, cache=False, dynamic_shapes={
        "encoder_outputs": None, "decoder_input_ids": None, "cache": [grows, fixed],
        "use_cache": None})
    _decode_matches_eager(model, prefill, step, first, lambda token, cache: {
        "encoder_outputs": encoder, "decoder_input_ids": token, "cache": cache,
        "use_cache": True})


def test_dynamic_shapes_of_a_cache_must_match_its_children():
    model, cfg = _llama()
    with torch.no_grad():
        warm = model(torch.randint(0, cfg.vocab_size, (1, 4)), use_cache=True)
    with pytest.raises(lowerkit.LowerkitError, match="DynamicCache must be a list with one entry per child"):
        lowerkit.compile(model, (), {"input_ids": torch.tensor([[1]]), "cache": warm.past_key_values},
                         dynamic_shapes={"input_ids": None, "cache": {2: Dim.AUTO}}, cache=False)
