"""``verify=True``: run eager PyTorch beside every call of a compiled program and raise on a mismatch.

For users meeting a new model: ``lowerkit.compile(model, args, verify=True)`` returns an artifact
whose every call also runs the original ``model`` eagerly (on copies of the inputs, so that an
in-place op of the model cannot change what the compiled program saw) and raises
`VerificationError` naming the first differing output and its error. Each output is judged
relative to its scale by its dtype's default tolerance (`lowerkit.runtime.numerics`) unless the user
names ``tol`` or ``rtol``/``atol``. It costs an eager run a call; leave it off in production.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Callable

import torch
import torch.utils._pytree as pytree

from ..errors import LowerkitError, VerificationError
from .artifact import Artifact
from .executable import DeviceTensor
from .numerics import Tolerance, compare


def _host(v: Any) -> Any:
    if isinstance(v, DeviceTensor):
        return v.cpu()
    if isinstance(v, torch.Tensor):
        return v.detach().cpu().clone()
    return v


class VerifiedArtifact(Artifact):
    """An `Artifact` that checks every call against the original program run eagerly."""

    def __init__(self, artifact: Artifact, reference: Callable, rtol: float | None = None,
                 atol: float | None = None, tol: Tolerance | Mapping[str, Tolerance] | None = None):
        self.__dict__.update(artifact.__dict__)
        self.reference = reference
        self.rtol, self.atol, self.tol = rtol, atol, tol
        self.calls_verified = 0

    def __call__(self, *args: Any, keep_on_device: bool = False, **kwargs: Any) -> Any:
        ref_args, ref_kwargs = pytree.tree_map(_host, (tuple(args), dict(kwargs)))
        got = super().__call__(*args, keep_on_device=keep_on_device, **kwargs)
        with torch.no_grad():
            expected = self.reference(*ref_args, **ref_kwargs)
        result = compare(pytree.tree_map(_host, got), expected, tol=self.tol, rtol=self.rtol,
                         atol=self.atol)
        if not result.ok:
            detail = result.message.removeprefix("mismatch against eager: ")
            first = detail.split(":", 1)[0] if detail.startswith("output") else None
            raise VerificationError(detail, path=first, max_abs_error=result.max_abs_error,
                                    target=self.target.name, device=self.driver)
        self.calls_verified += 1
        return got

    def to(self, device: str) -> "VerifiedArtifact":
        return VerifiedArtifact(super().to(device), self.reference, self.rtol, self.atol, self.tol)


def verified(artifact: Artifact, reference: Callable, options: Any = True) -> VerifiedArtifact:
    """Wrap ``artifact``; ``options`` is ``True`` or a dict with ``tol`` (a `Tolerance`, or one
    per output path) or the elementwise ``rtol``/``atol``."""
    opts = options if isinstance(options, dict) else {}
    unknown = set(opts) - {"tol", "rtol", "atol"}
    if unknown:
        raise TypeError(f"verify options are tol, or rtol and atol; got {sorted(unknown)}")
    if "tol" in opts and ({"rtol", "atol"} & set(opts)):
        raise TypeError("verify takes tol, or rtol and atol, not both")
    if artifact.signature.seeded:
        raise LowerkitError(
            "verify cannot check a program that draws random numbers (torch.rand, randn, "
            "bernoulli, dropout in training, ...): its samples come from lowerkit's own "
            "generator and differ from eager's by design (README: random ops). Compile it "
            "without verify, or check it in eval mode")
    return VerifiedArtifact(artifact, reference, opts.get("rtol"), opts.get("atol"), opts.get("tol"))
