"""The Ray backend (``--executor ray``, extra ``lowerkit[ray]``): one Ray task per item.

Without ``RAY_ADDRESS`` a local Ray starts (every core of this machine); with it, the cluster
is joined. Ray's usage statistics are off unless the user turned them on. Task workers are
reused, so a job's `setup` (torch, IREE, a suite) runs once per worker, not per item.

Nothing is lost: tasks have ``max_retries=0`` and are drained one at a time with
``ray.wait``; at most as many are in flight as the cluster has CPUs, so an item's time counts
from when it starts. An item past its time is cancelled (``ray.cancel(force=True)`` kills its
worker): ``timeout``. A worker that dies under an item is tried once more on a fresh worker:
dying again is the item's ``crash`` (a segfault is a finding, reproduced); finishing is its
verdict, with ``attempts: 2`` (the worker was killed from outside, e.g. by the OOM killer). A
lost node or any other failure of Ray itself is ``infrastructure``.

GPU items (``Item.gpu``) run on actors that each hold one GPU and the job's set-up (the IREE
runtime and device): a GPU task would otherwise re-import everything per call. This path is
written for CUDA machines and is not tested here (no GPU on this project's machines).
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from collections import deque
from pathlib import Path
from typing import Any, Callable

from .job import Job, run_one
from .outcome import Item, Outcome, tail

# Seconds an item may take on top of its own timeout before it is cancelled: a fresh worker's
# start and the job's set-up (torch, IREE, a suite) count against the item that waits for them.
START_GRACE_S = 30.0


def _ray():
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    try:
        import ray
    except ImportError:
        raise ImportError("--executor ray needs Ray: pip install 'lowerkit[ray]'") from None
    return ray


def development_source() -> str | None:
    """lowerkit's package folder as one importable tree when lowerkit runs from a source
    checkout (an editable install), else None: a cluster's nodes are expected to have lowerkit
    installed, and only a developer's tree is shipped (``runtime_env``'s ``py_modules``)."""
    import lowerkit

    package = Path(lowerkit.__file__).resolve().parent
    if "site-packages" in package.parts or "dist-packages" in package.parts:
        return None
    root = package.parents[1]
    staging = Path(tempfile.mkdtemp(prefix="lowerkit-ray-src-")) / "lowerkit"
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    shutil.copytree(package, staging, symlinks=False, ignore=ignore)
    if (root / "pipelines").is_dir() and not (staging / "pipelines").exists():
        shutil.copytree(root / "pipelines", staging / "pipelines", ignore=ignore)
    return str(staging)


def _remote_run(job: Job, item: Item) -> Outcome:
    import ray

    outcome = run_one(job, item)
    outcome.run["node"] = ray.get_runtime_context().get_node_id()[:12]
    return outcome


class _GpuHolder:
    """An actor holding one GPU and the job's set-up; runs the GPU items sent to it."""

    def run(self, job: Job, item: Item) -> Outcome:
        return _remote_run(job, item)


