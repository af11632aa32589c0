"""Where lowerkit keeps what it builds once and reuses: the compile cache's entries
(`lowerkit.cache`) and its CPU kernels' objects (`lowerkit.iree.cpu_kernels`). A module of its
own, importing nothing of lowerkit's, so that both can ask without importing each other."""

from __future__ import annotations

import os
from pathlib import Path

ENV = "LOWERKIT_CACHE_DIR"
_OFF = {"0", "off", "false", "no", "none"}


def default_directory() -> Path | None:
    """``$LOWERKIT_CACHE_DIR``, else ``$XDG_CACHE_HOME/lowerkit`` or ``~/.cache/lowerkit``;
    None when ``LOWERKIT_CACHE_DIR`` turns the cache off."""
    env = os.environ.get(ENV)
    if env is not None and env.strip().lower() in _OFF:
        return None
    if env:
        return Path(env)
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "lowerkit"
