"""What a bench run changes on the Dask workers it runs on, for its duration only (a ``WorkerPlugin``).

Measured on the first suite (36 jobs on a ``LocalCluster`` of 2 worker processes, against the same jobs in 2
spawned processes): a job took about 10% more CPU on a Dask worker. The cause is the worker's sampling
profiler, which every 10 ms walks the running task's stack on the worker's event loop, holding the GIL the
task needs. With it paused the jobs cost what they cost in plain processes. The plugin pauses it when the run
registers it and starts it again when the run unregisters it, so a cluster shared with other work gets its
profiler back (the dashboard's profile simply has no samples of memkit's jobs).

Where a host has one core per worker, each worker is also pinned to a core of its own for the run, as
``--jobs`` pins its processes (``memkit/eval/cores.py``), and given all its cores back afterwards.
"""

from __future__ import annotations

from typing import Any

from distributed.diagnostics.plugin import WorkerPlugin

from .cores import pin, unpin

PROFILER = ("profile", "profile-cycle")  # the worker's periodic callbacks that sample and roll up its profile


class BenchWorker(WorkerPlugin):
    """Pauses a worker's profiler, and pins it to its core slot (``slots``: worker address to slot), while a
    bench run is registered on it."""

    name = "memkit-bench"

    def __init__(self, slots: dict[str, int] | None = None) -> None:
        self.slots = dict(slots or {})
        self.paused: list[str] = []
        self.cores: set[int] | None = None

    def setup(self, worker: Any) -> None:
        callbacks = worker.periodic_callbacks
        self.paused = [n for n in PROFILER if n in callbacks and callbacks[n].is_running()]
        for n in self.paused:
            callbacks[n].stop()
        if worker.address in self.slots:
            self.cores = pin(self.slots[worker.address])

    def teardown(self, worker: Any) -> None:
        for n in self.paused:
            worker.periodic_callbacks[n].start()
        self.paused = []
        unpin(self.cores)
        self.cores = None


__all__ = ["BenchWorker"]
