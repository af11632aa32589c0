"""The lowering configuration IREE chose for each dispatch, read and rewritten.

`lowerkit tune` searches tile sizes per dispatch. IREE 3.13's tuning specs cannot reach a
data-tiled (``mmt4d``) dispatch in a whole compile: the spec runs before the encodings are
materialised (``../shared/TUNING-FACTS.md``). Its configured module can: iree-compile stops
after ``executable-configurations``, lowerkit rewrites the root op's ``lowering_config`` of
each dispatch it has a record for, and iree-compile resumes from there. The same rewrite
applies to a dumped dispatch benchmark, which is how candidates are timed.

A dispatch is known by its `fingerprint`: its ops, types and attributes, without names,
locations or lowering configs, so it is the same dispatch in another model or another run.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from typing import Iterable

# attributes that name or place an op, or that IREE sets while configuring: left out of a
# fingerprint so it matches the same computation wherever it appears
_UNNAMED = {"lowering_config", "compilation_info", "root_op", "sym_name", "translation_info"}
_LEVELS = re.compile(r"(\w+) = \[([^\]]*)\]")
_MEMREF = re.compile(r"memref<([^,>]*)")
_PIPELINE = re.compile(r"#iree_cpu\.pipeline<(\w+)>")


class ConfigError(ValueError):
    """A lowering config lowerkit cannot read or write."""


@dataclass(frozen=True)
class LoweringConfig:
    """An ``#iree_cpu.lowering_config``: its tiling levels by name, in order."""

    levels: tuple[tuple[str, tuple[int, ...]], ...]

    @classmethod
    def parse(cls, text: str) -> "LoweringConfig":
        if not text.startswith("#iree_cpu.lowering_config<"):
            raise ConfigError(f"not an #iree_cpu.lowering_config: {text[:80]}")
        levels = []
        for name, values in _LEVELS.findall(text):
            try:
                levels.append((name, tuple(int(v) for v in values.split(",") if v.strip())))
            except ValueError:  # scalable sizes ([4]) are not searched
                raise ConfigError(f"level {name} is not a list of integers: [{values}]") from None
        if not levels:
            raise ConfigError(f"no tiling levels in {text}")
        return cls(tuple(levels))

    def level(self, name: str) -> tuple[int, ...] | None:
        return dict(self.levels).get(name)

    def with_level(self, name: str, sizes: Iterable[int]) -> "LoweringConfig":
        sizes = tuple(sizes)
        return LoweringConfig(tuple((n, sizes if n == name else s) for n, s in self.levels))

    @property
    def text(self) -> str:
        body = ", ".join(f"{n} = [{', '.join(map(str, s))}]" for n, s in self.levels)
        return f"#iree_cpu.lowering_config<{body}>"

    def __str__(self) -> str:
        return self.text


@dataclass(frozen=True)
class Dispatch:
    """One dispatch function as configured: where its root op is, what IREE chose for it and
    the loop bounds of the root op's parallel dims (None where unknown)."""

    function: str           # the export's name, as profiles and benchmarks name it
    fingerprint: str
    pipeline: str           # the CPU pipeline IREE chose (DoubleTilingExpert, Mmt4dTilingExpert...)
    root_op: str
    root_index: int         # which op of the function, in walk order
    config: LoweringConfig
    bounds: tuple[int | None, ...]
    consumers_configured: bool  # other ops carry vector tiles that follow the root's

    @property
    def tunable(self) -> bool:
        return self.config.level("distribution") is not None


def _type_text(t) -> str:
    """A type without its buffer's layout and binding: the dispatch as a configured module
    and as its dumped benchmark bind the same tensors through different interfaces."""
    text = str(t)
    m = _MEMREF.match(text)
    return f"memref<{m.group(1)}>" if m else text


def _op_text(op) -> str | None:
    """What of ``op`` a fingerprint hashes; None for the interface's plumbing (bindings and
    their byte offsets), which differs between the module and the dumped benchmark."""
    if op.name.startswith("hal.") or (op.name == "arith.constant"
                                      and str(op.results[0].type) == "index"):
        return None
    attrs = sorted((n, str(op.attributes[n])) for n in op.attributes if n not in _UNNAMED)
    return (f"{op.name}({','.join(_type_text(v.type) for v in op.operands)})->"
            f"({','.join(_type_text(r.type) for r in op.results)}){attrs}")


