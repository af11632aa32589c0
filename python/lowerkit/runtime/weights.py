"""The weights a compiled program reads at load: IREE parameters bound to tensors or a file.

A program compiled with its weights as parameters (`lowerkit.iree.parameters`) holds code
only; `WeightBinding` supplies each ``ParameterSlot`` when the module loads, either from
tensors in memory (the model's own, wrapped without a copy, or what torch derives from them
where the slot says how: `lowerkit.derived_weights`) or from an ``.irpa`` archive (mapped, not
read). In-place changes to bound tensors (an optimizer step, ``load_state_dict``)
are seen: `stale` tells the artifact to load again, so that what IREE hoisted out of the
weights at load (transposed, packed, folded) is computed from the new values.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Iterable, Mapping

import numpy as np
import torch

from ..errors import InputError, LowerkitError
from ..iree.parameters import SCOPE, ParameterSlot

# MLIR element type -> the torch dtype whose bytes IREE reads for it
_ELEMENTS = {
    "f64": torch.float64, "f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16,
    "i64": torch.int64, "i32": torch.int32, "i16": torch.int16, "i8": torch.int8,
    "ui8": torch.uint8, "i1": torch.bool, "complex<f32>": torch.complex64,
    "complex<f64>": torch.complex128,
}


class TensorVersions:
    """The in-place versions (``Tensor._version``) of some tensors at a mark, to tell whether
    any changed since: an optimizer step or ``load_state_dict`` the compiled program must see."""

    def __init__(self, tensors: Iterable[torch.Tensor]):
        self.tensors = list(tensors)
        self.mark()

    def mark(self) -> None:
        self._seen = tuple(t._version for t in self.tensors)

    def changed(self) -> bool:
        return tuple(t._version for t in self.tensors) != self._seen


def slot_dtype(slot: ParameterSlot, float64: bool = True) -> torch.dtype:
    """The dtype the slot's bytes hold. A target without float64 has IREE demote f64 to f32,
    globals included."""
    dtype = _ELEMENTS.get(slot.element)
    if dtype is None:
        raise LowerkitError(f"weight '{slot.key}': element type {slot.element} has no torch dtype")
    if dtype is torch.float64 and not float64:
        return torch.float32
    return dtype


def _host_array(tensor: torch.Tensor, dtype: torch.dtype) -> np.ndarray:
    """The tensor's memory as numpy (no copy when it is contiguous and of ``dtype``). Signless
    integers of one width share their bytes (IREE's i8 holds torch's int8 or uint8)."""
    t = tensor.detach()
    if t.dtype is not dtype:
        same_bits = (t.dtype.itemsize == dtype.itemsize and not t.dtype.is_floating_point
                     and not dtype.is_floating_point and t.dtype is not torch.bool
                     and dtype is not torch.bool)
        t = t.view(dtype) if same_bits else t.to(dtype)
    if not t.is_contiguous():
        t = t.contiguous()
    if t.dtype is torch.bfloat16:
        return t.view(torch.int16).numpy()
    return t.numpy()


class WeightBinding:
    """Tensors (or an archive) for every `ParameterSlot` of one compiled program."""

    def __init__(self, slots: list[ParameterSlot], tensors: Mapping[str, torch.Tensor] | None = None,
                 archive: str | os.PathLike | None = None, float64: bool = True):
        self.slots = list(slots)
        self.archive = Path(archive) if archive is not None else None
        self.float64 = float64
        self.tensors: dict[str, torch.Tensor] = {}
        if (tensors is None) == (archive is None):
            raise ValueError("bind weights from tensors or from an archive, not both or neither")
        if tensors is not None:
            missing = sorted({k for s in self.slots for k in s.state_keys if k not in tensors})
            if missing:
                raise InputError(
                    f"weights missing for {len(missing)} parameter(s) of the compiled program: "
                    f"{', '.join(missing[:8])}{' …' if len(missing) > 8 else ''}")
            for s in self.slots:
                for key, shape in zip(s.state_keys, s.state_shapes):
                    t = tensors[key]
                    if not isinstance(t, torch.Tensor):
                        raise InputError(f"weight '{key}' is a {type(t).__name__}, not a tensor")
                    if tuple(t.shape) != shape:
                        raise InputError(
                            f"weight '{key}' has shape {tuple(t.shape)}; the compiled program "
                            f"reads {shape} (another architecture? compile it for this one)")
                    if t.device.type != "cpu":
                        t = t.detach().cpu()
                    self.tensors[key] = t
        self._versions = TensorVersions(self.tensors.values())

    def _value(self, slot: ParameterSlot) -> torch.Tensor:
        """What ``slot`` holds: the bound tensor, or the value torch derives from the bound
        tensors (made now, from their current values)."""
        if slot.derivation is None:
            return self.tensors[slot.key]
        value = slot.derivation.evaluate(self.tensors)
        if tuple(value.shape) != slot.shape:
            raise LowerkitError(f"weight '{slot.key}': its recipe made shape {tuple(value.shape)}, "
                                f"the compiled program reads {slot.shape}")
        return value

    def stale(self) -> bool:
        """True once a bound tensor changed in place since the module loaded."""
        return bool(self.tensors) and self._versions.changed()

    def module(self, rt: Any, instance: Any) -> tuple[Any, list[np.ndarray]]:
        """IREE's parameter module serving every slot, for one VM context, and the arrays it
        reads in place: the caller keeps them as long as that context. Tensors are wrapped
        without a copy where their dtype already matches; derived values are made now."""
        index = rt.ParameterIndex()
        kept: list[np.ndarray] = []
        self._versions.mark()
        if self.archive is not None:
            try:
                index.load(str(self.archive))
            except Exception as e:
                raise LowerkitError(f"could not read the weights archive {self.archive}: {e}") from e
            found = {key for key, _ in index.items()}
            missing = [s.key for s in self.slots if s.key not in found]
            if missing:
                raise LowerkitError(
                    f"the weights archive {self.archive} lacks {len(missing)} parameter(s) "
                    f"of the program: {', '.join(missing[:8])}")
        else:
            for s in self.slots:
                array = _host_array(self._value(s), slot_dtype(s, self.float64))
                kept.append(array)  # IREE reads it in place
                index.add_buffer(s.key, array)
        return rt.create_io_parameters_module(instance, index.create_provider(scope=SCOPE)), kept

    def save_archive(self, path: str | os.PathLike) -> Path:
        """Write every slot's value into an ``.irpa`` archive at ``path``."""
        import iree.runtime as rt

        if self.archive is not None:
            import shutil

            if Path(path).resolve() != self.archive.resolve():
                shutil.copyfile(self.archive, path)
            return Path(path)
        entries = {s.key: _host_array(self._value(s), slot_dtype(s, self.float64))
                   for s in self.slots}
        rt.save_archive_file(entries, path)
        return Path(path)


def archive_path(artifact_path: str | os.PathLike) -> Path:
    """Where `Artifact.save` writes the weights of ``artifact_path``: beside it, ``.irpa``."""
    path = Path(artifact_path)
    return path.with_name(path.name + ".irpa") if path.suffix in ("", ".irpa") \
        else path.with_suffix(".irpa")


def state_of(source: Any) -> Mapping[str, torch.Tensor]:
    """Named tensors from an ``nn.Module`` (its parameters and buffers) or a mapping."""
    if isinstance(source, torch.nn.Module):
        # every name of a tied weight (an LM head sharing the embedding's) counts
        named: dict[str, torch.Tensor] = dict(source.named_buffers(remove_duplicate=False))
        named.update(source.named_parameters(remove_duplicate=False))
        return named
    if isinstance(source, Mapping):
        return source
    raise TypeError(f"weights come from an nn.Module, a state dict or an .irpa path, "
                    f"not {type(source).__name__}")


def slots_json(slots: Iterable[ParameterSlot]) -> list[dict]:
    return [s.to_json() for s in slots]
