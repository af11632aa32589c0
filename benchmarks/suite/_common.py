"""What the suite's sets share: which programs a run measures, and reading figures out of a
set's measurement."""

from __future__ import annotations

import math
import os

# The asv version of every benchmark: results keep comparing across commits while it stays.
# Raise it when what a benchmark measures changes (its programs' sizes, the contenders).
VERSION = "1"
GEOMEAN = "geomean"  # the parameter value that names a set's geometric mean
QUICK = os.environ.get("LOWERKIT_SUITE_QUICK") == "1"
TORCH_THREADS = int(os.environ.get("LOWERKIT_SUITE_TORCH_THREADS", "2"))
SETUP_TIMEOUT = 6 * 3600.0  # a whole set on a slow host


def programs(every: list[str], quick: list[str]) -> list[str]:
    """The programs this run measures: ``quick`` in a quick run (`run_suite.py --quick`), else
    ``every``."""
    return [n for n in every if n in quick] if QUICK else list(every)


def geomean(values) -> float:
    values = [v for v in values if v is not None and math.isfinite(v) and v > 0]
    return math.exp(sum(map(math.log, values)) / len(values)) if values else math.nan


class _ModelSet:
    """A set of models timed by ``lowerkit bench``'s loop (`lowerkit.tools.bench.bench_model`):
    eager, torch.compile and lowerkit on the CPU target, interleaved, ``bench_rounds`` rounds.
    A subclass names its programs, builds each (`make`), and defines ``setup_cache`` as
    ``return self.measure()``: asv keys a cache by the function's source line, so each set needs
    its own."""

    param_names = ["program"]
    params: list = []
    version = VERSION
    rounds = 1          # asv's: each track reads the one measurement
    repeat = 1
    timeout = 120.0
    bench_rounds = 15

    def make(self, name: str):
        raise NotImplementedError

    def measure(self) -> dict:
        from lowerkit.tools import bench

        bench.start_run(TORCH_THREADS)
        bench.warm_up("cpu")
        models, failed = {}, {}
        for name in self.params[0]:
            if name == GEOMEAN:
                continue
            try:
                model, args, kwargs = self.make(name)
            except Exception as e:  # noqa: BLE001 - one library failing ends no run
                failed[name] = f"{type(e).__name__}: {e}"[:300]
                continue
            r = bench.bench_model(name, model, args, kwargs, target="cpu",
                                  rounds=1 if QUICK else self.bench_rounds)
            models[name] = r.to_json()
        return {"models": models, "failed_factories": failed}

    @staticmethod
    def _read(cache: dict, program: str, key: str, inverse: bool = False) -> float:
        def value(m: dict) -> float:
            v = m.get(key)
            if v is None or not math.isfinite(v) or v <= 0:
                return math.nan
            return 1.0 / v if inverse else v

        if program == GEOMEAN:
            return geomean([value(m) for m in cache["models"].values()])
        m = cache["models"].get(program)
        if m is None:
            raise NotImplementedError(cache["failed_factories"].get(program, "not measured"))
        return value(m)

    # asv takes a larger value for a regression: the ratios are lowerkit's time over the other
    # contender's (0.5: lowerkit takes half eager's time, "2× eager" on the pages)
    def track_time_over_eager(self, cache, program):
        """lowerkit's time a call over eager's, same run, same process (< 1: faster)."""
        return self._read(cache, program, "lowerkit_vs_eager", inverse=True)

    track_time_over_eager.unit = "lowerkit time / eager time"

    def track_time_over_torch_compile(self, cache, program):
        """lowerkit's time a call over torch.compile's (Inductor), same run (< 1: faster)."""
        return self._read(cache, program, "lowerkit_vs_torch_compile", inverse=True)

    track_time_over_torch_compile.unit = "lowerkit time / torch.compile time"

    def track_lowerkit_ms(self, cache, program):
        """lowerkit's median ms a call (the geomean row: of every program's)."""
        if program == GEOMEAN:
            return geomean([m["median_ms"].get("lowerkit") for m in cache["models"].values()])
        m = cache["models"].get(program)
        if m is None:
            raise NotImplementedError(cache["failed_factories"].get(program, "not measured"))
        return m["median_ms"].get("lowerkit", math.nan)

    track_lowerkit_ms.unit = "ms"

    def track_compile_s(self, cache, program):
        """lowerkit's cold compile, seconds (the geomean row: of every program's)."""
        if program == GEOMEAN:
            return geomean([m["compile_cold_s"].get("lowerkit")
                            for m in cache["models"].values()])
        m = cache["models"].get(program)
        if m is None:
            raise NotImplementedError(cache["failed_factories"].get(program, "not measured"))
        return m["compile_cold_s"].get("lowerkit", math.nan)

    track_compile_s.unit = "s"
