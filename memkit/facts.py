"""The semantic layer's store: every Chroma call of memkit (embed.py imports chromadb only to register its
embedding functions), and where user isolation is enforced.

Layout: one collection per user, named by a hash of the ``user_id`` (Chroma names allow only
``[a-zA-Z0-9._-]``), holding the user's *current* facts and their episodes (ids ``f:<fact id>`` and
``e:<seq>``, metadata ``part``). A search therefore never filters across users: it opens that user's
collection or none, so its cost grows with the user's items, not with everyone's (docs/architecture.md §6:
2 ms instead of 54 ms median at 100k facts), and a read asks one dense query for both parts. Superseded
versions live in the event log, where ``as_of`` and ``get(include_superseded=True)`` find them. There is no
cross-user query. Stores written with a collection per part (before this layout) move on first use.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import os
import re
import shutil
import threading
import uuid
from collections import OrderedDict
from datetime import datetime
from pathlib import Path
from contextlib import contextmanager
from typing import Any, Iterator, Sequence

import chromadb
import httpx
from chromadb.errors import NotFoundError

from . import embed as _embed  # registers memkit's embedders before any get_collection
from . import validate
from .errors import (DimensionMismatch, IsolationError, MemkitError, StoreClosed, StoreLocked, StorePathError,
                     StoreUnavailable)
from .lexicon import LexicalIndex
from .log import EventLog
from .records import Records
from .types import Candidate, Episode, Event, Fact, Hit, current, fold

EMBED_BATCH = 32  # pending episodes of one user embedded together (docs/architecture.md §2)
# Users whose index stays loaded in an embedded store (one HNSW index each); the least recently used are
# evicted beyond it. Measured at 1,000 users with 100 items each (README, "Read path at scale").
MAX_USERS = 64
# cosine distance; and an index written to disk after every batch of 2 changes instead of Chroma's 1000, so a
# small user's index is on disk when the LRU above evicts it (Chroma cannot reload an index it never wrote)
HNSW = {"space": "cosine", "sync_threshold": 2, "batch_size": 2}

SIMILARITY_WEIGHT, IMPORTANCE_WEIGHT = 0.7, 0.3
# The floor applies to similarity. The seeds' 0.6 was set for large API embedders; with MiniLM a
# question and the fact answering it have a median cosine of 0.46 on the built-in suite, and small talk
# reaches 0.28 at p90, so the offline default is 0.3 (notebook 5 shows the trade-off).
DEFAULT_FLOOR = 0.3
OPEN_END = 1e18  # Chroma metadata has no None: a current fact's valid_to is stored as this
# The two parts of a user's collection: the tag that prefixes an item's Chroma id and is its metadata "part"
TAGS = {"facts": "f", "episodes": "e"}
PARTS = {tag: part for part, tag in TAGS.items()}
LEGACY_PARTS = ("facts", "episodes", "history")  # collections per part, before one collection per user


def rank_score(similarity: float, importance: float, weights: tuple[float, float]) -> float:
    """The ranking score: ``w_sim * similarity + w_imp * importance`` (0.7/0.3 by default)."""
    return weights[0] * similarity + weights[1] * importance


def _meta(f: Fact) -> dict[str, Any]:
    return {"part": TAGS["facts"], "user_id": f.user_id, "kind": f.kind, "key": f.key or "", "value": f.value or "",
            "importance": float(f.importance), "source": json.dumps(list(f.source)),
            "created_at": f.created_at, "valid_from": f.valid_from,
            "valid_to": OPEN_END if f.valid_to is None else f.valid_to, "superseded_by": f.superseded_by or ""}


def _cid(part: str, item_id: str) -> str:
    """An item's id in its user's collection: its part's tag and its own id (a fact and an episode never clash)."""
    return f"{TAGS[part]}:{item_id}"


def _item(cid: str) -> tuple[str, str]:
    """The part and own id of an item in its user's collection (the reverse of ``_cid``)."""
    tag, item_id = cid.split(":", 1)
    return PARTS[tag], item_id


def _fact(cid: str, doc: str, m: dict[str, Any]) -> Fact:
    return Fact(id=_item(cid)[1], user_id=m["user_id"], text=doc, kind=m["kind"], key=m["key"] or None,
                value=m["value"] or None, importance=m["importance"], source=tuple(json.loads(m["source"])),
                created_at=m["created_at"], valid_from=m["valid_from"],
                valid_to=None if m["valid_to"] >= OPEN_END else m["valid_to"],
                superseded_by=m["superseded_by"] or None)


