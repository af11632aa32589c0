"""Recurrent sequence models: LSTM and GRU (``nn.LSTM``/``nn.GRU``), and a 1-D conv net."""

from __future__ import annotations

import torch
from torch import nn


class RecurrentClassifier(nn.Module):
    def __init__(self, cell: type, inp=32, hidden=64, layers=2, classes=10, bidirectional=False):
        super().__init__()
        self.rnn = cell(inp, hidden, layers, batch_first=True, bidirectional=bidirectional)
        self.head = nn.Linear(hidden * (2 if bidirectional else 1), classes)

    def forward(self, x):
        out, _ = self.rnn(x)
        return self.head(out[:, -1])


def lstm(batch: int = 1, seq: int = 16):
    """Two-layer LSTM over 16 steps, classifying the last state."""
    torch.manual_seed(0)
    return RecurrentClassifier(nn.LSTM).eval(), (torch.randn(batch, seq, 32),)


def gru(batch: int = 1, seq: int = 16):
    """Two-layer GRU over 16 steps."""
    torch.manual_seed(0)
    return RecurrentClassifier(nn.GRU).eval(), (torch.randn(batch, seq, 32),)


def lstm_bidirectional(batch: int = 1, seq: int = 16):
    """One-layer bidirectional LSTM."""
    torch.manual_seed(0)
    model = RecurrentClassifier(nn.LSTM, layers=1, bidirectional=True).eval()
    return model, (torch.randn(batch, seq, 32),)


def tcn(batch: int = 1, seq: int = 128):
    """Temporal conv net: dilated causal 1-D convolutions with residuals."""
    torch.manual_seed(0)

    class TCN(nn.Module):
        def __init__(self, ch=32, levels=4):
            super().__init__()
            self.inp = nn.Conv1d(8, ch, 1)
            self.convs = nn.ModuleList(nn.Conv1d(ch, ch, 3, dilation=2 ** i) for i in range(levels))

        def forward(self, x):
            x = self.inp(x)
            for conv in self.convs:
                pad = conv.dilation[0] * 2
                x = x + torch.relu(conv(nn.functional.pad(x, (pad, 0))))
            return x.mean(-1)

    return TCN().eval(), (torch.randn(batch, 8, seq),)
