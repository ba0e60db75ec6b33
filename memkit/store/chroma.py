"""Chroma as the vector index (the default backend): every Chroma call of memkit (``memkit/models/embed.py`` imports
chromadb only to register its embedding functions).

Layout: one collection per user, named by the user's owner hash (Chroma names allow only ``[a-zA-Z0-9._-]``),
holding the user's *current* facts and their episodes (ids ``f:<fact id>`` and ``e:<seq>``, metadata ``part``).
A search therefore never filters across users: it opens that user's collection or none, so its cost grows with
the user's items, not with everyone's (docs/architecture.md §6), and a read asks one dense query for both parts.
Stores written with a collection per part (before this layout) are moved when the store opens.
"""

from __future__ import annotations

import itertools
import re
import threading
from collections import OrderedDict
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator, Sequence

import chromadb
import httpx
from chromadb.errors import NotFoundError

from ..models import embed as _embed  # registers memkit's embedders before any get_collection
from .. import validate
from .folder import lock_folder, unlock_folder
from ..errors import (DimensionMismatch, EmbedderMismatch, IsolationError, MemkitError, StoreCorrupt, StoreFull,
                      StoreUnavailable)
from .base import past_ties
from .chroma_process import hnsw_cache, one_call_per_collection, raise_open_file_limit
from .exact import EXACT

# Users whose index stays loaded in an embedded store (one HNSW index each); the least recently used are
# evicted beyond it. Measured at 1,000 users with 100 items each (docs/decisions.md, "Loaded users per process").
MAX_USERS = 64
# cosine distance; and an index written to disk after every change (Chroma's default waits for 1000): Chroma's
# loaded-index cache drops the indexes it evicts, and one dropped before it was written is then "Nothing found
# on disk" for every later query of the process, or silently misses the changes made since its last write
# (Chroma replays a collection's log once per process). At 2, a user whose last write was one item lost it so:
# 11 of 30 collections of 3 items read back 2 (docs/architecture.md §2).
# One build thread, and a search breadth of 1,000 (Chroma's is 100): the graph depends on the order in which
# Chroma applies its log, and a broader search ranks more of a big user's items the same in every run. An
# embedded store's users of up to 10,000 items are searched exactly instead (memkit/store/exact.py): the
# graph can leave an item unreachable (docs/architecture.md §9). A collection keeps the settings it was made
# with; an older one is given this write threshold when it is opened.
EF_SEARCH = 1000
HNSW = {"space": "cosine", "sync_threshold": 1, "batch_size": 2, "num_threads": 1, "ef_search": EF_SEARCH}
# The two parts of a user's collection: the tag that prefixes an item's Chroma id and is its metadata "part"
TAGS = {"facts": "f", "episodes": "e"}
PART_OF_TAG = {tag: part for part, tag in TAGS.items()}
LEGACY_PARTS = ("facts", "episodes", "history")  # collections per part, before one collection per user


