"""Paired timings decided robustly: what every search in lowerkit tune compares with.

On a shared machine, noise only slows a call down, so a candidate wins only when it is faster
at its median and at its lower quartile (the rounds least disturbed), and in most of the
paired rounds.
"""

from __future__ import annotations

import statistics
from typing import Callable


def quartiles(xs: list[float]) -> tuple[float, float]:
    """(lower quartile, median) of ``xs``."""
    q = statistics.quantiles(xs, n=4, method="inclusive") if len(xs) > 1 else [xs[0]] * 3
    return q[0], q[1]


def beats(a: list[float], b: list[float], margin: float = 0.05) -> bool:
    """Whether ``a`` (ms, one per round) is faster than ``b`` (paired rounds) by ``margin`` at
    its median and at its lower quartile (the rounds least disturbed by other work: on a
    shared machine noise only slows a call down), and in more than half of the rounds."""
    (a_q1, a_med), (b_q1, b_med) = quartiles(a), quartiles(b)
    wins = sum(x < y for x, y in zip(a, b))
    return (a_med <= (1 - margin) * b_med and a_q1 <= (1 - margin) * b_q1
            and wins > len(a) / 2)


def interleaved(samplers: dict[str, Callable[[], float]], rounds: int) -> dict[str, list[float]]:
    """``rounds`` samples of each sampler, taken in turn, the order reversed every other round:
    a drift in the machine's speed falls on every candidate alike."""
    names = list(samplers)
    out: dict[str, list[float]] = {n: [] for n in names}
    for r in range(rounds):
        for n in (names if r % 2 == 0 else names[::-1]):
            out[n].append(samplers[n]())
    return out
