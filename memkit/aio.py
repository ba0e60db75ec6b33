"""``AsyncMemory``: ``Memory``'s surface as coroutines, for an asyncio service, an async agent graph or an MCP
server (docs/usage.md, "Async").

Every call runs ``Memory``'s own code on a bounded pool of worker threads, so the event loop never waits on an
embedding, a Chroma query or a disk write. What runs at once, and what waits:

- **Different users run in parallel**, up to ``workers`` calls at a time (the embedder, Chroma, tantivy and
  SQLite release the GIL in their native code).
- **One session's calls keep their order**: an ``asyncio.Lock`` per ``(user, session)`` (first come, first
  served) lets one ``observe``/``context``/``end_session`` of a session run at a time, so turns are recorded
  in the order they were awaited and a read sees every turn awaited before it.
- **One user's fact writes are serialized** by the store's per-user lock (``FactStore.user_lock``), as for
  threads: "one current fact per key" and the event log's order hold under any concurrency.
- ``forget`` waits for the user's running calls to finish and holds the user's sessions while it runs.

The stores are reached through their synchronous drivers on the pool (one implementation of every query
for ``Memory`` and ``AsyncMemory``): PostgreSQL's statements run at once on connections from the store's pool
(``psycopg_pool``), ``chroma run``'s requests on its shared HTTP client; the embedded records file (SQLite)
runs one statement at a time. ``aclose`` waits for the calls under way, then closes the memory.
"""

from __future__ import annotations

import asyncio
from collections import defaultdict
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime
from typing import Any, Callable, TypeVar

from . import validate
from .errors import StoreClosed
from .memory import Memory
from .types import Context, Event, Hit

T = TypeVar("T")
WORKERS = 4  # calls at a time: past the cores, for the calls that wait on a disk, a server or a model


class AsyncMemory:
    """``Memory`` as coroutines: ``async with AsyncMemory(...) as memory: await memory.observe(...)``. Takes a
    ``Memory`` (``memory=``) or the keywords to make one (``store=``, ``policy=``, ``read=``...)."""

    def __init__(self, memory: Memory | None = None, *, workers: int = WORKERS, **memory_kwargs: Any) -> None:
        if memory is not None and memory_kwargs:
            raise TypeError("pass a Memory or the keywords to make one, not both")
        self.memory = memory if memory is not None else Memory(**memory_kwargs)
        self._owns_memory = memory is None  # aclose() closes a memory it made, never one it was given
        self._pool = ThreadPoolExecutor(max_workers=validate.positive_int("workers", workers, 64),
                                        thread_name_prefix="memkit-async")
        self._sessions: defaultdict[tuple[str, str], asyncio.Lock] = defaultdict(asyncio.Lock)
        self._running: set[asyncio.Future[Any]] = set()
        self._closed = False

    async def _run(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        if self._closed:
            raise StoreClosed("this AsyncMemory was closed (aclose(), or its `async with` block ended)")
        future = asyncio.get_running_loop().run_in_executor(self._pool, lambda: fn(*args, **kwargs))
        self._running.add(future)
        try:
            return await future
        finally:
            self._running.discard(future)

    def _session(self, user_id: str, session_id: str) -> asyncio.Lock:
        return self._sessions[(validate.user_id(user_id), validate.session_id(session_id))]

    # ---- the surface of Memory ------------------------------------------------------------------
    async def observe(self, user_id: str, session_id: str, role: str, content: str, turn_id: str | None = None,
                      time: "float | datetime | None" = None, speaker: str | None = None) -> list[Event]:
        """``Memory.observe``, in the order a session's calls were awaited."""
        async with self._session(user_id, session_id):
            return await self._run(self.memory.observe, user_id, session_id, role, content, turn_id, time, speaker)

    async def context(self, user_id: str, session_id: str, query: str, budget: int = 1200, k: int | None = None,
                      min_score: float | None = None, now: "float | datetime | None" = None) -> Context:
        """``Memory.context``: it sees every turn of the session awaited before it."""
        async with self._session(user_id, session_id):
            return await self._run(self.memory.context, user_id, session_id, query, budget, k, min_score, now)

    async def end_session(self, user_id: str, session_id: str, keep: bool = False) -> None:
        async with self._session(user_id, session_id):
            await self._run(self.memory.end_session, user_id, session_id, keep)

    async def search(self, user_id: str, query: str, k: int | None = None, min_score: float | None = None) -> list[Hit]:
        return await self._run(self.memory.search, user_id, query, k, min_score)

    async def profile(self, user_id: str, limit: int = 20) -> str:
        return await self._run(self.memory.profile, user_id, limit)

    async def flush(self) -> list[Event]:
        return await self._run(self.memory.flush)

    async def forget(self, user_id: str) -> None:
        """``Memory.forget``, once the user's sessions are idle (their calls under way finish first)."""
        user_id = validate.user_id(user_id)
        locks = [lock for (user, _), lock in sorted(self._sessions.items()) if user == user_id]
        for lock in locks:
            await lock.acquire()
        try:
            await self._run(self.memory.forget, user_id)
        finally:
            for lock in locks:
                lock.release()
            for key in [key for key in self._sessions if key[0] == user_id]:
                del self._sessions[key]

    async def aclose(self) -> None:
        """Wait for the calls under way, stop the pool, and close the memory if this object made it (one it
        was given stays open for you)."""
        if self._closed:
            return
        self._closed = True
        if self._running:
            await asyncio.gather(*self._running, return_exceptions=True)
        await asyncio.get_running_loop().run_in_executor(None, self._pool.shutdown)
        if self._owns_memory:
            await asyncio.get_running_loop().run_in_executor(None, self.memory.close)

    async def __aenter__(self) -> "AsyncMemory":
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()
