"""Containers from other libraries as pytrees, so they cross a compiled call like tuples do.

A compiled program takes and returns pytrees of tensors (`CallSignature`). ``transformers``'
decoders return a ``DynamicCache`` (``EncoderDecoderCache`` for seq2seq) inside their
``ModelOutput``, and take it back for the next token; neither is a pytree node until someone
registers it. transformers ships a registration for ``DynamicCache`` (its ExecuTorch export
path) and none lowerkit can use for ``EncoderDecoderCache``, so that one is registered here:
its two ``DynamicCache`` s are its children. Nothing is imported: a library the user has not
imported has no containers to register.
"""

from __future__ import annotations

import sys
import threading

import torch.utils._pytree as pytree

_LOCK = threading.Lock()
_DONE: set[str] = set()


def register_known() -> None:
    """Register the containers of every supported library the process has imported."""
    if "transformers" in sys.modules and "transformers" not in _DONE:
        with _LOCK:
            if "transformers" not in _DONE:
                _register_transformers()
                _DONE.add("transformers")


def _register_transformers() -> None:
    try:
        from transformers.cache_utils import EncoderDecoderCache
        from transformers.integrations.executorch import register_dynamic_cache_export_support
    except ImportError:  # a transformers without these caches has nothing to register
        return
    register_dynamic_cache_export_support()
    if EncoderDecoderCache not in pytree.SUPPORTED_NODES:
        pytree.register_pytree_node(
            EncoderDecoderCache,
            lambda c: ([c.self_attention_cache, c.cross_attention_cache], None),
            lambda children, _: EncoderDecoderCache(*children),
            serialized_type_name=f"{EncoderDecoderCache.__module__}.EncoderDecoderCache",
            flatten_with_keys_fn=lambda c: (
                [(pytree.GetAttrKey("self_attention_cache"), c.self_attention_cache),
                 (pytree.GetAttrKey("cross_attention_cache"), c.cross_attention_cache)], None),
        )
