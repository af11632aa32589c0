"""The call floor of small programs (issue 7; ``benchmarks/call_floor.py``): µs a call of eager,
of lowerkit, and of the floor that IREE's Python bindings cost before a kernel runs."""

import importlib.util
import math
from pathlib import Path

from ._common import GEOMEAN, QUICK, SETUP_TIMEOUT, TORCH_THREADS, VERSION, geomean

_SCRIPT = Path(__file__).resolve().parent.parent / "call_floor.py"


def _script():
    spec = importlib.util.spec_from_file_location("lowerkit_call_floor", _SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


_PROGRAMS = list(_script().SINGLE_OP)
_QUICK = ["cumsum", "index_ops"]


class CallFloor:
    """``benchmarks/call_floor.py``'s table: its programs on the CPU target, torch on 2
    threads."""

    param_names = ["program"]
    params = [([p for p in _PROGRAMS if p in _QUICK] if QUICK else _PROGRAMS) + [GEOMEAN]]
    version = VERSION
    rounds = 1
    repeat = 1
    timeout = 120.0

    def setup_cache(self):
        import torch

        torch.set_num_threads(TORCH_THREADS)
        rows = _script().measure_programs([p for p in self.params[0] if p != GEOMEAN],
                                          rounds=5 if QUICK else 15,
                                          calls=500 if QUICK else 2000)
        return {r["model"]: r for r in rows}

    setup_cache.timeout = SETUP_TIMEOUT

    @staticmethod
    def _read(cache, program, key):
        if program == GEOMEAN:
            return geomean([r[key] for r in cache.values()])
        return cache[program][key] if program in cache else math.nan

    def track_lowerkit_us(self, cache, program):
        """µs a call of ``Artifact.__call__``."""
        return self._read(cache, program, "lowerkit")

    track_lowerkit_us.unit = "us"

    def track_eager_us(self, cache, program):
        """µs a call of the model in eager PyTorch."""
        return self._read(cache, program, "eager")

    track_eager_us.unit = "us"

    def track_floor_us(self, cache, program):
        """µs the bindings cost a program of these inputs and outputs before a kernel runs."""
        return self._read(cache, program, "floor")

    track_floor_us.unit = "us"
