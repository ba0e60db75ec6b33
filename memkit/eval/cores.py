"""One core per worker process of a parallel run (``--jobs``, a Dask cluster), where the machine has one each,
and the encoder threads each worker uses (``enter_worker``).

A bench job is one Python thread doing most of the work, with helper threads around it (Chroma's runtime,
tantivy's writer, the session warm-up). Unpinned, two such processes on 2 cores left 22% of the machine
idle and spent a fifth of it in the kernel, handing threads from core to core; each pinned to a core of its
own, the same jobs took 28% less time (docs/measurements.md, "Bigger runs"). Pinning applies only where a run's workers
take every core of their host, one each: with fewer, pinning would stack two runs of one machine on the same
first cores, and with more (or without ``sched_setaffinity``) a core cannot be a worker's own; there nothing
changes. A pinned process's threads all move, and so do the ones it starts later.
"""

from __future__ import annotations

import os
from typing import Any, Sequence

from ..registry import DEFAULT_EMBEDDER


def usable() -> list[int]:
    """The cores this process may run on."""
    if hasattr(os, "sched_getaffinity"):
        return sorted(os.sched_getaffinity(0))
    return list(range(os.cpu_count() or 1))


def _threads() -> list[int]:
    try:
        return [int(t) for t in os.listdir("/proc/self/task")]
    except OSError:
        return [0]


def pin(slot: int) -> set[int] | None:
    """Move every thread of this process onto the ``slot``-th usable core; the cores it could use before, to
    give back with ``unpin`` (None: not pinned, there is no such core or the platform cannot pin)."""
    cores = usable()
    if not hasattr(os, "sched_setaffinity") or not 0 <= slot < len(cores):
        return None
    _set({cores[slot]})
    return set(cores)


def unpin(before: set[int] | None) -> None:
    """Give every thread of this process back the cores ``pin`` took it from."""
    if before is not None:
        _set(before)


def _set(cores: set[int]) -> None:
    for tid in _threads():
        try:
            os.sched_setaffinity(tid, cores)
        except OSError:  # a thread that ended meanwhile
            pass


def slots(workers: Sequence[tuple[str, str, int]], cores: dict[str, int]) -> dict[str, int]:
    """``(address, host, threads)`` of each worker, and the cores each may use: the slot of every worker on a
    host whose workers have one thread each and are as many as its cores (by address), none elsewhere."""
    by_host: dict[str, list[tuple[str, int]]] = {}
    for address, host, threads in workers:
        by_host.setdefault(host, []).append((address, threads))
    out: dict[str, int] = {}
    for members in by_host.values():
        if all(t == 1 for _, t in members) and all(len(members) == cores.get(a, 0) for a, _ in members):
            out.update({address: i for i, (address, _) in enumerate(sorted(members))})
    return out


def pin_next(counter: Any, jobs: int) -> None:
    """A ``ProcessPoolExecutor`` initializer: the n-th worker to start takes the n-th core, when the ``jobs``
    workers are as many as the cores."""
    with counter.get_lock():
        slot = counter.value
        counter.value += 1
    if jobs == len(usable()):
        pin(slot % jobs)


def enter_worker(threads: int | dict[str, int], embedder: str = DEFAULT_EMBEDDER) -> str:
    """Set this worker's encoder threads (on a Dask cluster, ``threads`` maps hosts to them: the host's cores
    shared among its workers); the worker's name."""
    from ..models.embed import shared_embedder

    worker = f"pid {os.getpid()}"
    if isinstance(threads, dict):
        from distributed import get_worker

        me = get_worker()
        worker, threads = me.address, threads.get(me.ip, 0)
    if threads:
        shared_embedder(embedder).use_threads(threads)
    return worker


__all__ = ["enter_worker", "pin", "pin_next", "slots", "unpin", "usable"]
