"""What a bench run changes on the Dask workers it runs on, for its duration only (a ``WorkerPlugin``).

Measured on the first suite (36 jobs on a ``LocalCluster`` of 2 worker processes, against the same jobs in 2
spawned processes): a job took about 10% more CPU on a Dask worker. The cause is the worker's sampling
profiler, which every 10 ms walks the running task's stack on the worker's event loop, holding the GIL the
task needs. With it paused the jobs cost what they cost in plain processes. The plugin pauses it when the run
registers it and starts it again when the run unregisters it, so a cluster shared with other work gets its
profiler back (the dashboard's profile simply has no samples of memkit's jobs).
"""

from __future__ import annotations

from typing import Any

from distributed.diagnostics.plugin import WorkerPlugin

PROFILER = ("profile", "profile-cycle")  # the worker's periodic callbacks that sample and roll up its profile


class BenchWorker(WorkerPlugin):
    """Pauses a worker's profiler while a bench run is registered on it."""

    name = "memkit-bench"

    def __init__(self) -> None:
        self.paused: list[str] = []

    def setup(self, worker: Any) -> None:
        callbacks = worker.periodic_callbacks
        self.paused = [n for n in PROFILER if n in callbacks and callbacks[n].is_running()]
        for n in self.paused:
            callbacks[n].stop()

    def teardown(self, worker: Any) -> None:
        for n in self.paused:
            worker.periodic_callbacks[n].start()
        self.paused = []


__all__ = ["BenchWorker"]