class ChromaIndex:
    """Vectors in one Chroma collection per user, through any Chroma client (ephemeral, persistent, http)."""


    def __init__(self, client: Any, embedder: Any, namespace: str, backend: str, max_users: int = MAX_USERS) -> None:
        self.client, self.embedder, self.namespace, self.backend = client, embedder, namespace, backend
        self.dimension = _embed.embedder_dimension(embedder)
        self.identity = _embed.identity(self.collection_embedder)  # kept on each collection, checked on reopening
        self.max_users = validate.positive_int("max_users", max_users)
        self._collections: OrderedDict[str, Any] = OrderedDict()  # an LRU of collection handles
        self._guard = threading.Lock()
        self._folder: str | None = None  # a persistent folder this index holds the lock of (released by close())
        # the exact search's key for this store's collections (memkit/store/exact.py): only an embedded store,
        # which no other process writes, keeps its users' vectors in the process
        self._exact: str | None = {"ephemeral": "ephemeral"}.get(backend)

    @classmethod
    def persistent(cls, path: str | Path, embedder: Any, namespace: str, max_users: int = MAX_USERS) -> "ChromaIndex":
        """A Chroma ``PersistentClient`` folder, locked for this process (``StoreLocked`` in another)."""
        validate.positive_int("max_users", max_users)
        folder = Path(path)
        locked = lock_folder(folder)  # StorePathError for a folder that cannot be one, StoreLocked if in use
        try:
            raise_open_file_limit()
            with translated(f"{folder}/chroma.sqlite3"), hnsw_cache(max_users):  # one index per user
                client = chromadb.PersistentClient(path=str(path))
            index = cls(client, embedder, namespace, "persistent", max_users)
        except BaseException:
            unlock_folder(locked)
            # Chroma keeps a system that failed to start in its per-path cache, and every later client of the
            # folder in this process would fail on it (a repair opens the folder again)
            from chromadb.api.shared_system_client import SharedSystemClient

            SharedSystemClient._identifier_to_system.pop(str(path), None)
            raise
        index._folder, index._exact = locked, str(folder.resolve())
        return index

    @classmethod
    def http(cls, host: str, port: int, embedder: Any, namespace: str) -> "ChromaIndex":
        with translated(f"Chroma server at {host}:{port}"):
            client = chromadb.HttpClient(host=host, port=port)
        return cls(client, embedder, namespace, "http")

    def collection_name(self, owner: str) -> str:
        return self._name(owner, "user")

    def _name(self, owner: str, part: str) -> str:
        return f"{self.namespace}-{part}-{owner}"

    @property
    def collection_embedder(self) -> Any:
        """The embedder a collection is configured with: the one behind an embedding cache, if any (Chroma keeps
        its name and config to rebuild it on reopening; memkit passes the vectors itself)."""
        return _embed.traits(self.embedder).base

    def embedder_id(self) -> str:
        return _embed.label(self.embedder)

    # ---- items ---------------------------------------------------------------------------------
    @one_call_per_collection
    def put(self, owner: str, user_id: str, part: str, ids: Sequence[str], vectors: Sequence[Sequence[float]]) -> None:
        col = self._open(owner, user_id, create=True)
        if not ids:
            return
        with translated(self.backend):
            # no documents: Chroma would index their words for a ``where_document`` memkit never asks, which
            # was half of an upsert's time (docs/measurements.md, "Bigger runs")
            cids = [f"{TAGS[part]}:{i}" for i in ids]
            col.upsert(ids=cids, embeddings=[list(map(float, v)) for v in vectors],
                       metadatas=[{"part": TAGS[part], "user_id": user_id}] * len(ids))
        if self._exact:
            EXACT.put(self._key(col), cids, vectors)

    @one_call_per_collection
    def remove(self, owner: str, user_id: str, part: str, ids: Sequence[str]) -> None:
        col = self._open(owner, user_id, create=False)
        if col is not None and ids:
            cids = [f"{TAGS[part]}:{i}" for i in ids]
            with translated(self.backend):
                col.delete(ids=cids)
            if self._exact:
                EXACT.remove(self._key(col), cids)

    @one_call_per_collection
    def nearest(self, owner: str, user_id: str, vector: Sequence[float], n: int) -> list[tuple[str, str, float]]:
        if len(vector) != self.dimension:  # named, for both searches
            raise DimensionMismatch(f"a query vector of dimension {len(vector)} for an index of {self.dimension}")
        col = self._open(owner, user_id, create=False)
        if col is None or n <= 0:
            return []
        with translated(self.backend):
            hits = EXACT.nearest(self._key(col), col, vector, n) if self._exact else None
            if hits is None:
                # ids and distances only (the rows are read from the records, which check their owner); never a
                # ``part`` filter: it fails ("Error finding id") on an index evicted and loaded again (§2)
                def fetch(m: int) -> list[tuple[str, float]]:
                    res = col.query(query_embeddings=[list(vector)], n_results=m, include=["distances"])
                    return [(cid, 1.0 - float(d)) for cid, d in zip(res["ids"][0], res["distances"][0])]

                hits = past_ties(fetch, n, lambda hit: hit[1])
        out = []
        for cid, sim in hits:
            tag, item_id = cid.split(":", 1)
            out.append((PART_OF_TAG[tag], item_id, sim))
        # equal scores (the same words said twice) come in no fixed order: ties go to the earlier id, among all
        # of them (past_ties, or all the exact search scores), so a read ranks the same every time
        out.sort(key=lambda x: (-x[2], x[0], len(x[1]), x[1]))
        return out[:n]

    def _key(self, col: Any) -> tuple[str | None, str, str]:
        return self._exact, col.name, str(col.id)

    def _forget(self, prefix: str) -> None:
        """Drop what the exact search keeps of this store's collections named ``prefix...`` (a name is one)."""
        if self._exact:
            EXACT.forget(lambda k: k[0] == self._exact and k[1].startswith(prefix))

    @one_call_per_collection
    def warm(self, owner: str, user_id: str) -> None:
        """A one-result query loads the user's collection from disk; the exact search reads its vectors."""
        col = self._open(owner, user_id, create=False)
        if col is not None:
            probe = [1.0] + [0.0] * (self.dimension - 1)
            with translated(self.backend):
                col.query(query_embeddings=[probe], n_results=1, include=[])
                if self._exact:
                    EXACT.nearest(self._key(col), col, probe, 1)

    @one_call_per_collection
    def drop(self, owner: str, user_id: str) -> None:
        with translated(self.backend):
            for part in ("user",) + LEGACY_PARTS:
                name = self._name(owner, part)
                try:
                    self.client.delete_collection(name)
                except NotFoundError:
                    pass
                with self._guard:
                    self._collections.pop(name, None)
                self._forget(name)

    def owners(self) -> dict[str, str]:
        """``owner -> user_id`` of every user with a collection in this namespace (``health.findings``)."""
        prefix = f"{self.namespace}-user-"
        with translated(self.backend):
            return {c.name[len(prefix):]: (c.metadata or {}).get("user_id", "") for c in self.client.list_collections()
                    if c.name.startswith(prefix)}

    def holds(self, owner: str) -> bool:
        """Whether the owner's collection holds any vector."""
        return self.count(owner) > 0

    @one_call_per_collection
    def count(self, owner: str) -> int:
        """How many vectors the owner's collection holds (0 when it has none)."""
        with translated(self.backend):
            try:
                return self.client.get_collection(self.collection_name(owner)).count()
            except (NotFoundError, ValueError):
                return 0

    @one_call_per_collection
    def fact_ids(self, owner: str) -> set[str]:
        """The ids of the facts the owner's collection holds vectors of (``health.findings``)."""
        with translated(self.backend):
            try:
                got = self.client.get_collection(self.collection_name(owner)).get(where={"part": TAGS["facts"]},
                                                                                  include=[])
            except (NotFoundError, ValueError):
                return set()
        return {i.split(":", 1)[1] for i in got["ids"]}

    def loaded(self) -> int:
        """How many users' collection handles are held (at most ``max_users``)."""
        return len(self._collections)

    def close(self) -> None:
        self._collections.clear()
        self._forget(f"{self.namespace}-")  # a closed folder may be written by another process next
        if self.backend == "ephemeral":
            # Every EphemeralClient of a process shares one in-memory system, which outlives the client: a closed
            # ephemeral store's collections (its random namespace: nothing else can reach them) are deleted, or
            # a long-lived process (a serial bench, a Dask worker, a kernel) keeps every store it ever opened.
            with translated(self.backend):
                for col in self.client.list_collections():
                    name = getattr(col, "name", col)
                    if name.startswith(f"{self.namespace}-"):
                        self.client.delete_collection(name)
        closer = getattr(self.client, "close", None)
        if callable(closer) and self.backend == "persistent":
            closer()
        folder, self._folder = self._folder, None
        unlock_folder(folder)

    # ---- collections ---------------------------------------------------------------------------
    def _open(self, owner: str, user_id: str, create: bool) -> Any:
        """The user's collection (None if it does not exist and ``create`` is false)."""
        name = self.collection_name(owner)
        with self._guard:
            if name in self._collections:
                self._collections.move_to_end(name)
                return self._collections[name]
        meta = {"user_id": user_id, "dimension": self.dimension, "embedder": self.embedder_id(), "identity": self.identity}
        with translated(self.backend):
            try:
                col = self.client.get_collection(name)
            except (NotFoundError, ValueError):
                if not create:
                    return None
                col = self.client.get_or_create_collection(name, embedding_function=self.collection_embedder,
                                                           configuration={"hnsw": HNSW}, metadata=meta)
            self._check(user_id, col)
            _write_every_change(col)
        with self._guard:
            self._collections[name] = col
            while len(self._collections) > self.max_users:
                self._collections.popitem(last=False)
        return col

    def _check(self, user_id: str, col: Any, vectors: bool = True) -> None:
        meta = col.metadata or {}
        if meta.get("user_id") != user_id:
            raise IsolationError(f"collection {col.name} belongs to another user id (hash collision or tampering)")
        if vectors and meta.get("dimension") != self.dimension:
            raise DimensionMismatch(
                f"the facts of user {user_id!r} were embedded by {meta.get('embedder')} with dimension "
                f"{meta.get('dimension')}, but this store's embedder {self.embedder_id()} gives {self.dimension}. "
                "Embeddings of different models cannot share a collection. To migrate, open a store with the old "
                "embedder and one with the new embedder under another namespace (FactStore(..., namespace='v2')) "
                "and call old.copy_user(user_id, new), which re-embeds every fact and its history.")
        # a collection made before memkit kept the identity has only the name and model (``embedder``) to go by
        if vectors and meta.get("identity", self.identity) != self.identity:
            raise EmbedderMismatch(
                f"the facts of user {user_id!r} were embedded by {meta['identity']}, but this store's embedder is "
                f"{self.identity} (another model, or another window: their vectors cannot be compared). Open the "
                "store with the embedder it was written with; to move, copy_user(user_id, new) into a store of the "
                "new embedder under another namespace.")

    # ---- the one migration: a collection per part -> one collection per user, run when a store opens ----
    def migrate(self) -> int:
        """Move every user still stored with a collection per part (or cut short in a move) to one collection
        per user; returns how many users moved. One listing of the collections, once per open."""
        pattern = re.compile(rf"{re.escape(self.namespace)}-(user|{'|'.join(LEGACY_PARTS)})-([0-9a-f]{{40}})")
        found: dict[str, dict[str, Any]] = {}
        with translated(self.backend):
            for col in self.client.list_collections():
                m = pattern.fullmatch(col.name)
                if m and (m.group(1) != "user" or (col.metadata or {}).get("moving")):
                    found.setdefault(m.group(2), {})[m.group(1)] = col
            for owner, cols in found.items():
                self._move_user(owner, cols)
        return len(found)

    @one_call_per_collection
    def _move_user(self, owner: str, cols: dict[str, Any]) -> None:
        user_id = next(iter(cols.values())).metadata["user_id"]
        legacy = {p: self.client.get_collection(c.name, embedding_function=None) for p, c in cols.items() if p != "user"}
        for part, old in legacy.items():  # checked before anything is made: a refused move changes nothing
            self._check(user_id, old, vectors=part in TAGS)
        meta = {"user_id": user_id, "dimension": self.dimension, "embedder": self.embedder_id(), "identity": self.identity,
                "moving": True}
        col = self.client.get_or_create_collection(self.collection_name(owner), embedding_function=self.collection_embedder,
                                                   configuration={"hnsw": HNSW}, metadata=meta)
        self._check(user_id, col)
        # copies are upserts: a move cut short and begun again copies the same items again, loses none
        for part, old in legacy.items():
            for offset in itertools.count(0, 1000) if part in TAGS else ():
                batch = old.get(include=["metadatas", "embeddings"], limit=1000, offset=offset)
                if batch["ids"]:
                    col.upsert(ids=[f"{TAGS[part]}:{i}" for i in batch["ids"]], embeddings=batch["embeddings"],
                               metadatas=[{**m, "part": TAGS[part]} for m in batch["metadatas"]])
                if len(batch["ids"]) < 1000:  # the last page: no read past it
                    break
        for part in legacy:  # the history collection held nothing since the event log
            try:
                self.client.delete_collection(self._name(owner, part))
            except NotFoundError:
                pass  # another process moved it first
        col.modify(metadata={k: v for k, v in col.metadata.items() if k != "moving"})
        self._forget(col.name)


