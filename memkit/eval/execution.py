"""Where a bench run's jobs execute (this process, N local processes, or a Dask cluster), after the cache
warm-up that batches the encoder across conversations (``warmup.py``), and the part files that make a run
resumable.

A job is one conversation under one strategy (at one budget, or at every budget for a strategy whose memory
does not depend on it). Jobs share nothing but the embedding cache: each job opens a store of its own from a
``StoreSpec`` (in memory), or its worker's connection to one PostgreSQL schema, where each strategy's memory
lives under its own user id. So a job's rows are the same wherever, beside whatever and in whatever order it
runs, and results are merged in job order. (One in-memory store for every job, as runs had before, let one
conversation's numbers move with the others in the run: the lexical index's BM25 statistics span its users.)
"""

from __future__ import annotations

import hashlib
import json
import os
import pickle
import sys
import time
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator, Sequence

from ..errors import ConfigError
from ..registry import DEFAULT_EMBEDDER
from .conversation import run_conversation, scoped
from .defaults import RECYCLE  # calls each --jobs worker takes before a fresh one replaces it
from . import warmup
from .cores import enter_worker
from .spec import Job, RunSpec


@dataclass(frozen=True)
class StoreSpec:
    """How a worker opens the store a job writes to: ``ephemeral`` (in memory, one per job) or a PostgreSQL URL
    and schema (shared by every job and worker), with an optional embedding-cache file."""

    where: str = "ephemeral"
    namespace: str | None = None
    embed_cache: str | None = None
    embedder: str = DEFAULT_EMBEDDER  # the offline embedder's registered name

    def open(self) -> Any:
        from ..models.embed import shared_embedder
        from ..store import FactStore

        embedder: Any = shared_embedder(self.embedder)
        if self.embed_cache:
            from ..store.embed_cache import cached

            embedder = cached(embedder, self.embed_cache)
        return FactStore.from_url(self.where, embedder, namespace=self.namespace or "memkit")

    @property
    def shared(self) -> bool:
        """Whether jobs share one store (a PostgreSQL schema) rather than open one each (in memory)."""
        from ..store.base import parse_store_url

        return parse_store_url(self.where)[0] != "memory"


_STORES: dict[StoreSpec, Any] = {}  # per worker process: its connection to each shared store, kept for the run


@contextmanager
def _store(spec: StoreSpec) -> Iterator[Any]:
    if not spec.shared:
        store = spec.open()
        try:
            yield store
        finally:
            store.close()
        return
    if spec not in _STORES or _STORES[spec].closed:
        _STORES[spec] = spec.open()
    yield _STORES[spec]


def close_stores(spec: StoreSpec) -> None:
    """Close this process's store for ``spec`` (after a run; a Dask worker outlives it)."""
    store = _STORES.pop(spec, None)
    if store is not None:
        store.close()


def run_job(spec: StoreSpec, job: Job, run: RunSpec, threads: int | dict[str, int] = 0) -> tuple[Any, str]:
    """Run one job of ``run`` in a worker: its ``(rows, stats)`` and the worker's name."""
    worker = enter_worker(threads, spec.embedder)
    with _store(spec) as store:
        return run_conversation_on(store, job, run), worker


