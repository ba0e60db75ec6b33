"""An exact dense search for the users of an embedded Chroma store: their vectors kept in this process.

Chroma searches an HNSW graph, and the graph does not always reach every item: an item whose vector equals
another's (the same words said twice) can be left with no link into it, and which one is left out depends
on how Chroma built the graph, which varies from run to run. Such an item is never found, whatever the search
breadth (a conversation of the generated suite lost one of two identical turns in about one run of forty;
docs/architecture.md §9). So the dense query of a user of at most ``EXACT_ITEMS`` items is answered here,
from a matrix of their unit vectors: every item scored, the same ranking in every run.

The vectors are read from the collection once (Chroma returns what it was given) and then kept up to date
by this process's writes, so only a store that no other process writes may use them: an embedded one
(in memory, or a folder this process holds the lock of). A shared server's collections keep Chroma's
search. At most ``EXACT_VECTORS`` vectors are kept, the least recently searched users going first.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Any, Callable, Hashable, Sequence

import numpy as np

EXACT_ITEMS = 10_000  # a user with more is searched by Chroma's graph (about 15 MB of vectors at 384-d)
EXACT_VECTORS = 100_000  # kept for all users of the process together (about 150 MB at 384-d)


class _Vectors:
    """One collection's vectors by Chroma id, and the matrix of them built when a search needs it."""

    def __init__(self, ids: Sequence[str], vectors: Sequence[Sequence[float]]) -> None:
        self.rows: dict[str, np.ndarray] = {}
        self.put(ids, vectors)

    def put(self, ids: Sequence[str], vectors: Sequence[Sequence[float]]) -> None:
        for i, v in zip(ids, vectors):
            self.rows[i] = _unit(v)
        self._matrix: tuple[list[str], np.ndarray] | None = None

    def remove(self, ids: Sequence[str]) -> None:
        for i in ids:
            self.rows.pop(i, None)
        self._matrix = None

    def matrix(self) -> tuple[list[str], np.ndarray]:
        if self._matrix is None:
            ids = list(self.rows)
            self._matrix = ids, (np.stack([self.rows[i] for i in ids]) if ids else np.zeros((0, 0), np.float32))
        return self._matrix


def _unit(v: Sequence[float]) -> np.ndarray:
    a = np.asarray(v, dtype=np.float32)
    norm = float(np.linalg.norm(a))
    return a / norm if norm > 0 else a


class ExactVectors:
    """The vectors of the collections searched exactly, by a key the caller gives each collection (its
    store and Chroma's collection id), shared by every index of the process that writes them."""

    def __init__(self, max_vectors: int = EXACT_VECTORS, max_items: int = EXACT_ITEMS) -> None:
        self.max_vectors, self.max_items = max_vectors, max_items
        self._held: OrderedDict[Hashable, _Vectors] = OrderedDict()
        self._lock = threading.Lock()

    def nearest(self, key: Hashable, col: Any, vector: Sequence[float], n: int) -> list[tuple[str, float]] | None:
        """``(Chroma id, cosine similarity)`` of the ``n`` items of the Chroma collection ``col`` nearest to
        ``vector``, and of every item tied with the n-th, in no order; None when it holds more than ``max_items``
        (the caller searches Chroma's graph). The vectors are read from ``col`` the first time, while no write of
        this process can change what is kept."""
        with self._lock:
            held = self._held.get(key)
            if held is None:
                if col.count() > self.max_items:
                    return None
                got = col.get(include=["embeddings"])
                held = _Vectors(got["ids"], got["embeddings"])
                self._held[key] = held
            self._held.move_to_end(key)
            if len(held.rows) > self.max_items:
                del self._held[key]
                return None
            ids, matrix = held.matrix()
            self._evict()
        if not ids or n <= 0:
            return []
        sims = matrix @ _unit(vector)
        if n < len(ids):
            cut = np.partition(sims, len(ids) - n)[len(ids) - n]
            return [(ids[j], float(sims[j])) for j in np.flatnonzero(sims >= cut)]
        return list(zip(ids, map(float, sims)))

    def put(self, key: Hashable, ids: Sequence[str], vectors: Sequence[Sequence[float]]) -> None:
        """What the collection was just given (after Chroma took it)."""
        with self._lock:
            if key in self._held:
                self._held[key].put(ids, vectors)

    def remove(self, key: Hashable, ids: Sequence[str]) -> None:
        with self._lock:
            if key in self._held:
                self._held[key].remove(ids)

    def forget(self, keys: Callable[[Hashable], bool]) -> None:
        """Drop the collections whose key ``keys`` accepts (deleted, or their store closed)."""
        with self._lock:
            for key in [k for k in self._held if keys(k)]:
                del self._held[key]

    def _evict(self) -> None:
        total = sum(len(v.rows) for v in self._held.values())
        while total > self.max_vectors and len(self._held) > 1:
            _, gone = self._held.popitem(last=False)
            total -= len(gone.rows)


EXACT = ExactVectors()  # the process's: every embedded Chroma index writes and reads through it
