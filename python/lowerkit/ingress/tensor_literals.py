"""Fast import of weight tensors as ``torch.vtensor.literal`` constants.

torch-mlir's FX importer turns every parameter into a literal through ``tensor.tolist()`` and
back into a numpy array: one Python object per weight. For ResNet-18 that was ~8 s of the
~11 s import. Real (non-fake) CPU tensors can hand their bytes over directly instead, which
makes the same ``DenseResourceElementsAttr`` in milliseconds.
"""

from __future__ import annotations

from typing import Any

import torch
from torch._subclasses.fake_tensor import FakeTensor
from torch_mlir.extras.fx_importer import (
    TORCH_DTYPE_TO_NPY_TYPE,
    FxImporterHooks,
    create_mlir_tensor_type,
)
from torch_mlir.ir import DenseResourceElementsAttr, Operation


class TensorLiteralHooks(FxImporterHooks):
    """Resolves real multi-element tensors to literals without a Python-list round trip."""

    def resolve_literal(self, gni: Any, literal: Any, info: Any):
        if (not isinstance(literal, torch.Tensor) or isinstance(literal, FakeTensor)
                or literal.numel() <= 1 or literal.device.type != "cpu"
                or literal.dtype not in TORCH_DTYPE_TO_NPY_TYPE or literal.dtype == torch.bfloat16
                or literal.is_sparse or literal.is_quantized):
            return None  # the importer's own path (splats, fakes, odd dtypes)
        cc = gni._cc
        mapping = cc._py_attr_tracker.track(literal)
        if mapping.is_empty:
            # A private copy: the attribute must not change if the model's weights do later.
            array = literal.detach().contiguous().numpy().copy()
            shape = "_".join(str(d) for d in literal.shape)
            mapping.value = DenseResourceElementsAttr.get_from_buffer(
                array, f"torch_tensor_{shape}_{literal.dtype}", create_mlir_tensor_type(literal))
        return Operation.create(
            name="torch.vtensor.literal",
            results=[cc.tensor_to_vtensor_type(literal)],
            attributes={"value": mapping.value},
        ).result