class FactStore:
    """Facts per user in Chroma. Build with ``ephemeral()``, ``persistent(path)`` or ``http(host, port)``."""

    def __init__(self, client: Any, embedder: Any = None, namespace: str = "memkit", backend: str = "custom",
                 records: Records | None = None, embed_batch: int = EMBED_BATCH, log: EventLog | None = None,
                 max_users: int = MAX_USERS) -> None:
        self.client = client
        self.records = records or Records()
        self.log = log or EventLog.sqlite(self.records)
        self.lexicon = LexicalIndex(_index_folder(self.records.path), self.records.index_lock)
        if not self.lexicon.filled:  # new, missing or damaged, or written by an older memkit: filled from the records
            self.lexicon.fill(itertools.chain(
                ((owner, "facts", ref, text) for owner, ref, text in self.log.all_facts()),
                ((owner, "episodes", e.id, episode_text(e)) for owner, e in self.records.embedded())))
            self.records.drop_fts()  # and the facts-only index an older memkit kept beside them
            if self.records.path != ":memory:":
                shutil.rmtree(Path(self.records.path).with_suffix(".facts-index"), ignore_errors=True)
            self.lexicon.mark_filled()
        self.embed_batch = embed_batch
        self._locks: dict[str, threading.Lock] = {}  # per owner: plan-and-apply
        self._batch_locks: dict[str, threading.Lock] = {}  # per owner: an embedding batch
        self._locks_guard = threading.Lock()
        self.embedder = embedder or _embed.shared_embedder()
        self.namespace = namespace
        self.backend = backend
        self.dimension = _embed.embedder_dimension(self.embedder)
        self.max_users = validate.positive_int("max_users", max_users)
        self._collections: OrderedDict[str, Any] = OrderedDict()  # an LRU of collection handles
        self._collections_guard = threading.Lock()
        self._closed = False
        if backend in ("persistent", "http"):
            try:
                self.replay()  # what a crash or an outage left logged but not applied
            except StoreUnavailable:
                pass  # stays logged; Memory.flush() or the next open applies it

    @classmethod
    def ephemeral(cls, embedder: Any = None) -> "FactStore":
        """In-process and in memory; gone when the process ends. For tests and notebooks, not for users' data."""
        # Every EphemeralClient in a process shares one system: a random namespace keeps stores apart.
        return cls(chromadb.EphemeralClient(), embedder, namespace=f"mk{uuid.uuid4().hex[:8]}", backend="ephemeral")

    @classmethod
    def persistent(cls, path: str, embedder: Any = None, namespace: str = "memkit",
                   max_users: int = MAX_USERS) -> "FactStore":
        """On disk at ``path`` (Chroma ``PersistentClient``), for one process.

        Chroma's embedded store is not safe across processes, so the folder is locked for this process:
        another process that opens it gets ``StoreLocked`` (several processes: ``chroma run`` and ``http``).
        At most ``max_users`` users' indexes stay loaded (least recently used evicted), which bounds memory;
        a user read after eviction loads again from disk. It applies to the first client of a folder in a process.
        """
        validate.positive_int("max_users", max_users)
        folder = Path(path)
        if folder.exists() and not folder.is_dir():
            raise StorePathError(f"{folder} is a file; FactStore.persistent needs a folder (it is created if missing)")
        try:
            folder.mkdir(parents=True, exist_ok=True)
            _lock_folder(folder)
        except PermissionError as e:
            raise StorePathError(f"cannot write to {folder} ({e.strerror}); choose a folder you can write to") from None
        except (NotADirectoryError, FileExistsError):
            parent = next((p for p in folder.parents if p.exists() and not p.is_dir()), folder.parent)
            raise StorePathError(f"{folder} lies under {parent}, which is a file; FactStore.persistent needs a "
                                 f"folder path") from None
        _raise_open_file_limit()
        with _translated("persistent"), _hnsw_cache(max_users):  # one index per user
            client = chromadb.PersistentClient(path=str(path))
        return cls(client, embedder, namespace, backend="persistent", records=Records(Path(path) / f"{namespace}.sqlite3"),
                   max_users=max_users)

    @classmethod
    def http(cls, host: str = "localhost", port: int = 8000, embedder: Any = None, namespace: str = "memkit",
             records: str | Path | None = None, log: str | None = None) -> "FactStore":
        """A ``chroma run`` server (Chroma ``HttpClient``); ``StoreUnavailable`` if it does not answer.

        ``records`` is the SQLite file of the episodes and the lexical index, and of the event log and
        profile unless ``log`` names a PostgreSQL database (docs/architecture.md §2). By default
        ``~/.memkit/records-<host>-<port>-<namespace>.sqlite3``, so every process of this machine that talks to
        the same server shares it. App processes on several machines share one log, profile and per-user
        lock through ``log="postgresql://..."`` (``pip install 'memkit[postgres]'``).
        """
        with _translated(f"Chroma server at {host}:{port}"):
            client = chromadb.HttpClient(host=host, port=port)
        if records is None:
            folder = Path.home() / ".memkit"
            folder.mkdir(parents=True, exist_ok=True)
            records = folder / f"records-{re.sub(r'[^A-Za-z0-9._-]', '_', host)}-{port}-{namespace}.sqlite3"
        return cls(client, embedder, namespace, backend="http", records=Records(records),
                   log=EventLog.postgres(log, namespace) if log else None)

    # ---- collections -------------------------------------------------------------------------
    def collection_name(self, user_id: str) -> str:
        """The Chroma collection that holds ``user_id``'s current facts and episodes (a hash: ids never reach
        Chroma as-is)."""
        return self._name(validate.user_id(user_id), "user")

    def _name(self, user_id: str, part: str) -> str:
        return f"{self.namespace}-{part}-{self.owner(user_id)}"

    def owner(self, user_id: str) -> str:
        """The hash that names ``user_id``'s collection and owns its SQLite rows."""
        return hashlib.sha256(validate.user_id(user_id).encode("utf-8", "surrogatepass")).hexdigest()[:40]

    def _open(self, user_id: str, create: bool) -> Any:
        """The user's collection (None if it does not exist and ``create`` is false)."""
        if self._closed:
            raise StoreClosed("this FactStore was closed; open a new one")
        user_id = validate.user_id(user_id)
        name = self._name(user_id, "user")
        with self._collections_guard:
            if name in self._collections:
                self._collections.move_to_end(name)
                return self._collections[name]
        meta = {"user_id": user_id, "dimension": self.dimension, "embedder": self._embedder_id()}
        legacy = None
        with _translated(self.backend):
            try:
                col = self.client.get_collection(name)
            except (NotFoundError, ValueError):
                legacy = self._legacy(user_id)
                if not create and not legacy:
                    return None
                for part, old in legacy.items():  # checked before anything is made: a refused move changes nothing
                    self._check_collection(user_id, old, vectors=part in TAGS)
                col = self.client.get_or_create_collection(
                    name, embedding_function=self.embedder, configuration={"hnsw": HNSW},
                    metadata={**meta, "moving": True} if legacy else meta)
            self._check_collection(user_id, col)
            if (col.metadata or {}).get("moving"):  # a move to this layout, begun here or cut short before
                self._move(user_id, self._legacy(user_id) if legacy is None else legacy, col)
                col.modify(metadata={k: v for k, v in col.metadata.items() if k != "moving"})
        with self._collections_guard:
            self._collections[name] = col
            while len(self._collections) > self.max_users:
                self._collections.popitem(last=False)
        return col

    def _check_collection(self, user_id: str, col: Any, vectors: bool = True) -> None:
        meta = col.metadata or {}
        if meta.get("user_id") != user_id:
            raise IsolationError(f"collection {col.name} belongs to another user id (hash collision or tampering)")
        if vectors and meta.get("dimension") != self.dimension:
            raise DimensionMismatch(
                f"the facts of user {user_id!r} were embedded by {meta.get('embedder')} with dimension "
                f"{meta.get('dimension')}, but this store's embedder {self._embedder_id()} gives {self.dimension}. "
                "Embeddings of different models cannot share a collection. To migrate, open a store with the old "
                "embedder and one with the new embedder under another namespace (FactStore(..., namespace='v2')) "
                "and call old.copy_user(user_id, new), which re-embeds every fact and its history.")

    def _legacy(self, user_id: str) -> dict[str, Any]:
        """The user's collections of the layout with one collection per part, if any are left."""
        found = {}
        for part in LEGACY_PARTS:
            try:
                found[part] = self.client.get_collection(self._name(user_id, part), embedding_function=None)
            except (NotFoundError, ValueError):
                pass
        return found

    def _move(self, user_id: str, legacy: dict[str, Any], col: Any, page: int = 1000) -> None:
        """Copy the user's facts and episodes, vectors included, from their collections per part into ``col``
        (ids tagged by part), then drop the old collections (the history one held nothing since the event log).
        Copies are upserts: a move cut short and begun again copies the same items again, loses none."""
        for part, old in legacy.items():
            for offset in itertools.count(0, page) if part in TAGS else ():
                batch = old.get(include=["documents", "metadatas", "embeddings"], limit=page, offset=offset)
                if batch["ids"]:
                    col.upsert(ids=[_cid(part, i) for i in batch["ids"]], documents=batch["documents"],
                               embeddings=batch["embeddings"],
                               metadatas=[{**m, "part": TAGS[part]} for m in batch["metadatas"]])
                if len(batch["ids"]) < page:  # the last page: no read past it
                    break
        for part in legacy:
            try:
                self.client.delete_collection(self._name(user_id, part))
            except NotFoundError:
                pass  # another process moved it first

    def warm(self, user_id: str, session: str | None = None) -> None:
        """Load the user's index now (``Memory.session`` calls this in the background, for the session that
        opened): embed what other sessions left pending, and touch the collection with a one-result query,
        which makes Chroma load it from disk."""
        self.embed_pending(user_id, but_session=session)
        self.profile(user_id, limit=32)  # the profile rows a first read takes, into SQLite's page cache
        col = self._open(user_id, create=False)
        if col is not None:
            with _translated(self.backend):
                col.query(query_embeddings=[[1.0] + [0.0] * (self.dimension - 1)], n_results=1, include=[])

    def _embedder_id(self) -> str:
        return f"{self.embedder.name()}:{getattr(self.embedder, 'model_id', '')}"

    # ---- facts -------------------------------------------------------------------------------
    def upsert(self, user_id: str, facts: Sequence[Fact]) -> None:
        """Insert or replace ``facts`` (by id) for ``user_id``; every fact must belong to that user."""
        if not facts:
            self._open(user_id, create=True)
            return
        self._change(user_id, facts, [])

    def get(self, user_id: str, ids: Sequence[str] | None = None, where: dict[str, Any] | None = None,
            include_superseded: bool = False) -> list[Fact]:
        """The user's current facts, oldest first; with ``include_superseded``, also the versions they replaced."""
        where = self._facts(where)
        col = self._open(user_id, create=False)
        if col is None:
            return []
        with _translated(self.backend):
            res = col.get(ids=[_cid("facts", i) for i in ids] if ids is not None else None, where=where,
                          include=["documents", "metadatas"])
        facts = [self._own(user_id, _fact(i, d, m)) for i, d, m in zip(res["ids"], res["documents"], res["metadatas"])]
        if include_superseded:  # the closed versions, from the log
            wanted = set(ids) if ids is not None else None
            have = {x.id for x in facts}
            facts += [f for f in fold(self.history(user_id)).values() if f is not None and f.valid_to is not None
                      and f.id not in have and (wanted is None or f.id in wanted)]
        return sorted(facts, key=lambda f: (f.created_at, f.id))

    def delete(self, user_id: str, ids: Sequence[str]) -> None:
        """Remove facts by id from ``user_id``'s collection (only theirs: other ids match nothing)."""
        self._change(user_id, [], ids)

    def _change(self, user_id: str, facts: Sequence[Fact], ids: Sequence[str]) -> None:
        """Upsert ``facts``, then delete ``ids``: in Chroma, then in the lexical index (one commit for both), then
        in the profile."""
        col = self._open(user_id, create=True) if facts else self._open(user_id, create=False)
        ids = list(ids) if col is not None else []
        if not facts and not ids:
            return
        for f in facts:
            if f.user_id != user_id:
                raise IsolationError(f"fact {f.id} belongs to {f.user_id!r}, not {user_id!r}")
        if facts:
            vectors = self.embedder([f.text for f in facts])
            with _translated(self.backend, pending=tuple(facts)):
                col.upsert(ids=[_cid("facts", f.id) for f in facts], documents=[f.text for f in facts],
                           embeddings=[list(map(float, v)) for v in vectors], metadatas=[_meta(f) for f in facts])
        if ids:
            with _translated(self.backend):
                col.delete(ids=[_cid("facts", i) for i in ids])
        owner = self.owner(user_id)
        self.lexicon.change(owner, "facts", [(f.id, f.text) for f in facts], ids)
        self.log.put_profile(owner, facts)
        self.log.drop_profile(owner, ids)

    def profile(self, user_id: str, limit: int | None = None, ids: Sequence[str] | None = None,
                keys: Sequence[str] | None = None) -> list[Fact]:
        """The user's current facts as the maintained profile holds them (no Chroma read): the ``limit`` most
        important, or those with the given ids or keys (docs/architecture.md §2)."""
        if self._closed:
            raise StoreClosed("this FactStore was closed; open a new one")
        return self.log.profile(self.owner(user_id), validate.user_id(user_id), limit, ids, keys)

    def count(self, user_id: str, include_superseded: bool = False) -> int:
        return len(self.get(user_id, include_superseded=include_superseded))

    def search(self, user_id: str, query: str, k: int = 5, min_score: float = DEFAULT_FLOOR,
               where: dict[str, Any] | None = None,
               weights: tuple[float, float] = (SIMILARITY_WEIGHT, IMPORTANCE_WEIGHT)) -> list[Hit]:
        """The user's facts closest to ``query``: similarity = 1 - cosine distance (higher is closer).

        Hits whose similarity is below ``min_score`` (the floor) are dropped; the rest are ranked by
        ``score = weights[0] * similarity + weights[1] * importance`` (0.7/0.3) and the top ``k`` returned.
        """
        where = self._where(where)
        query = validate.query(query)
        k = validate.positive_int("k", k)
        col = self._open(user_id, create=False)
        if col is None or not query.strip():
            return []
        vector = list(map(float, self.embedder([query])[0]))
        # the nearest ``want`` facts: ids and distances of more items than that (the user's episodes share the
        # collection), more again if too few were facts, then the facts' rows from the maintained profile. Not
        # by a ``part`` filter: Chroma's filtered query fails ("Error finding id") on an index it evicted and
        # loaded again (docs/architecture.md §2)
        want = max(k * 3, 10)
        n = 8 * want
        while True:
            with _translated(self.backend):
                res = col.query(query_embeddings=[vector], n_results=n, where=where, include=["distances"])
            items = (_item(cid) + (1.0 - float(d),) for cid, d in zip(res["ids"][0], res["distances"][0]))
            sims = {item_id: sim for part, item_id, sim in items if part == "facts"}
            if len(sims) >= want or len(res["ids"][0]) < n:
                break
            n *= 4
        top = dict(list(sims.items())[:want])
        hits = [Hit(f, top[f.id], rank_score(top[f.id], f.importance, weights)) for f in self.profile(user_id, ids=list(top))]
        hits.sort(key=lambda h: -h.score)
        return [h for h in hits if h.similarity >= min_score][:k]

    @staticmethod
    def _where(where: dict[str, Any] | None) -> dict[str, Any] | None:
        if where and _names_user(where):
            raise IsolationError("a where clause may not name user_id: the store scopes every call to one user")
        return where or None

    @classmethod
    def _facts(cls, where: dict[str, Any] | None) -> dict[str, Any]:
        """A caller's filter, limited to the facts of the user's collection (for ``get``, which reads metadata
        and no index)."""
        part = {"part": TAGS["facts"]}
        where = cls._where(where)
        return {"$and": [part, where]} if where else part

    @staticmethod
    def _own(user_id: str, fact: Fact) -> Fact:
        if fact.user_id != user_id:  # defence in depth: a per-user collection never holds another user's row
            raise IsolationError(f"row {fact.id} of {fact.user_id!r} found in {user_id!r}'s collection")
        return fact

    # ---- episodes ----------------------------------------------------------------------------
    def add_episode(self, user_id: str, episode: Episode, extract: bool = False) -> Episode:
        """Keep an observed turn: recorded now, embedded and indexed lexically in a batch (docs/architecture.md §2).
        With ``extract`` the record says, in the same commit, that its facts are still to be extracted, until
        ``extracted`` settles it: a turn whose extraction waits for the model survives the process."""
        if episode.user_id != user_id:
            raise IsolationError(f"episode of {episode.user_id!r} offered to {user_id!r}")
        if self._closed:
            raise StoreClosed("this FactStore was closed; open a new one")
        owner = self.owner(user_id)
        stored = self.records.add_episode(owner, episode, extract)
        if self.records.count_episodes(owner, pending=True) >= self.embed_batch:
            self.embed_pending(user_id)
        return stored

    def embed_pending(self, user_id: str, but_session: str | None = None) -> int:
        """Embed the user's episodes that are recorded but not yet in Chroma, and index them lexically (one
        commit), leaving ``but_session``'s pending (a reader's own session: its turns are in its window or
        summary, never recalled as episodes); returns how many."""
        owner = self.owner(user_id)
        with self._locks_guard:
            lock = self._batch_locks.setdefault(owner, threading.Lock())
        with lock:  # a read and a session's warm-up at once: one batch, the other finds nothing left
            return self._embed_pending(owner, user_id, but_session)

    def _embed_pending(self, owner: str, user_id: str, but_session: str | None) -> int:
        pending = self.records.episodes(owner, user_id, pending=True, but_session=but_session)
        if not pending:
            return 0
        col = self._open(user_id, create=True)
        texts = [episode_text(e) for e in pending]
        vectors = self.embedder(texts)
        with _translated(self.backend):
            col.upsert(ids=[_cid("episodes", e.id) for e in pending], documents=texts,
                       embeddings=[list(map(float, v)) for v in vectors],
                       metadatas=[{"part": TAGS["episodes"], "user_id": user_id, "session_id": e.session_id, "turn_id": e.turn_id,
                                   "speaker": e.speaker, "time": e.time} for e in pending])
        self.lexicon.change(owner, "episodes", [(e.id, t) for e, t in zip(pending, texts)])
        self.records.mark_embedded(owner, [e.id for e in pending])
        return len(pending)

    # ---- what waits for a model or for the store (the durable retry queue, in the records) -------------------
    def to_extract(self) -> list[Episode]:
        """Turns of every user whose extraction is not settled (the model was down, or the process died)."""
        if self._closed:
            raise StoreClosed("this FactStore was closed; open a new one")
        return self.records.to_extract()

    def extracted(self, user_id: str, episode_id: str) -> None:
        """The turn's extraction is settled: its facts are written or waiting, or its failure was reported."""
        self.records.extracted(self.owner(user_id), episode_id)

    def wait(self, user_id: str, cands: Sequence[Candidate], time: float | None) -> None:
        """Keep candidate facts whose planning met an outage, for a later ``Memory.flush()``."""
        self.records.wait(self.owner(user_id), validate.user_id(user_id), cands, time)

    def waiting(self) -> list[tuple[int, str, list[Candidate], float | None]]:
        """``(id, user_id, candidates, time)`` of every write waiting to be planned, oldest first."""
        if self._closed:
            raise StoreClosed("this FactStore was closed; open a new one")
        return self.records.waiting()

    def written(self, user_id: str, wait_id: int) -> None:
        """A waiting write was planned and applied: forget it."""
        self.records.written(self.owner(user_id), wait_id)

    def episodes(self, user_id: str, ids: Sequence[str] | None = None) -> list[Episode]:
        """The user's episodes (all, or by id), in the order they were observed."""
        return self.records.episodes(self.owner(user_id), user_id, ids)

    def neighbours(self, user_id: str, episode: Episode, span: int = 1) -> list[Episode]:
        """The turns around ``episode`` in its session."""
        return self.records.neighbours(self.owner(user_id), user_id, episode, span)

    def embed_query(self, query: str) -> list[float]:
        """The query's vector, computed once and shared by the dense searches of one read."""
        return list(map(float, self.embedder([query])[0]))

    def dense(self, user_id: str, vector: Sequence[float], depths: dict[str, int],
              session: str | None = None) -> dict[str, list[tuple[str, float]]]:
        """``(id, similarity)`` of the user's items nearest to ``vector``, closest first, per part: one query
        for ``sum(depths)`` items of both parts, of which each part keeps at most its own depth (so with
        ``{"facts": 100}`` alone, the facts among the nearest 100 items). A reader in ``session`` does not
        wait for that session's pending turns (``embed_pending``)."""
        unknown = set(depths) - set(TAGS)
        if unknown:
            raise ValueError(f"unknown parts {sorted(unknown)}; choose from {sorted(TAGS)}")
        if "episodes" in depths:
            self.embed_pending(user_id, but_session=session)  # a read never misses another session's turn
        found: dict[str, list[tuple[str, float]]] = {part: [] for part in depths}
        n = sum(max(k, 0) for k in depths.values())
        col = self._open(user_id, create=False)
        if col is None or n <= 0:
            return found
        with _translated(self.backend):
            # ids and distances only (metadata would triple the cost): the rows are read afterwards from the
            # profile or the episode records, which check their owner
            res = col.query(query_embeddings=[list(vector)], n_results=n, include=["distances"])
        for cid, dist in zip(res["ids"][0], res["distances"][0]):
            part, item_id = _item(cid)
            if part in found and len(found[part]) < depths[part]:
                found[part].append((item_id, 1.0 - float(dist)))
        return found

    def lexical(self, user_id: str, part: str, query: str, k: int,
                session: str | None = None) -> list[tuple[str, float]]:
        """``(id, bm25)`` of the user's ``facts`` or ``episodes`` that share words with ``query``, best first.
        A reader in ``session`` does not wait for that session's pending turns (``embed_pending``)."""
        if part not in TAGS:
            raise ValueError(f"unknown part {part!r}; choose from {sorted(TAGS)}")
        if self._closed:
            raise StoreClosed("this FactStore was closed; open a new one")
        if part == "episodes":
            self.embed_pending(user_id, but_session=session)  # a read never misses another session's turn
        return self.lexicon.search(self.owner(user_id), part, query, k)

    # ---- event log and history ---------------------------------------------------------------
    def apply(self, user_id: str, events: Sequence[Event]) -> None:
        """Log ``events`` (write-ahead), change the fact index, then mark them applied (docs/architecture.md §2)."""
        self._check_events(user_id, events)
        seqs = self.log.append(self.owner(user_id), events)
        self._effect(user_id, events)
        self.log.mark_applied(self.owner(user_id), seqs)

    def record(self, user_id: str, events: Sequence[Event]) -> None:
        """Append events that change nothing in the index (NOOP, ERROR, copied history) to the log."""
        self._check_events(user_id, events)
        seqs = self.log.append(self.owner(user_id), events)
        self.log.mark_applied(self.owner(user_id), seqs)

    def replay(self) -> list[Event]:
        """Apply logged events whose change never reached the index (a crash, an outage), in sequence order,
        with their original times; never planned again. Returns what was applied."""
        done = []
        for seq, e in self.log.unapplied():
            # under the user's lock, and checked again inside it: an event unapplied only because its writer
            # (another thread or process) is still applying it is left to that writer
            with self.user_lock(e.user_id):
                if self.log.applied(seq):
                    continue
                self._effect(e.user_id, [e])
                self.log.mark_applied(self.owner(e.user_id), [seq])
            done.append(e)
        return done

    def _effect(self, user_id: str, events: Sequence[Event]) -> None:
        # what the events leave current is upserted; a deleted or closed version leaves the search collection
        # (its closed version lives on in the log)
        state = fold(events)
        now_current = current(state)
        self._change(user_id, now_current, [i for i in state if i not in {f.id for f in now_current}])

    def _check_events(self, user_id: str, events: Sequence[Event]) -> None:
        validate.user_id(user_id)
        if self._closed:
            raise StoreClosed("this FactStore was closed; open a new one")
        for e in events:
            if e.user_id != user_id:
                raise IsolationError(f"event {e.id} belongs to {e.user_id!r}, not {user_id!r}")

    def history(self, user_id: str, fact_id: str | None = None) -> list[Event]:
        """The user's events in the order they were acknowledged, optionally for one fact."""
        if self._closed:
            raise StoreClosed("this FactStore was closed; open a new one")
        return self.log.events(self.owner(user_id), user_id, fact_id)

    @contextmanager
    def user_lock(self, user_id: str) -> Iterator[None]:
        """Serialise one user's plan-and-apply: across threads, and across processes sharing the records file."""
        owner = self.owner(user_id)
        with self._locks_guard:
            lock = self._locks.setdefault(owner, threading.Lock())
        with lock, self.log.owner_lock(owner):
            yield

    def as_of(self, user_id: str, t: "float | datetime") -> list[Fact]:
        """The user's facts as they were at time ``t`` (seconds since the epoch, or a ``datetime``), replayed from
        the history."""
        t = validate.time_point("t", t)
        state = fold(e for e in self.history(user_id) if e.time <= t)
        return [f for f in state.values() if f is not None and (f.valid_to is None or f.valid_to > t)]

    def copy_user(self, user_id: str, target: "FactStore") -> int:
        """Re-embed ``user_id``'s facts and history into ``target`` (a migration path); returns facts copied."""
        facts = self.get(user_id)
        target.upsert(user_id, facts)
        target.record(user_id, self.history(user_id))
        return len(facts)

    def drop_user(self, user_id: str) -> None:
        """Forget everything about ``user_id``: facts, episodes, lexical rows and history."""
        self.records.drop_owner(self.owner(user_id))
        self.lexicon.drop(self.owner(user_id), list(TAGS))
        self.log.drop(self.owner(user_id))
        with _translated(self.backend):
            for part in ("user",) + LEGACY_PARTS:
                name = self._name(user_id, part)
                try:
                    self.client.delete_collection(name)
                except NotFoundError:
                    pass
                with self._collections_guard:
                    self._collections.pop(name, None)

    def close(self) -> None:
        """Release the client; every later call raises ``StoreClosed``."""
        self._closed = True
        self._collections.clear()
        self.lexicon.close()
        self.records.close()
        self.log.close()
        closer = getattr(self.client, "close", None)
        if callable(closer) and self.backend == "persistent":
            closer()


