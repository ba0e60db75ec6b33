"""An embedding cache on disk: each text is embedded once per embedder, across stores, strategies, runs and processes.

Vectors live in one SQLite file (WAL, so several processes read and write it at once), keyed by the embedder's
identity and a SHA-256 of the text. The offline MiniLM gives every text the same vector whatever else is in its
batch (measured: bit-identical alone and in batches), so a cached vector is exactly the one the encoder would
give again and a run with the cache equals a run without it. The file is bounded (the least recently used
rows go first) and disposable: delete it and the next call embeds again; a cache that cannot be read is
reported once (``CacheUnavailable`` as a warning) and bypassed, never a reason for a call to fail.
"""

from __future__ import annotations

import hashlib
import os
import sqlite3
import threading
import time
import warnings
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator, Sequence

import numpy as np

from ..models.embed import identity, traits
from .. import registry
from ..config import CACHE_ITEMS, cache_dir, cache_items
from ..errors import CacheTooSmall, CacheUnavailable, ConfigError
from .sql import connect_sqlite

MAX_ITEMS = CACHE_ITEMS  # the default bound (``$MEMKIT_EMBED_CACHE_ITEMS`` sets another)
# A hit refreshes its row's use time only when the last refresh is older than this: eviction is least recently
# used to the hour, and a warm run reads the file without writing to it (each refresh was a write before).
REFRESH_S = 3600.0
_SCHEMA = """
CREATE TABLE IF NOT EXISTS vectors (key BLOB PRIMARY KEY, vector BLOB NOT NULL, used REAL NOT NULL) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS vectors_used ON vectors (used);
"""


def default_path() -> Path:
    """``$MEMKIT_CACHE_DIR`` or ``$XDG_CACHE_HOME/memkit`` (``~/.cache/memkit``), file ``embeddings.sqlite3``."""
    return cache_dir() / "embeddings.sqlite3"


@contextmanager
def _transaction(db: sqlite3.Connection) -> Iterator[None]:
    """One write transaction (the connection is in autocommit mode), rolled back if it fails."""
    db.execute("BEGIN IMMEDIATE")
    try:
        yield
        db.execute("COMMIT")
    except BaseException:
        try:
            db.execute("ROLLBACK")
        except sqlite3.Error:
            pass
        raise


def _select(db: sqlite3.Connection, columns: str, keys: Sequence[bytes]) -> Iterator[tuple]:
    """``columns`` of the rows whose key is among ``keys``, 500 keys per statement."""
    for start in range(0, len(keys), 500):
        chunk = list(keys[start:start + 500])
        yield from db.execute(f"SELECT {columns} FROM vectors WHERE key IN ({','.join('?' * len(chunk))})", chunk).fetchall()