@dataclass
class Parts:
    """A run's finished jobs on disk, one file each, written atomically as each job finishes: a run killed
    at any moment loses only the jobs in flight, and ``resume`` skips the ones already done."""

    folder: Path
    manifest: dict[str, Any]
    done: dict[int, Any] = field(default_factory=dict)

    @staticmethod
    def key(job: Job) -> str:
        conv, name, budgets = job
        return f"{conv.id}|{name}|{','.join(map(str, budgets))}"

    def start(self, jobs: Sequence[Job], resume: bool) -> None:
        """Open the folder: with ``resume``, load the parts of this same run; else start afresh."""
        self.folder.mkdir(parents=True, exist_ok=True)
        path = self.folder / "manifest.json"
        manifest = {**self.manifest, "jobs": hashlib.sha256("\n".join(map(self.key, jobs)).encode()).hexdigest()}
        if resume and path.exists():
            before = json.loads(path.read_text("utf-8"))
            if before != manifest:
                changed = sorted(k for k in set(before) | set(manifest) if before.get(k) != manifest.get(k))
                raise ConfigError(f"--resume: {self.folder} holds a run with other {', '.join(changed)}; "
                                  "run it with the same data and options, or without --resume to start afresh")
            for part in sorted(self.folder.glob("job-*.pkl")):
                try:
                    saved = pickle.loads(part.read_bytes())
                except (pickle.UnpicklingError, EOFError, ValueError):
                    continue  # a part cut short is a job to run again
                i = saved["index"]
                if i < len(jobs) and saved["key"] == self.key(jobs[i]):
                    self.done[i] = saved["result"]
        else:
            for part in self.folder.glob("job-*.pkl"):
                part.unlink()
        path.write_text(json.dumps(manifest, indent=1, sort_keys=True), "utf-8")

    def write(self, index: int, job: Job, result: Any) -> None:
        self.done[index] = result
        path = self.folder / f"job-{index:05d}.pkl"
        tmp = path.with_suffix(f".tmp{os.getpid()}")
        with open(tmp, "wb") as f:
            pickle.dump({"index": index, "key": self.key(job), "result": result}, f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)


