"""Load ``FILE.py:FACTORY`` (or ``package.module:FACTORY``): a model and its example inputs."""

from __future__ import annotations

import importlib
import importlib.util
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import torch

from ..errors import LowerkitError


@dataclass
class ModelCase:
    """What a factory returns: the program, example args and kwargs, and options."""

    name: str
    fn: Callable
    args: tuple
    kwargs: dict = field(default_factory=dict)
    dynamic_shapes: Any = None


def load_factory(spec: str) -> Callable:
    path, sep, attr = spec.rpartition(":")
    if not sep or not attr:
        raise LowerkitError(f"expected FILE.py:FACTORY or module:FACTORY, got {spec!r}")
    if path.endswith(".py") or "/" in path:
        file = Path(path)
        if not file.exists():
            raise LowerkitError(f"no such file: {file}")
        dotted = _package_module(file)
        if dotted is not None:  # its relative imports then resolve, as in `python -m`
            module = importlib.import_module(dotted)
        else:
            name = f"_lowerkit_user_{file.stem}"
            mod_spec = importlib.util.spec_from_file_location(name, file)
            module = importlib.util.module_from_spec(mod_spec)
            sys.modules[name] = module
            mod_spec.loader.exec_module(module)
    else:
        module = importlib.import_module(path)
    try:
        return getattr(module, attr)
    except AttributeError:
        raise LowerkitError(f"{path} has no attribute {attr!r}") from None


def _package_module(file: Path) -> str | None:
    """The dotted name under which ``file`` is a module of an importable package
    (``python/lowerkit/zoo/real_shapes.py``: ``lowerkit.zoo.real_shapes``), or None for a file
    of its own. Loaded alone, a package's module cannot import its siblings (``from . import``:
    "attempted relative import with no known parent package")."""
    file = file.resolve()
    parts, folder = [file.stem], file.parent
    while (folder / "__init__.py").exists():  # up to the top package
        parts.insert(0, folder.name)
        folder = folder.parent
    if len(parts) < 2:
        return None
    try:
        spec = importlib.util.find_spec(".".join(parts))
    except ImportError:
        return None
    if spec is None or not spec.origin or Path(spec.origin).resolve() != file:
        return None  # another copy of the package is the one imported: load the file itself
    return ".".join(parts)


def load_case(spec: str) -> ModelCase:
    """Call the factory; it returns ``(model, args)``, ``(model, args, kwargs)`` or a ModelCase."""
    made = load_factory(spec)()
    name = spec.rpartition(":")[2]
    if isinstance(made, ModelCase):
        return made
    if isinstance(made, tuple) and len(made) in (2, 3):
        fn, args, *rest = made
        if isinstance(args, torch.Tensor):
            args = (args,)
        return ModelCase(name, fn, tuple(args), dict(rest[0]) if rest else {})
    raise LowerkitError(
        f"factory {spec} must return (model, args), (model, args, kwargs) or a ModelCase"
    )


def model_case(spec: str) -> ModelCase:
    """A zoo, real-shape or real model by name, or ``FILE.py:FACTORY``, as a `ModelCase`."""
    from lowerkit.zoo import ZOO, real_models
    from lowerkit.zoo.real_shapes import available

    real = {m.name: m for m in available()[0]}
    if spec in real_models.REAL_MODELS and spec not in ZOO and spec not in real:
        found, missing = real_models.available([spec])
        if missing:
            raise LowerkitError(f"{spec}: {missing[spec]}")
        real[spec] = found[0]
    if spec in ZOO or spec in real:
        made = (ZOO.get(spec) or real[spec]).make()
        if isinstance(made, ModelCase):
            return made
        fn, args, *rest = made
        return ModelCase(spec, fn, tuple(args), dict(rest[0]) if rest else {})
    if ":" not in spec:
        raise LowerkitError(f"no zoo, real-shape or real model named {spec!r} (`lowerkit zoo "
                            f"--list`, `lowerkit bench real`, `lowerkit bench real-models`), and "
                            f"not FILE.py:FACTORY")
    return load_case(spec)
