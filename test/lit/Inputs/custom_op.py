"""A model calling a user-defined PyTorch op, and the op's lowering registered with lowerkit."""

import torch

import lowerkit


@torch.library.custom_op("lit_demo::squared_relu", mutates_args=())
def squared_relu(x: torch.Tensor) -> torch.Tensor:
    return torch.relu(x) * torch.relu(x)


@squared_relu.register_fake
def _(x):
    return torch.empty_like(x)


def register_lowering():
    if "lit_demo::squared_relu" in lowerkit.registry.custom_ops:
        return

    @lowerkit.custom_op_lowering("lit_demo::squared_relu")
    def _(b, x):
        r = b.op("torch.aten.relu", x)
        return b.op("torch.aten.mul.Tensor", r, r)


class Model(torch.nn.Module):
    def forward(self, x):
        return squared_relu(x + 1.0) * 2.0


def model():
    register_lowering()
    return Model(), (torch.linspace(-2, 2, 12).reshape(3, 4),)


def model_without_lowering():
    return Model(), (torch.linspace(-2, 2, 12).reshape(3, 4),)
