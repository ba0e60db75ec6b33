"""The episode archive: every observed turn of a user, recorded at once and embedded and indexed lexically in
batches (docs/architecture.md §2). A part of ``FactStore``: it writes to the records, the vector index and the
text index it is given, and never calls back into the store.
"""

from __future__ import annotations

import threading
from typing import Any, Callable, ContextManager, Sequence

from ..errors import IsolationError
from ..types import Episode
from .base import TextIndex, VectorIndex, episode_items
from .records import Records


class EpisodeArchive:
    """Records episodes, and embeds a user's pending ones in one batch once ``batch`` wait (or when a reader
    needs them): one embedder call, one commit of vectors, words and the embedded marks."""

    def __init__(self, records: Records, vectors: VectorIndex, text: TextIndex, embedder: Any,
                 unit: Callable[[], ContextManager[Any]], batch: int) -> None:
        self.records, self.vectors, self.text, self.embedder = records, vectors, text, embedder
        self.unit, self.batch = unit, batch
        self._locks: dict[str, threading.Lock] = {}  # per owner: one embedding batch at a time
        self._guard = threading.Lock()

    def add(self, owner: str, user_id: str, episode: Episode, extract: bool) -> Episode:
        if episode.user_id != user_id:
            raise IsolationError(f"episode of {episode.user_id!r} offered to {user_id!r}")
        stored = self.records.add_episode(owner, episode, extract)
        if self.records.count_episodes(owner, pending=True) >= self.batch:
            self.embed_pending(owner, user_id, None)
        return stored

    def embed_pending(self, owner: str, user_id: str, but_session: str | None, only: Sequence[str] | None = None) -> int:
        """Embed and index the user's recorded but unembedded episodes, except ``but_session``'s (and of them
        only the ids in ``only``, when given); how many."""
        if only is not None and not only:
            return 0
        with self._guard:
            lock = self._locks.setdefault(owner, threading.Lock())
        with lock:  # a read and a session's warm-up at once: one batch, the other finds nothing left
            pending = self.records.episodes(owner, user_id, only, pending=True, but_session=but_session)
            if not pending:
                return 0
            items = [item for e in pending for item in episode_items(e)]
            texts = [text for _, text in items]
            vectors = self.embedder(texts)
            with self.unit():
                self.vectors.put(owner, user_id, "episodes", [ref for ref, _ in items], texts, vectors)
                self.text.change(owner, "episodes", items)
                self.records.mark_embedded(owner, [e.id for e in pending])
            return len(pending)
