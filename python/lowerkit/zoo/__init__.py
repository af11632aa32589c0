"""Models defined in the repo with random weights (nothing downloaded), for checks and benchmarks.

Each factory returns ``(model, args)`` and runs through ``lowerkit run MODULE.py:FACTORY``.
`ZOO` names them all, with tags: ``slow`` ones are left out of the default checks and bench.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Callable

__all__ = ["ZooModel", "ZOO", "models", "get"]


@dataclass(frozen=True)
class ZooModel:
    """A zoo entry: where its factory lives, its tags and the tolerance its check uses."""

    name: str
    factory_path: str            # "module:function" under lowerkit.zoo
    group: str                   # vision, language, sequence, ops
    tags: frozenset[str] = frozenset()
    atol: float = 1e-4
    rtol: float = 1e-4

    @property
    def factory(self) -> Callable:
        module, _, fn = self.factory_path.partition(":")
        return getattr(importlib.import_module(f"{__name__}.{module}"), fn)

    @property
    def slow(self) -> bool:
        return "slow" in self.tags

    def make(self):
        """``(model, args, kwargs)``; the model is in eval mode."""
        made = self.factory()
        model, args, *rest = made
        return model, tuple(args) if isinstance(args, (tuple, list)) else (args,), (rest[0] if rest else {})


def _m(name: str, group: str, *tags: str, atol: float = 1e-4, rtol: float = 1e-4,
       fn: str | None = None) -> ZooModel:
    module = {"vision": "vision", "language": "language", "sequence": "sequence", "ops": "ops"}[group]
    return ZooModel(name, f"{module}:{fn or name}", group, frozenset(tags), atol, rtol)


_ENTRIES = [
    # vision
    _m("resnet18", "vision", atol=1e-3),
    _m("resnet50", "vision", "slow", atol=1e-3),
    _m("resnet_small", "vision", atol=1e-3),
    _m("mobilenet_v2", "vision", "slow", atol=1e-3),
    _m("mobilenet_v2_small", "vision", atol=1e-3),
    _m("vit_tiny", "vision", atol=1e-3),
    _m("unet_small", "vision", atol=1e-3),
    _m("simple_cnn", "vision"),
    # language
    _m("bert_tiny", "language", atol=1e-3),
    _m("bert_small", "language", "slow", atol=1e-3),
    _m("gpt2_tiny", "language", atol=1e-3),
    _m("gpt2_small", "language", "slow", atol=1e-3, rtol=1e-3),
    _m("llama_tiny_prefill", "language", atol=1e-3),
    _m("llama_tiny_decode", "language", atol=1e-3),
    _m("llama_small_decode", "language", "slow", atol=1e-3),
    # sequence
    _m("lstm", "sequence"),
    _m("gru", "sequence"),
    _m("lstm_bidirectional", "sequence"),
    _m("tcn", "sequence", atol=1e-3),
    # unusual ops
    _m("embedding_bag", "ops"),
    _m("gather_scatter", "ops"),
    _m("topk_sort", "ops"),
    _m("cumsum", "ops", atol=1e-3),
    _m("interpolate", "ops"),
    _m("einsum", "ops", atol=1e-3),
    _m("views_inplace", "ops"),
    _m("boolean_masks", "ops"),
    _m("index_ops", "ops"),
    _m("normalisations", "ops", atol=1e-3),
    _m("mlp", "ops"),
    _m("nonpersistent_buffer", "ops"),
    _m("gemm", "ops", "slow", "gemm", atol=1e-2),
]

ZOO: dict[str, ZooModel] = {m.name: m for m in _ENTRIES}


def models(include_slow: bool = False, names: list[str] | None = None) -> list[ZooModel]:
    """Zoo entries in order: the given names, or all (slow ones only when asked)."""
    if names:
        return [get(n) for n in names]
    return [m for m in _ENTRIES if include_slow or not m.slow]


def get(name: str) -> ZooModel:
    try:
        return ZOO[name]
    except KeyError:
        from ..errors import LowerkitError

        raise LowerkitError(f"no zoo model {name!r}; known: {', '.join(ZOO)}") from None