def _write_every_change(col: Any) -> None:
    """Give a collection made before memkit wrote every change to disk the write threshold of ``HNSW``."""
    hnsw = (getattr(col, "configuration", None) or {}).get("hnsw") or {}
    if hnsw.get("sync_threshold", HNSW["sync_threshold"]) > HNSW["sync_threshold"]:
        col.modify(configuration={"hnsw": {"sync_threshold": HNSW["sync_threshold"]}})


DAMAGED = ("malformed", "not a database", "disk image")  # what Chroma says of a damaged file


@contextmanager
def translated(what: str) -> Iterator[None]:
    """Turn a backend's connection failures into ``StoreUnavailable``."""
    try:
        yield
    except MemkitError:
        raise
    except (httpx.TransportError, ConnectionError) as e:
        raise StoreUnavailable(f"{what} is unreachable: {e}") from e
    except ValueError as e:
        if "Could not connect" in str(e):
            raise StoreUnavailable(f"{what} is unreachable: {e}") from e
        raise
    except Exception as e:  # noqa: BLE001 - Chroma's own errors: a damaged file is named, the rest stay Chroma's
        if "disk is full" in str(e) or "No space left" in str(e):
            raise StoreFull(f"the vector index ({what}) cannot be written: {e}; free space on its disk (what was "
                            "written before stays readable)") from e
        if any(w in str(e) for w in DAMAGED):
            raise StoreCorrupt(f"the vector index ({what}) is damaged: {e}. The records hold the truth: `memkit store "
                               "repair PATH` sets the damaged files aside and re-embeds from them",
                               part="vectors") from e
        raise