def run_jobs(todo: Sequence[Job], where: Any, run: RunSpec, jobs: int = 1, scheduler: str | None = None,
             parts: Parts | None = None, progress: bool = False, recycle: int = RECYCLE, cost: dict[str, Any] | None = None) -> list[Any]:
    """Every job's ``(rows, stats)``, in job order: those ``parts`` already holds, and the rest run on ``where``
    (a ``StoreSpec``; or a ``FactStore`` shared by the jobs, in this process only), after the cache warm-up
    (``warmup.py``; ``cost`` gets its ``embedded`` texts and ``warm_up_s``); the ``jobs`` processes are
    replaced by fresh ones once they have taken ``recycle`` calls each (0: never)."""
    spread = jobs > 1 or scheduler is not None
    threads: Any = dask_threads(scheduler) if scheduler else max(1, (os.cpu_count() or 1) // jobs) if jobs > 1 else 0
    if isinstance(where, StoreSpec):
        fn, spec = run_job, where
    else:
        fn, spec = (lambda _, job, r, __: (run_conversation_on(where, job, r), "main")), None
    done: dict[int, Any] = dict(parts.done) if parts else {}
    pending = [i for i in range(len(todo)) if i not in done]
    # one machine (this one, or a cluster on one host) shares one cache file, warmed first with what it lacks;
    # on several machines each worker fills its own machine's cache as its jobs go
    one_machine = not scheduler or len(threads) == 1
    warming = time.perf_counter()
    shards = warmup.shards([todo[i] for i in pending], spec, run.options, 64 if scheduler else jobs * 8) \
        if spec is not None and spec.embed_cache and one_machine and pending else []
    with processes(jobs if not scheduler and pending else 1, recycle) as pool:  # one pool for the warm-up and the jobs
        peaks: list[int] | None = [] if scheduler and cost is not None else None
        if shards:
            for _ in _bar(execute(warmup.warm_job, [(i, (spec, shard, threads)) for i, shard in enumerate(shards)],
                                  jobs, scheduler, pool=pool, peaks=peaks), len(shards), "embed", "shard", progress):
                pass
        if cost is not None:
            cost.update(embedded=sum(map(len, shards)), warm_up_s=time.perf_counter() - warming)
        bar = _bar(None, len(todo), "bench", "job", progress, initial=len(todo) - len(pending))
        started, turns, workers = time.perf_counter(), 0, {}
        for i, (result, worker) in execute(fn, [(i, (spec, todo[i], run, threads)) for i in pending], jobs,
                                           scheduler, spec, pool, peaks):
            done[i] = result
            if parts:
                parts.write(i, todo[i], result)
            if bar is not None:
                turns += result[1][0]["turns"]
                workers[worker] = workers.get(worker, 0) + 1
                postfix = {"turns/s": f"{turns / (time.perf_counter() - started):.1f}"}
                if spread:
                    postfix["per worker"] = " ".join(f"{w}:{n}" for w, n in sorted(workers.items()))
                bar.set_postfix(postfix, refresh=False)
                bar.update(1)
    if bar is not None:
        bar.close()
    if peaks:
        cost["workers_peak_mb"] = max(peaks)  # type: ignore[index]
    return [done[i] for i in range(len(todo))]


def own_peak_mb(children: bool = False) -> int:
    """This process's peak resident set in MB, or with ``children`` its largest waited-for child's (0 where the
    platform does not say)."""
    try:
        import resource
    except ImportError:
        return 0
    # ru_maxrss is bytes on macOS, kilobytes on Linux
    usage = resource.getrusage(resource.RUSAGE_CHILDREN if children else resource.RUSAGE_SELF)
    return round(usage.ru_maxrss / (1 << 20 if sys.platform == "darwin" else 1 << 10))


def run_conversation_on(store: Any, job: Job, run: RunSpec) -> Any:
    """One job on a store the caller holds."""
    conv, name, budgets = job
    return run_conversation(scoped(conv, name), name, budgets, store=store, **run.job_options())


def _bar(items: Any, total: int, desc: str, unit: str, progress: bool, initial: int = 0) -> Any:
    """A tqdm bar (jobs done of the total, rate and ETA), or the items unchanged without ``progress``."""
    if not progress:
        return items
    from tqdm.auto import tqdm

    return tqdm(items, total=total, desc=desc, unit=unit, initial=initial)


@contextmanager
def processes(jobs: int, recycle: int = RECYCLE) -> Iterator["Workers | None"]:
    """``jobs`` spawned worker processes that end with the block (``Workers``); None for 1."""
    if jobs <= 1:
        yield None
        return
    workers = Workers(jobs, recycle)
    try:
        yield workers
    except BaseException:  # Ctrl-C, or a job that failed: the calls still queued are not run
        workers.close(now=True)
        raise
    workers.close()


class Workers:
    """``jobs`` spawned worker processes (a ``ProcessPoolExecutor``, each process on a core of its own where
    there are enough: ``memkit/eval/cores.py``), replaced all together by fresh ones once they have taken
    ``recycle`` calls each (0: never). Replacing them is what gives back the memory Chroma keeps of every store
    a process closed. (The pool's own ``max_tasks_per_child`` replaces one process at a time, but with calls
    queued it can stop starting replacements and the run hangs: python/cpython#115634, in every Python from
    3.11 until the fix of 2025-26.)"""

    def __init__(self, jobs: int, recycle: int = RECYCLE) -> None:
        self.jobs, self.recycle = jobs, recycle
        self._pool: Any = None
        self._left = 0  # calls the current processes take before they are replaced

    def run(self, fn: Callable[..., Any], calls: Sequence[tuple[int, tuple]]) -> Iterator[tuple[int, Any]]:
        """``(index, fn(*args))`` for each ``(index, args)``, as each finishes."""
        from concurrent.futures import as_completed

        todo = list(calls)
        while todo:
            if self._pool is None or not self._left:
                self._renew()
            now, todo = todo[:self._left], todo[self._left:]
            self._left -= len(now)
            futures = {self._pool.submit(fn, *args): i for i, args in now}
            for f in as_completed(futures):
                yield futures[f], f.result()

    def _renew(self) -> None:
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor

        from .cores import pin_next

        self.close()
        spawn = multiprocessing.get_context("spawn")
        self._pool = ProcessPoolExecutor(self.jobs, mp_context=spawn, initializer=pin_next,
                                         initargs=(spawn.Value("i", 0), self.jobs))
        self._left = self.recycle * self.jobs or sys.maxsize

    def close(self, now: bool = False) -> None:
        """End the processes, once the calls they took have finished; with ``now`` (an interrupted run) at once:
        the queued calls cancelled, the running ones ended with their processes (SIGTERM, then SIGKILL)."""
        pool, self._pool = self._pool, None
        if pool is not None and not now:
            pool.shutdown()
        elif pool is not None:
            running = list((getattr(pool, "_processes", None) or {}).values())  # no public way to end them (< 3.14)
            pool.shutdown(wait=False, cancel_futures=True)
            for proc in running:
                proc.terminate()
            for proc in running:  # one still starting may outlive SIGTERM's moment
                proc.join(5)
                if proc.is_alive():
                    proc.kill()
                    proc.join(5)


def execute(fn: Callable[..., Any], calls: Sequence[tuple[int, tuple]], jobs: int = 1,
            scheduler: str | None = None, spec: StoreSpec | None = None, pool: Workers | None = None,
            peaks: list[int] | None = None) -> Iterator[tuple[int, Any]]:
    """Run ``fn(*args)`` for each ``(index, args)``; yield ``(index, result)`` as each finishes: here, in
    ``jobs`` spawned processes (``pool``'s, or new ones that end with the calls), or on the Dask cluster at
    ``scheduler`` (whose workers then close their store for ``spec``, and add their largest peak memory, in MB,
    to ``peaks``)."""
    if scheduler:
        yield from _on_dask(fn, calls, scheduler, spec, peaks)
    elif jobs > 1:
        with ExitStack() as stack:
            if pool is None:
                pool = stack.enter_context(processes(jobs))
            yield from pool.run(fn, calls)
    else:
        try:
            for i, args in calls:
                yield i, fn(*args)
        finally:
            if spec is not None:
                close_stores(spec)


def _on_dask(fn: Callable[..., Any], calls: Sequence[tuple[int, tuple]], scheduler: str,
             spec: StoreSpec | None, peaks: list[int] | None = None) -> Iterator[tuple[int, Any]]:
    try:
        from distributed import Client, as_completed
    except ImportError:
        raise ConfigError("--scheduler runs on Dask: pip install 'memkit-lab[distributed]'") from None
    from .dask_worker import BenchWorker

    with Client(scheduler) as client:  # distributed.as_completed finds its client as the default one
        client.register_plugin(BenchWorker(_core_slots(client)))
        futures = {client.submit(fn, *args, key=f"memkit-{time.time_ns()}-{i}", pure=False): i for i, args in calls}
        try:
            # results gathered on the client's loop, so this thread waits only on a condition: a Ctrl-C inside
            # distributed's sync() can fire its cancel callback before the future it cancels exists (a
            # NameError traceback from distributed, printed under the run's own "interrupted")
            for f, result in as_completed(futures, with_results=True):
                if f.status == "cancelled":
                    f.result()  # raises CancelledError, as it did when each result was asked for here
                yield futures[f], result
        finally:
            client.cancel(list(futures))
            if spec is not None:
                client.run(close_stores, spec)
            if peaks is not None:  # the workers are no children of this process: each says its own
                peaks.append(max(client.run(own_peak_mb).values(), default=0))
            client.unregister_worker_plugin(BenchWorker.name)


def _workers(client: Any) -> tuple[list[tuple[str, str, int]], dict[str, int]]:
    """``(address, host, threads)`` of each worker, and how many cores each may use (the scheduler's view)."""
    from .cores import usable

    info = client.scheduler_info(n_workers=-1)["workers"]
    cores = client.run(lambda: len(usable()))  # {worker address: the cores its process may use}
    return [(a, w["host"], w["nthreads"]) for a, w in info.items()], cores


def _core_slots(client: Any) -> dict[str, int]:
    from .cores import slots

    return slots(*_workers(client))


def dask_threads(scheduler: str) -> dict[str, int]:
    """Encoder threads per worker host: the host's cores shared among its workers (the scheduler's view)."""
    from distributed import Client

    with Client(scheduler, set_as_default=False) as client:
        workers, cores = _workers(client)
    per_host: dict[str, list[int]] = {}
    for address, host, _ in workers:
        per_host.setdefault(host, []).append(cores.get(address) or 1)
    return {host: max(1, counts[0] // len(counts)) for host, counts in per_host.items()}


__all__ = ["Job", "Parts", "StoreSpec", "close_stores", "dask_threads", "execute", "processes", "run_conversation_on", "run_job", "run_jobs"]