def _bounds(op, n: int) -> tuple[int | None, ...]:
    """The loop bounds of ``op``'s first ``n`` loops, from its result's shape: ``mmt4d``'s outer
    dims, an indexing map's output dims, or a named op whose loops start with its result's."""
    from iree.compiler import ir

    try:
        shaped = ir.ShapedType(op.results[0].type)
    except (ValueError, IndexError):
        return (None,) * n
    shape = [None if shaped.is_dynamic_dim(i) else d for i, d in enumerate(shaped.shape)]
    bounds: list[int | None] = [None] * n
    if op.name == "linalg.mmt4d":
        for i in range(min(2, n)):
            bounds[i] = shape[i]
        return tuple(bounds)
    if "indexing_maps" in op.attributes:
        maps = ir.ArrayAttr(op.attributes["indexing_maps"])
        out = str(maps[len(maps) - 1])
        results = out.split("->")[-1].strip(" ()>").split(",")
        for pos, expr in enumerate(results):
            m = re.fullmatch(r"\s*d(\d+)\s*", expr)
            if m and int(m.group(1)) < n and pos < len(shape):
                bounds[int(m.group(1))] = shape[pos]
        return tuple(bounds)
    for i in range(min(n, len(shape))):
        bounds[i] = shape[i]
    return tuple(bounds)


def _functions(module) -> list:
    """The configured dispatch functions (``func.func`` with a ``translation_info``)."""
    from iree.compiler import ir

    found = []

    def visit(op):
        if op.name == "func.func" and "translation_info" in op.attributes:
            found.append(op)
        return ir.WalkResult.ADVANCE

    module.operation.walk(visit)
    return found


def _ops(function) -> list:
    from iree.compiler import ir

    ops = []

    def visit(op):
        ops.append(op)
        return ir.WalkResult.ADVANCE

    function.walk(visit, ir.WalkOrder.PRE_ORDER)
    return ops[1:]  # the first is the function itself


def _dispatch(function) -> Dispatch | None:
    ops = _ops(function)
    translation = str(function.attributes["translation_info"])
    digest = hashlib.sha256(translation.encode())
    root = None
    configured = 0
    for i, op in enumerate(ops):
        text = _op_text(op)
        if text is not None:
            digest.update(text.encode())
        if "lowering_config" in op.attributes:
            configured += 1
            text = str(op.attributes["lowering_config"])
            if root is None and "distribution" in text:
                root = (i, op, text)
    if root is None:
        return None
    index, op, text = root
    try:
        config = LoweringConfig.parse(text)
    except ConfigError:
        return None
    pipeline = _PIPELINE.search(translation)
    name = str(function.attributes["sym_name"]).strip('"')
    return Dispatch(name, digest.hexdigest()[:20], pipeline.group(1) if pipeline else translation,
                    op.name, index, config, _bounds(op, len(config.level("distribution"))),
                    configured > 1)


def read(text: "str | bytes") -> list[Dispatch]:
    """The dispatches of a configured module (or of one dumped dispatch benchmark) that have a
    root op with a CPU lowering config."""
    from iree.compiler import ir

    with ir.Context():
        module = ir.Module.parse(text)
        return [d for d in map(_dispatch, _functions(module)) if d is not None]


def rewrite(text: "str | bytes", configs: dict[str, str]) -> tuple[bytes, list[str]]:
    """``text`` (as MLIR text, encoded) with each dispatch whose fingerprint is in ``configs`` given that lowering
    config on its root op; and the fingerprints rewritten."""
    from iree.compiler import ir

    done = []
    with ir.Context():
        module = ir.Module.parse(text)
        for function in _functions(module):
            dispatch = _dispatch(function)
            if dispatch is None or dispatch.fingerprint not in configs:
                continue
            op = _ops(function)[dispatch.root_index]
            try:
                op.attributes["lowering_config"] = ir.Attribute.parse(
                    configs[dispatch.fingerprint])
            except Exception as e:  # noqa: BLE001 -- MLIRError: a record lowerkit cannot use
                raise ConfigError(f"{dispatch.function}: {configs[dispatch.fingerprint]} does "
                                  f"not parse: {e}") from None
            done.append(dispatch.fingerprint)
        # as text: IREE 3.13's bindings write bytecode without the module's dense_resource
        # blobs ("resource data missing in input IR"), a model's small constants among them
        return str(module).encode(), done
