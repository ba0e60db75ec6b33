"""The episode archive: every observed turn of a user, recorded at once and embedded and indexed lexically in
batches (docs/architecture.md §2). A part of ``FactStore``: it writes to the records, the vector index and the
text index it is given, and never calls back into the store.
"""

from __future__ import annotations

import threading
from contextlib import ExitStack, contextmanager
from typing import Any, Callable, ContextManager, Iterator, Sequence

from .. import validate
from ..errors import ConfigError, IsolationError
from ..types import Episode
from .base import TextIndex, VectorIndex, dense_items, episode_items
from .records import Records


class EpisodeArchive:
    """Records episodes, and embeds a user's pending ones in one batch once ``batch`` wait (or when a reader
    needs them): one embedder call, one commit of vectors, words and the embedded marks. In ``bulk`` mode,
    the pending turns of every user observed wait until ``size`` of them do, and go in one embedder call."""

    def __init__(self, records: Records, vectors: VectorIndex, text: TextIndex, embedder: Any,
                 unit: Callable[[], ContextManager[Any]], batch: int) -> None:
        self.records, self.vectors, self.text, self.embedder = records, vectors, text, embedder
        self.unit, self.batch = unit, batch
        self._locks: dict[str, threading.Lock] = {}  # per owner: one embedding batch at a time
        self._guard = threading.Lock()
        self._bulk: dict[str, str] | None = None  # in bulk mode: owner -> user id of the users with turns waiting
        self._bulk_size = self._waiting = 0

    def add(self, owner: str, user_id: str, episode: Episode, extract: bool) -> Episode:
        if episode.user_id != user_id:
            raise IsolationError(f"episode of {episode.user_id!r} offered to {user_id!r}")
        validate.time_point("time", episode.time)  # one no date label can write would fail every later read
        stored = self.records.add_episode(owner, episode, extract)
        if self._bulk is not None:
            with self._guard:
                self._bulk[owner] = user_id
                self._waiting += 1
                full = self._waiting >= self._bulk_size
            if full:
                self._embed_waiting()
        elif self.records.count_episodes(owner, pending=True) >= self.batch:
            self.embed_pending(owner, user_id, None)
        return stored

    @contextmanager
    def bulk(self, size: int) -> Iterator[None]:
        """Bulk mode (``FactStore.bulk``): turns wait until ``size`` of them do, then all users' go in one
        embedder call; what waits is embedded on leaving (left by an exception, it stays pending, recorded)."""
        with self._guard:
            if self._bulk is not None:
                raise ConfigError("this store is already in bulk mode: bulk() does not nest")
            self._bulk, self._bulk_size, self._waiting = {}, size, 0
        ok = False
        try:
            yield
            ok = True
        finally:
            if ok:
                self._embed_waiting()
            with self._guard:
                self._bulk = None

    def _embed_waiting(self) -> int:
        """In bulk mode: embed the pending episodes of every user it saw, in one embedder call; how many."""
        with self._guard:
            users, self._bulk, self._waiting = self._bulk or {}, {}, 0
        return self._embed(users, None, None)

    def embed_pending(self, owner: str, user_id: str, but_session: str | None, only: Sequence[str] | None = None) -> int:
        """Embed and index the user's recorded but unembedded episodes, except ``but_session``'s (and of them
        only the ids in ``only``, when given); how many."""
        if only is not None and not only:
            return 0
        return self._embed({owner: user_id}, but_session, only)

    def _embed(self, users: dict[str, str], but_session: str | None, only: Sequence[str] | None) -> int:
        """One embedder call over the pending episodes of ``users`` (owner -> user id), sorted by length in it;
        then, per user, one commit of vectors, words and the embedded marks."""
        with ExitStack() as held:
            # per user, one batch at a time (a read and a session's warm-up at once: the second finds nothing
            # left); the locks are taken in one order, so that two calls over several users never deadlock
            for owner in sorted(users):
                with self._guard:
                    lock = self._locks.setdefault(owner, threading.Lock())
                held.enter_context(lock)
            pending = {owner: self.records.episodes(owner, user_id, only, pending=True, but_session=but_session)
                       for owner, user_id in users.items()}
            items = {owner: [item for e in eps for item in episode_items(e)] for owner, eps in pending.items()}
            dense = {owner: [item for e in eps for item in dense_items(e)] for owner, eps in pending.items()}
            if not any(items.values()):
                return 0
            vectors = iter(self.embedder([text for its in dense.values() for _, text in its]))
            for owner, its in items.items():
                if not its:
                    continue
                mine = [next(vectors) for _ in dense[owner]]
                with self.unit():
                    self.vectors.put(owner, users[owner], "episodes", [ref for ref, _ in dense[owner]], mine)
                    self.text.change(owner, "episodes", its)
                    self.records.mark_embedded(owner, [e.id for e in pending[owner]])
            return sum(map(len, pending.values()))