class RayExecutor:
    name = "ray"

    def __init__(self, address: str | None = None, num_cpus: int | None = None,
                 ship_source: bool | None = None, confirm_crashes: bool = True,
                 start_grace_s: float = START_GRACE_S, init_kwargs: dict | None = None):
        self.address = address or os.environ.get("RAY_ADDRESS")
        self.num_cpus = num_cpus
        self.ship_source = ship_source
        self.confirm_crashes = confirm_crashes
        self.start_grace_s = start_grace_s
        self.init_kwargs = init_kwargs or {}
        self.slots = None

    def _init(self):
        ray = _ray()
        if not ray.is_initialized():
            kwargs: dict[str, Any] = dict(include_dashboard=False, log_to_driver=False,
                                          configure_logging=False)
            if self.address:
                kwargs["address"] = self.address
            else:
                # a new local Ray, as documented: without an address ray.init joins the cluster
                # named in /tmp/ray/ray_current_cluster, which an earlier `ray start` leaves
                # behind even once that cluster is gone (and refuses num_cpus there)
                kwargs["address"] = "local"
                if self.num_cpus is not None:
                    kwargs["num_cpus"] = self.num_cpus
            ship = self.ship_source if self.ship_source is not None else bool(self.address)
            source = development_source() if ship else None
            if source:
                kwargs["runtime_env"] = {"py_modules": [source]}
            ray.init(**{**kwargs, **self.init_kwargs})
        return ray

    def describe(self) -> dict:
        ray = self._init()
        resources = ray.cluster_resources()
        return {"executor": self.name, "address": self.address or "local",
                "workers": int(resources.get("CPU", 0)), "gpus": int(resources.get("GPU", 0)),
                "nodes": len([n for n in ray.nodes() if n.get("Alive")]),
                "ray": ray.__version__}

    def execute(self, job: Job, items: list[Item], on_outcome: Callable[[Outcome], None]) -> None:
        ray = self._init()
        from ray import exceptions as rx

        task = ray.remote(max_retries=0, num_cpus=1)(_remote_run)
        self.slots = max(1, int(ray.cluster_resources().get("CPU", 1)))
        gpus = int(ray.cluster_resources().get("GPU", 0))
        holders = deque(ray.remote(num_gpus=1, max_restarts=-1)(_GpuHolder).remote()
                        for _ in range(gpus)) if any(i.gpu for i in items) else deque()
        if any(i.gpu for i in items) and not holders:
            for item in (i for i in items if i.gpu):
                on_outcome(Outcome(item.key, "infrastructure", None, "ray",
                                   "a GPU item, and the Ray cluster has no GPU"))
            items = [i for i in items if not i.gpu]
        job_ref = ray.put(job)
        pending = deque((item, 1) for item in items)
        inflight: dict = {}  # ref -> (item, attempt, started, holder)

        def submit(item: Item, attempt: int) -> None:
            holder = None
            if item.gpu:
                holder = holders.popleft()
                ref = holder.run.remote(job_ref, item)
            else:
                ref = task.remote(job_ref, item)
            inflight[ref] = (item, attempt, time.monotonic(), holder)

        try:
            while pending or inflight:
                while pending and len(inflight) < self.slots and (not pending[0][0].gpu or holders):
                    submit(*pending.popleft())
                ready, _ = ray.wait(list(inflight), num_returns=1, timeout=0.5)
                for ref in ready:
                    item, attempt, started, holder = inflight.pop(ref)
                    if holder is not None:
                        holders.append(holder)
                    try:
                        outcome = ray.get(ref)
                        outcome.run["attempts"] = attempt
                    except (rx.WorkerCrashedError, rx.ActorDiedError, rx.ActorUnavailableError) as e:
                        if attempt == 1 and self.confirm_crashes:
                            pending.appendleft((item, 2))  # again, on a fresh worker
                            continue
                        outcome = Outcome(item.key, "crash", "crash", "run",
                                          "the worker died under this item twice "
                                          f"({type(e).__name__})", tail(str(e)),
                                          run={"attempts": attempt})
                    except rx.RayTaskError as e:  # run_one catches the job's errors: Ray's own
                        outcome = Outcome(item.key, "infrastructure", None, "ray",
                                          f"{type(e).__name__}", tail(str(e)),
                                          run={"attempts": attempt})
                    except rx.RayError as e:  # a lost node or object, a failed runtime_env...
                        outcome = Outcome(item.key, "infrastructure", None, "ray",
                                          f"{type(e).__name__}: {str(e).splitlines()[0][:300]}",
                                          tail(str(e)), run={"attempts": attempt})
                    on_outcome(outcome)
                now = time.monotonic()
                for ref, (item, attempt, started, holder) in list(inflight.items()):
                    limit = item.timeout_s
                    if not limit or now - started <= limit + self.start_grace_s:
                        continue
                    ray.cancel(ref, force=True)
                    del inflight[ref]
                    if holder is not None:
                        ray.kill(holder, no_restart=False)
                        holders.append(holder)
                    on_outcome(Outcome(item.key, "timeout", "timeout", "run",
                                       f"no result within {limit:g} s (task cancelled)",
                                       run={"seconds": round(now - started, 3),
                                            "attempts": attempt}))
        finally:  # a driver stopped midway leaves no task of its own running
            for ref in inflight:
                ray.cancel(ref, force=True)
