"""Light Python op classes for IREE's MLIR build, so that reading a module stays cheap.

IREE's Python bindings give every op that Python touches (iterating a block, an operand's
owner) the class its dialect module registers, and import that module the first time an op of
the dialect is met. ``iree.compiler.dialects.linalg`` also builds its op-building DSL from the
named ops' definitions at import: 0.08 s of a process's first compile (with bytecode, on a Zen 4
host), spent in whichever of lowerkit's stages first walks a linalg op in IREE's build.
`install` puts this package first among the modules IREE's bindings look in; its ``linalg``
holds the same generated op classes without the DSL. Code that builds linalg ops imports
``iree.compiler.dialects.linalg`` itself, and gets all of it, as before. Any other dialect is
not found here and comes from IREE's own module.
"""

from __future__ import annotations

_installed = False


def install() -> None:
    """Look for dialects' op classes here before IREE's own modules (once per process)."""
    global _installed
    if _installed:
        return
    from iree.compiler._mlir_libs import _mlir

    search = list(_mlir.globals.dialect_search_modules)
    if __name__ not in search:
        _mlir.globals.dialect_search_modules = [__name__, *search]
    _installed = True
