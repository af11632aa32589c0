"""``model.generate()`` of a ``transformers`` decoder under ``torch.compile(backend="lowerkit")``:
the same tokens as eager, every graph in lowerkit (no eager fallback), and a bounded number of
compiles (the decode step's graph is dynamic in the cache length and reused for every token,
not compiled once per token).

A tiny GPT-2 (and LLaMA, slow) with random weights: prefill of 8 tokens, then 20 decode steps
that each append one key/value to a ``DynamicCache`` (``torch.cat``) and attend over it (SDPA).
Needs ``transformers`` (``pip install "transformers>=5,<6"``); skipped without it.
"""

from __future__ import annotations

import pytest
import torch

transformers = pytest.importorskip("transformers")

from torch._dynamo.utils import counters  # noqa: E402

from lowerkit import backend  # noqa: E402

PROMPT, NEW_TOKENS = 8, 20


@pytest.fixture(autouse=True)
def fresh_dynamo():
    torch._dynamo.reset()
    counters.clear()
    backend.reset()
    yield
    torch._dynamo.reset()


def tiny_gpt2() -> torch.nn.Module:
    torch.manual_seed(0)
    # initializer_range 0.2: random weights that generate varied tokens (at GPT-2's 0.02 the
    # tiny model repeats one token, which would compare little)
    config = transformers.GPT2Config(
        n_layer=2, n_head=2, n_embd=64, vocab_size=256, n_positions=128, initializer_range=0.2,
        bos_token_id=None, eos_token_id=None, pad_token_id=0)
    return transformers.GPT2LMHeadModel(config).eval()


def tiny_llama() -> torch.nn.Module:
    torch.manual_seed(0)
    # 2 query heads share 1 key/value head: repeat_kv's expand is exercised too
    config = transformers.LlamaConfig(
        num_hidden_layers=2, num_attention_heads=2, num_key_value_heads=1, hidden_size=64,
        intermediate_size=128, vocab_size=256, max_position_embeddings=128,
        initializer_range=0.2, bos_token_id=None, eos_token_id=None, pad_token_id=0)
    return transformers.LlamaForCausalLM(config).eval()


def generate(model: torch.nn.Module, input_ids: torch.Tensor) -> torch.Tensor:
    with torch.no_grad():
        return model.generate(input_ids, max_new_tokens=NEW_TOKENS, do_sample=False)


def eager_fallbacks() -> list[str]:
    return [f"graph {r.index} ({r.kind}, {r.ops} ops): {r.reason}"
            for r in backend.graphs() if r.ran != "lowerkit"]


def check_generate(model: torch.nn.Module, max_graphs: int, **compile_kwargs) -> None:
    input_ids = torch.randint(0, model.config.vocab_size, (1, PROMPT),
                              generator=torch.Generator().manual_seed(1))
    expected = generate(model, input_ids)
    assert expected.shape == (1, PROMPT + NEW_TOKENS)
    assert len(set(expected[0, PROMPT:].tolist())) > 5, "a degenerate reference: pick another seed"

    model.forward = torch.compile(model.forward, backend="lowerkit", **compile_kwargs)
    got = generate(model, input_ids)

    assert got.tolist() == expected.tolist()
    # Dynamo gave every frame to the backend: no frame it gave up on (the recompile limit runs
    # the rest eagerly without any record in backend.graphs())
    assert counters["frames"]["ok"] == counters["frames"]["total"], dict(counters["frames"])
    assert not any("recompile" in k.lower() for k in counters["unimplemented"]), \
        list(counters["unimplemented"])
    # every graph ran in lowerkit: the intended behaviour
    assert eager_fallbacks() == [], "\n".join(eager_fallbacks())
    # ...at lowerkit's fast configuration: the dynamic attention needs no safer rung
    assert {r.artifact.compile_rung for r in backend.graphs()} == {"fast"}

    # Bounded compiles: prefill, the first decode step (static sizes) and the decode step with
    # a dynamic cache length at most; none per token
    compiled = backend.graphs()
    assert 1 <= len(compiled) <= max_graphs, [(r.index, r.kind) for r in compiled]
    assert counters["stats"]["unique_graphs"] <= max_graphs, dict(counters["stats"])
    assert any(any(not isinstance(d, int) for leaf in r.artifact.signature.tensor_inputs
                   for d in leaf.shape) for r in compiled), "no graph has a dynamic size"

    # A second generate() reuses every compiled graph
    assert generate(model, input_ids).tolist() == expected.tolist()
    assert len(backend.graphs()) == len(compiled)


@pytest.mark.slow  # the suite's 20 minutes: the dynamic=True run below covers generate() in CI
def test_gpt2_generate_matches_eager_with_every_graph_in_lowerkit():
    """Dynamo's default (automatic dynamic): three graphs, the third dynamic in the cache
    length and reused for tokens 3..20."""
    check_generate(tiny_gpt2(), max_graphs=3)


@pytest.mark.slow  # 80 s; test_backend.py runs graph breaks and dynamic sizes through the backend
def test_gpt2_generate_dynamic_true_matches_eager_with_every_graph_in_lowerkit():
    """``dynamic=True``: prefill and decode, each dynamic from the start (two graphs); Dynamo
    passes Python floats (``math.pi`` in GPT-2's gelu) as 0-d float64 tensor inputs."""
    check_generate(tiny_gpt2(), max_graphs=2, dynamic=True)


@pytest.mark.slow
def test_llama_generate_matches_eager_with_every_graph_in_lowerkit():
    check_generate(tiny_llama(), max_graphs=3)


@pytest.mark.slow
def test_llama_generate_dynamic_true_matches_eager_with_every_graph_in_lowerkit():
    check_generate(tiny_llama(), max_graphs=2, dynamic=True)
