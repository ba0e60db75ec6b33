"""What an embedded Chroma client shares with the whole process, and how memkit keeps it safe: the size of its
cache of loaded HNSW indexes (set through the open-file limit), and one call at a time into each collection.

Chroma 1.5's local segment manager does not serialize two misses of its index cache for the same collection:
a read that finds the index evicted loads it from disk while a write (or the read's own catch-up on the log)
builds it, and the read then sees a folder with no index yet ("Nothing found on disk") or an id map without
the id it was given ("Error finding id"). memkit's own threads meet there: a session's background warm-up
reads the user's collection while the caller writes it. Chroma's fix (chroma-core/chroma#7765) is not
released, so every call of a ``ChromaIndex`` that touches one user's collection holds that collection's lock
(docs/architecture.md §2). Users are independent: their calls still run at once.
"""

from __future__ import annotations

import functools
import os
import threading
import zlib
from contextlib import contextmanager
from typing import Any, Callable, Iterator, TypeVar

STRIPES = 64  # locks shared by all collections, by a hash of their name: two users rarely share one
_LOCKS = [threading.RLock() for _ in range(STRIPES)]
F = TypeVar("F", bound=Callable[..., Any])


def collection_lock(name: str) -> threading.RLock:
    """The lock of the collection ``name`` (the same object for the same name, in every index of the process)."""
    return _LOCKS[zlib.crc32(name.encode()) % STRIPES]


def one_call_per_collection(method: F) -> F:
    """Run a ``ChromaIndex`` method ``(self, owner, ...)`` holding the lock of that owner's collection."""

    @functools.wraps(method)
    def serial(self: Any, owner: str, *args: Any, **kwargs: Any) -> Any:
        with collection_lock(self.collection_name(owner)):
            return method(self, owner, *args, **kwargs)

    return serial  # type: ignore[return-value]


@contextmanager
def hnsw_cache(indexes: int) -> Iterator[None]:
    """Embedded Chroma keeps an LRU of (open-file soft limit // 5) loaded HNSW indexes, sized once when the
    client is made: 204 with the common 1024. Make the client with the limit at ``5 * indexes`` (or just above
    the files already open, if more), which sizes that LRU, then raise the limit again for the files the
    loaded indexes hold."""
    try:
        import resource
    except ImportError:  # Windows: Chroma sizes its cache from _getmaxstdio; keep its default
        yield
        return
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    try:
        in_use = len(os.listdir("/proc/self/fd"))
    except OSError:
        in_use = 256
    try:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(max(5 * indexes + 5, in_use + 64), soft), hard))
    except (ValueError, OSError):
        pass
    try:
        yield
    finally:
        raise_open_file_limit()


def raise_open_file_limit() -> None:
    """Each loaded index keeps its files open: raise the soft open-file limit to the hard one, as far as allowed."""
    try:
        import resource

        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        target = hard if hard != resource.RLIM_INFINITY else 1 << 20
        if soft < target:
            resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
    except (ImportError, ValueError, OSError):  # Windows, or a sandbox that refuses: keep the default
        pass