_FOLDER_LOCKS: dict[str, int] = {}


def _index_folder(records: str) -> Path | None:
    """Where the lexical index of a records file lives: beside it (``memkit.sqlite3`` -> ``memkit.lexical``)."""
    return None if records == ":memory:" else Path(records).with_suffix(".lexical")


def _lock_folder(folder: Path) -> None:
    """Hold a lock on ``folder`` for this process's lifetime; another process holding it: ``StoreLocked``."""
    key = str(folder.resolve())
    if key in _FOLDER_LOCKS:
        return  # this process already holds it (POSIX record locks belong to the process)
    try:
        import fcntl
    except ImportError:  # Windows: no advisory lock; Chroma's own file locks remain
        return
    fd = os.open(folder / ".memkit.lock", os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        os.close(fd)
        raise StoreLocked(
            f"{folder} is open in another process. Chroma's embedded store is not safe across processes: run "
            f"`memkit serve {folder}` (Chroma's server with a bounded index cache) and open it from every process "
            f"with FactStore.http(host, port, records=<shared sqlite file>)") from None
    _FOLDER_LOCKS[key] = fd


def episode_text(e: Episode) -> str:
    """What the dense channel embeds for an episode: speaker and words (the lexical index sees the same)."""
    return f"{e.speaker}: {e.content}"


@contextmanager
def _hnsw_cache(indexes: int) -> Iterator[None]:
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
        _raise_open_file_limit()


def _raise_open_file_limit() -> None:
    """Each loaded index keeps its files open: raise the soft open-file limit to the hard one, as far as allowed."""
    try:
        import resource

        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        target = hard if hard != resource.RLIM_INFINITY else 1 << 20
        if soft < target:
            resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
    except (ImportError, ValueError, OSError):  # Windows, or a sandbox that refuses: keep the default
        pass


def _names_user(where: Any) -> bool:
    if isinstance(where, dict):
        return any(k == "user_id" or _names_user(v) for k, v in where.items())
    if isinstance(where, list):
        return any(_names_user(x) for x in where)
    return False


@contextmanager
def _translated(what: str, pending: tuple = ()) -> Iterator[None]:
    """Turn a backend's connection failures into ``StoreUnavailable`` (carrying what was not written)."""
    try:
        yield
    except MemkitError:
        raise
    except (httpx.TransportError, ConnectionError) as e:
        raise StoreUnavailable(f"{what} is unreachable: {e}", pending) from e
    except ValueError as e:
        if "Could not connect" in str(e):
            raise StoreUnavailable(f"{what} is unreachable: {e}", pending) from e
        raise