class EmbeddingCache:
    """Vectors by ``(embedder identity, text)`` in a SQLite file shared by every process that opens it."""

    def __init__(self, path: str | Path | None = None, max_items: int | None = None,
                 refresh_s: float = REFRESH_S) -> None:
        """``max_items``: the most vectors the file keeps (default ``$MEMKIT_EMBED_CACHE_ITEMS``, else
        ``MAX_ITEMS``); beyond it the least recently used go."""
        if max_items is None:
            max_items = cache_items()
        if isinstance(max_items, bool) or not isinstance(max_items, int) or max_items < 1:
            raise ConfigError(f"max_items is the most vectors the cache keeps, 1 or more; got {max_items!r}")
        self.path = Path(path) if path is not None else default_path()
        self.max_items = max_items
        self.refresh_s = refresh_s
        self._lock = threading.Lock()
        self._db: sqlite3.Connection | None = None
        self._pid = 0
        self._since_trim = 0
        self._failed = False
        self.hits = self.misses = 0

    def __getstate__(self) -> dict[str, Any]:  # a worker process opens its own connection
        return {"path": self.path, "max_items": self.max_items, "refresh_s": self.refresh_s}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(state["path"], state["max_items"], state["refresh_s"])  # type: ignore[misc]

    def _conn(self) -> sqlite3.Connection | None:
        if self._failed:
            return None
        if self._db is None or self._pid != os.getpid() or not self.path.exists():
            if self._db is not None and self._pid == os.getpid():
                self._db.close()  # the file was deleted under it: start a new one
            try:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                db = connect_sqlite(self.path, 60, _SCHEMA)
            except (sqlite3.Error, OSError) as e:
                return self._give_up(e)
            self._db, self._pid = db, os.getpid()
        return self._db

    def _give_up(self, error: Exception) -> None:
        self._failed = True
        warnings.warn(CacheUnavailable(f"the embedding cache {self.path} cannot be used ({error}); "
                                       "embedding without it"), stacklevel=3)
        return None

    @staticmethod
    def key(ident: str, text: str) -> bytes:
        return hashlib.sha256(f"{ident}\x00{text}".encode("utf-8", "surrogatepass")).digest()

    def get(self, keys: Sequence[bytes], dimension: int) -> dict[bytes, np.ndarray]:
        """The cached vectors among ``keys``; the use time of those last refreshed over ``refresh_s`` ago is
        refreshed, in one transaction."""
        with self._lock:
            db = self._conn()
            if db is None or not keys:
                return {}
            found: dict[bytes, np.ndarray] = {}
            now = time.time()
            stale: list[bytes] = []
            try:
                for k, blob, used in _select(db, "key, vector, used", keys):
                    vec = np.frombuffer(blob, dtype=np.float32)
                    if vec.shape == (dimension,):
                        found[bytes(k)] = vec
                        if used < now - self.refresh_s:
                            stale.append(bytes(k))
                if stale:
                    with _transaction(db):
                        db.executemany("UPDATE vectors SET used = ? WHERE key = ?", [(now, k) for k in stale])
            except sqlite3.Error as e:
                self._give_up(e)
                return {}
            self.hits += len(found)
            self.misses += len(keys) - len(found)
            return found

    def holds(self, keys: Sequence[bytes]) -> set[bytes]:
        """Which of ``keys`` have a vector (reading keys only, refreshing nothing)."""
        with self._lock:
            db = self._conn()
            if db is None:
                return set()
            try:
                return {bytes(k) for (k,) in _select(db, "key", keys)}
            except sqlite3.Error as e:
                self._give_up(e)
                return set()

    def put(self, items: dict[bytes, np.ndarray]) -> None:
        """Store vectors (a key another process stored first keeps its row: the vectors are the same)."""
        with self._lock:
            db = self._conn()
            if db is None or not items:
                return
            now = time.time()
            try:
                with _transaction(db):
                    db.executemany("INSERT OR IGNORE INTO vectors (key, vector, used) VALUES (?, ?, ?)",
                                   [(k, np.asarray(v, dtype=np.float32).tobytes(), now) for k, v in items.items()])
                    self._since_trim += len(items)
                    if self._since_trim >= max(1, min(1000, self.max_items // 10)):
                        self._since_trim = 0
                        over = db.execute("SELECT count(*) FROM vectors").fetchone()[0] - self.max_items
                        if over > 0:  # the least recently used go first
                            db.execute("DELETE FROM vectors WHERE key IN "
                                       "(SELECT key FROM vectors ORDER BY used LIMIT ?)", (over,))
            except sqlite3.Error as e:
                self._give_up(e)

    def __len__(self) -> int:
        with self._lock:
            db = self._conn()
            return 0 if db is None else int(db.execute("SELECT count(*) FROM vectors").fetchone()[0])

    def close(self) -> None:
        with self._lock:
            if self._db is not None and self._pid == os.getpid():
                self._db.close()
            self._db = None


class CachedEmbedder:
    """An embedder with an ``EmbeddingCache`` in front: a text already seen (in this call, or by any process
    that shares the file) is not embedded again. It presents itself as the embedder it wraps (name, config,
    dimension), and a Chroma collection is configured with the wrapped one (``inner``), so a store built with
    the cache reopens without it."""

    def __init__(self, inner: Any, cache: EmbeddingCache) -> None:
        self.inner, self.cache = inner, cache
        described = traits(inner)
        self.dimension, self.model_id, self.max_tokens = described.dimension, described.model_id, described.max_tokens
        self.batch_size = described.batch_size
        self._ident = identity(inner)
        self.embedded = 0  # texts this wrapper sent to the encoder

    def __call__(self, input: Sequence[str] | str) -> list[np.ndarray]:
        return self._through(input, self._ident, self.inner)

    def embed_query(self, input: Sequence[str] | str) -> list[np.ndarray]:
        """Questions: cached under a key of their own when the wrapped embedder embeds them differently
        (its own ``embed_query``, as e5's ``query:``), else as any text."""
        described = traits(self.inner)
        if not described.own_query:
            return self(input)
        return self._through(input, self._ident + " query", described.embed_query)

    def _through(self, input: Sequence[str] | str, ident: str, encode: Any) -> list[np.ndarray]:
        """``input``'s vectors under keys of ``ident``: those the cache holds, the rest from ``encode`` (each
        distinct text once) and then kept."""
        texts = [input] if isinstance(input, str) else list(input)
        keys = [self.cache.key(ident, t) for t in texts]
        dim = self.dimension or 0
        found = self.cache.get(list(dict.fromkeys(keys)), dim) if dim else {}
        todo: dict[bytes, str] = {}
        for k, t in zip(keys, texts):
            if k not in found:
                todo.setdefault(k, t)  # a text repeated within the call is embedded once
        if todo:
            vectors = encode(list(todo.values()))
            fresh = {k: np.asarray(v, dtype=np.float32) for k, v in zip(todo, vectors)}
            self.embedded += len(fresh)
            if not dim:
                self.dimension = dim = len(next(iter(fresh.values())))
            self.cache.put(fresh)
            found.update(fresh)
        return [found[k] for k in keys]

    def missing(self, texts: Sequence[str]) -> list[str]:
        """The texts among ``texts`` (all that a run will embed, as its warm-up asks) the cache has no vector
        for, in their order; a ``CacheTooSmall`` warning when the cache cannot keep them all."""
        keys = [self.cache.key(self._ident, t) for t in texts]
        distinct = len(set(keys))
        if distinct > self.cache.max_items:
            warnings.warn(CacheTooSmall(
                f"{distinct:,} texts to embed and the embedding cache {self.cache.path} keeps "
                f"{self.cache.max_items:,} vectors: some will be embedded twice; set MEMKIT_EMBED_CACHE_ITEMS="
                f"{distinct} or more (about 1.6 kB a 384-d vector)"), stacklevel=2)
        held = self.cache.holds(keys)
        return [t for t, k in zip(texts, keys) if k not in held]

    def truncates(self, text: str) -> bool:
        check = traits(self.inner).truncates
        return bool(check(text)) if check is not None else False

    def name(self) -> str:
        return self.inner.name()

    def get_config(self) -> dict[str, Any]:
        return self.inner.get_config()


def cached(embedder: Any, path: str | Path | None = None, max_items: int | None = None) -> CachedEmbedder:
    """``embedder`` behind the embedding cache at ``path`` (default ``default_path()``)."""
    return CachedEmbedder(embedder, EmbeddingCache(path, max_items))


__all__ = ["CachedEmbedder", "EmbeddingCache", "MAX_ITEMS", "cached", "default_path"]


registry.register("cache", "sqlite", lambda embedder, path: cached(embedder, path))  # Settings.embedder()
