"""linalg's generated op classes, without ``iree.compiler.dialects.linalg``'s op-building DSL
(see the package's docstring)."""

from iree.compiler.dialects._linalg_ops_gen import *  # noqa: F401,F403
from iree.compiler.dialects._linalg_ops_gen import _Dialect  # noqa: F401
# the C++ helper that gives a named op its body (IREE's linalg module re-exports it too)
from iree.compiler._mlir_libs._mlirDialectsLinalg import fill_builtin_region  # noqa: F401
