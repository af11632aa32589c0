"""Stage factories for the passes in `lowerkit.passes`, as the ``passes`` registry lists them.

Those modules hold plain ``run(op, pass_)`` functions; here each becomes a named
`PythonPassStage`, so ``lowerkit-opt --pass=NAME`` and pipelines build the same stage.
"""

from __future__ import annotations

from .stage import PythonPassStage


def rewrite_bool_mask_index_put() -> PythonPassStage:
    from .passes import bool_mask_index_put as p

    return PythonPassStage(p.NAME, p.run, description=p.__doc__.splitlines()[0])
