"""lowerkit's benchmark suite for airspeed velocity (asv): one command runs it, asv keeps its
history per machine and commit in ``benchmarks/results/asv/``, and ``benchmarks/readme.py``
renders the performance page's per-host figures from that history.

    .venv/bin/python benchmarks/run_suite.py            # every set, on this host
    .venv/bin/python benchmarks/run_suite.py --quick    # a few programs of each set

The sets: issue 22's real-shape set (`real_shapes`), the real-size zoo (`real_models`:
torchvision and timm at their published sizes), the hand-written zoo (`zoo`) and the call
floor of small programs (`call_floor`). Each set is measured once per run in its class's
``setup_cache``, the way ``lowerkit bench`` measures it (every contender interleaved in one
process, so that a shared machine's noise falls on all of them alike); its ``track_*``
benchmarks read the figures out of that measurement: ratios against eager and Inductor
measured in the same run, and lowerkit's own times.
"""

import os

# Before torch loads (asv imports this package first in each of its processes): torch's OpenMP
# workers idle instead of spinning between calls, as in every stored `lowerkit bench` run.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
