"""``FactStore``: the semantic layer's store, composed of a vector index, a text index, the records and the
event log (docs/architecture.md §2 and §8), and where user isolation is enforced.

It does no part's work and no part calls back into it: the owner hash is computed once per call and handed
down, the closed check lives in one place, and a dense or lexical read embeds the episodes other sessions left
pending (``embed_pending``) before it asks the index, never from inside it. Superseded versions live in the
event log, where ``as_of`` and ``get(include_superseded=True)`` find them. There is no cross-user query.
"""

from __future__ import annotations

import shutil
import threading
from contextlib import AbstractContextManager, contextmanager, nullcontext
from datetime import datetime
from pathlib import Path
from typing import Any, Iterator, Sequence

from ..models import embed as _embed
from .. import validate
from ..errors import ConfigError, IsolationError, StoreClosed, StoreUnavailable
from ..types import Episode, Event, Fact, Hit, fold
from .base import (BULK_SIZE, DEFAULT_FLOOR, EMBED_BATCH, IMPORTANCE_WEIGHT, PARTS, SIMILARITY_WEIGHT, Capability,
                   TextIndex, VectorIndex, capabilities, check_parts, check_where, matches, owner_of, text_rows)
from . import backends, health
from .chroma import MAX_USERS
from .archive import EpisodeArchive
from .facts import FactIndex
from .lexicon import LexicalIndex
from .log import EventLog
from .queue import RetryQueue
from .records import Records


class FactStore:
    """Facts and episodes per user. Build with ``ephemeral()``, ``persistent(path)``, ``http(host, port)`` or
    ``postgres(url)``."""

    def __init__(self, vectors: VectorIndex, records: Records, log: EventLog | None = None,
                 text: TextIndex | None = None, embedder: Any = None, backend: str = "custom",
                 embed_batch: int = EMBED_BATCH, verify: bool = True) -> None:
        """``verify`` False opens a store whose parts disagree (``memkit store check|repair``; ``health.py``)."""
        self.vectors, self.records, self.backend = vectors, records, backend
        self.log = log or EventLog(records.db)
        self.embedder = embedder or _embed.shared_embedder()
        self.dimension = vectors.dimension
        self.lexicon = text or LexicalIndex(_index_folder(records.path), records.index_lock)
        self._locks: dict[str, threading.Lock] = {}  # per owner: plan-and-apply
        self._locks_guard = threading.Lock()
        self._closed = False
        # parts in one database (PostgreSQL) write in one transaction; parts in several systems cannot
        self._shared = Capability.DATABASE in capabilities(vectors) and vectors.db is records.db  # type: ignore[attr-defined]
        self.queue = RetryQueue(records, self._check_open)  # what waits for a model or for the store
        self.facts = FactIndex(vectors, self.lexicon, self.log, self.embedder, self._unit)
        self.archive = EpisodeArchive(records, vectors, self.lexicon, self.embedder, self._unit, embed_batch)
        try:
            _open_once(self, verify)
        except BaseException:
            self.close()
            raise

    def _unit(self) -> AbstractContextManager[Any]:
        """One transaction around a write's parts, when they share a database."""
        return self.records.db.transaction() if self._shared else nullcontext()

    # ---- constructors -------------------------------------------------------------------------
    @classmethod
    def ephemeral(cls, embedder: Any = None) -> "FactStore":
        """In-process and in memory; gone when the process ends. For tests and notebooks, not for users' data."""
        return cls(**backends.ephemeral(embedder or _embed.shared_embedder()))

    @classmethod
    def persistent(cls, path: str, embedder: Any = None, namespace: str = "memkit",
                   max_users: int = MAX_USERS) -> "FactStore":
        """On disk at ``path`` (Chroma ``PersistentClient``), for one process.

        Chroma's embedded store is not safe across processes, so the folder is locked for this process:
        another process that opens it gets ``StoreLocked`` (several processes: ``chroma run`` and ``http``,
        or ``postgres``). At most ``max_users`` users' indexes stay loaded (least recently used evicted), which
        bounds memory; a user read after eviction loads again from disk.
        """
        return cls(**backends.persistent(path, embedder or _embed.shared_embedder(), namespace, max_users))

    @classmethod
    def http(cls, host: str = "localhost", port: int = 8000, embedder: Any = None, namespace: str = "memkit",
             records: str | Path | None = None, log: str | None = None) -> "FactStore":
        """A ``chroma run`` server (Chroma ``HttpClient``); ``StoreUnavailable`` if it does not answer.

        ``records`` is the SQLite file of the episodes and the lexical index, and of the event log and
        profile unless ``log`` names a PostgreSQL database (docs/architecture.md §2). By default
        ``~/.memkit/records-<host>-<port>-<namespace>.sqlite3``, so every process of this machine that talks to
        the same server shares it. Several machines: ``FactStore.postgres(url)`` keeps everything in one database.
        """
        return cls(**backends.http(host, port, embedder or _embed.shared_embedder(), namespace, records, log))

    @classmethod
    def postgres(cls, url: str, embedder: Any = None, namespace: str = "memkit") -> "FactStore":
        """The whole memory in one PostgreSQL database (``pip install 'memkit-lab[postgres]'``): vectors in pgvector,
        words in PostgreSQL's full-text search, the records, the event log, the profile and a per-user advisory
        lock. Every app process on every machine opens the same ``url``; no routing by user."""
        return cls(**backends.postgres(url, embedder or _embed.shared_embedder(), namespace))

    @classmethod
    def from_url(cls, url: str, embedder: Any = None, namespace: str = "memkit", **options: Any) -> "FactStore":
        """The store a URL names, the one way the command line, the benchmarks and the tests choose one:
        ``memory://`` (``ephemeral``), ``file://PATH`` (``persistent``), ``chroma://HOST:PORT`` (``http``),
        ``postgresql://...`` (``postgres``). ``options`` go to that constructor (``max_users``, ``records``,
        ``log``); ``StoreURLError`` names a URL of no such kind."""
        return cls(**backends.from_url(url, embedder or _embed.shared_embedder(), namespace, **options))

    # ---- owners ---------------------------------------------------------------------------------
    def owner(self, user_id: str) -> str:
        """The hash that owns ``user_id``'s rows and names their index."""
        return owner_of(user_id)

    def _owner(self, user_id: str) -> str:
        """Every call's entry: refused on a closed store, the user id checked and hashed once."""
        self._check_open()
        return owner_of(user_id)

    def collection_name(self, user_id: str) -> str:
        """The Chroma collection that holds ``user_id``'s items (Chroma backends only: ``ConfigError`` on others)."""
        if Capability.COLLECTIONS not in capabilities(self.vectors):
            raise ConfigError(f"a {self.backend} store keeps no Chroma collections; collection_name is for Chroma")
        return self.vectors.collection_name(self._owner(user_id))  # type: ignore[attr-defined]

    def warm(self, user_id: str, session: str | None = None, episodes: Sequence[str] | None = None) -> None:
        """Load the user's index now (``Memory.session``, in the background): embed what other sessions left pending
        (only ``episodes``, when given), read the profile rows a first read takes, touch the vector index."""
        owner = self._owner(user_id)
        self.archive.embed_pending(owner, user_id, session, episodes)
        self.log.profile(owner, user_id, 32)
        self.vectors.warm(owner, user_id)

    # ---- facts -------------------------------------------------------------------------------
    def upsert(self, user_id: str, facts: Sequence[Fact]) -> None:
        """Insert or replace ``facts`` (by id) for ``user_id``; every fact must belong to that user."""
        owner = self._owner(user_id)  # a user id is checked even when there is nothing to write
        if facts:
            self.facts.change(owner, user_id, facts, [])

    def get(self, user_id: str, ids: Sequence[str] | None = None, where: dict[str, Any] | None = None,
            include_superseded: bool = False) -> list[Fact]:
        """The user's current facts, oldest first (from the profile), filtered by ``ids`` and ``where`` (Chroma's
        filter language); with ``include_superseded``, also the versions they replaced (from the log)."""
        where = check_where(where)
        owner = self._owner(user_id)
        wanted = set(ids) if ids is not None else None
        facts = [f for f in self.log.profile(owner, user_id) if (wanted is None or f.id in wanted) and matches(where, f)]
        if include_superseded:  # the closed versions, from the log
            have = {x.id for x in facts}
            facts += [f for f in fold(self.log.events(owner, user_id)).values() if f is not None and f.valid_to is not None
                      and f.id not in have and (wanted is None or f.id in wanted) and matches(where, f)]
        return sorted(facts, key=lambda f: (f.created_at, f.id))

    def delete(self, user_id: str, ids: Sequence[str]) -> None:
        """Remove facts by id from ``user_id``'s index (only theirs: other ids match nothing)."""
        self.facts.change(self._owner(user_id), user_id, [], ids)

    def profile(self, user_id: str, limit: int | None = None, ids: Sequence[str] | None = None,
                keys: Sequence[str] | None = None, prefix: str | None = None) -> list[Fact]:
        """The user's current facts as the maintained profile holds them (no vector read): the ``limit`` most
        important, or those with the given ids or keys, or whose key starts with ``prefix`` (docs/architecture.md §2)."""
        return self.log.profile(self._owner(user_id), user_id, limit, ids, keys, prefix)

    def users(self) -> list[str]:
        """The ids of the users with a current fact (from the profile), sorted."""
        return self._check_open() or self.log.users()

    def count(self, user_id: str, include_superseded: bool = False) -> int:
        return len(self.get(user_id, include_superseded=include_superseded))

    def search(self, user_id: str, query: str, k: int = 5, min_score: float = DEFAULT_FLOOR,
               where: dict[str, Any] | None = None,
               weights: tuple[float, float] = (SIMILARITY_WEIGHT, IMPORTANCE_WEIGHT)) -> list[Hit]:
        """The user's facts closest to ``query`` (similarity = 1 - cosine distance): those at ``min_score`` or
        above that pass ``where``, the top ``k`` by ``weights[0] * similarity + weights[1] * importance``."""
        where = check_where(where)
        query = validate.query(query)
        k = validate.positive_int("k", k, validate.MAX_K)
        owner = self._owner(user_id)
        if not query.strip():
            return []
        return self.facts.search(owner, user_id, self.embed_query(query), k, min_score, where, weights)

    # ---- episodes ----------------------------------------------------------------------------
    def add_episode(self, user_id: str, episode: Episode, extract: bool = False) -> Episode:
        """Keep an observed turn: recorded now, embedded and indexed lexically in a batch (docs/architecture.md §2).
        With ``extract`` the record says, in the same commit, that its facts are still to be extracted, until
        ``extracted`` settles it: a turn whose extraction waits for the model survives the process."""
        return self.archive.add(self._owner(user_id), user_id, episode, extract)

    @contextmanager
    def bulk(self, size: int = BULK_SIZE) -> Iterator["FactStore"]:
        """Bulk mode, for a burst of writes (an import, a benchmark's ingest): observed turns wait in the records
        until ``size`` of them do, of any users, and are then embedded in one call, sorted by length, with one
        commit per user; what waits is embedded on leaving. A read meanwhile still embeds what it needs first.
        Left by an exception, the turns stay recorded and pending: the next read or ``embed_pending`` takes them."""
        self._check_open()
        with self.archive.bulk(validate.positive_int("size", size)):
            yield self

    def embed_pending(self, user_id: str, but_session: str | None = None) -> int:
        """Embed and index (one commit) the user's recorded episodes not yet indexed, but ``but_session``'s (a
        reader's own session: its turns are in its window or summary); returns how many."""
        return self.archive.embed_pending(self._owner(user_id), user_id, but_session)

    def pending_episodes(self, user_id: str, but_session: str | None = None) -> list[str]:
        """Ids of the user's recorded episodes not yet embedded, but ``but_session``'s, in the order observed."""
        return [e.id for e in self.records.episodes(self._owner(user_id), user_id, pending=True, but_session=but_session)]

    def episodes(self, user_id: str, ids: Sequence[str] | None = None) -> list[Episode]:
        """The user's episodes (all, or by id), in the order they were observed."""
        return self.records.episodes(self._owner(user_id), user_id, ids)

    def episodes_between(self, user_id: str, start: float, end: float, limit: int,
                         session: str | None = None) -> list[Episode]:
        """At most ``limit`` indexed episodes said from ``start`` to ``end``, oldest first, but ``session``'s."""
        return self.records.between(self._owner(user_id), user_id, start, end, limit, session)

    def neighbours(self, user_id: str, episode: Episode, span: int = 1) -> list[Episode]:
        """The turns around ``episode`` in its session."""
        return self.records.neighbours(self._owner(user_id), user_id, episode, span)

    def embed_query(self, query: str) -> list[float]:
        """The query's vector, computed once and shared by the dense searches of one read."""
        from ..models.embed import embed_queries

        return list(map(float, embed_queries(self.embedder, [query])[0]))

    def dense(self, user_id: str, vector: Sequence[float], depths: dict[str, int],
              session: str | None = None, caught_up: bool = False) -> dict[str, list[tuple[str, float]]]:
        """``(id, similarity)`` of the user's items nearest to ``vector``, closest first, per part: one query
        for ``sum(depths)`` items of both parts, of which each part keeps at most its own depth (so with
        ``{"facts": 100}`` alone, the facts among the nearest 100 items). A reader in ``session`` does not
        wait for its pending turns (``embed_pending``), nor look again when it ``caught_up`` (a read, once)."""
        check_parts(depths)
        owner = self._owner(user_id)
        if "episodes" in depths and not caught_up:
            self.archive.embed_pending(owner, user_id, session)  # a read never misses another session's turn
        found: dict[str, list[tuple[str, float]]] = {part: [] for part in depths}
        for part, item_id, sim in self.vectors.nearest(owner, user_id, vector, sum(max(k, 0) for k in depths.values())):
            if part in found and len(found[part]) < depths[part]:
                found[part].append((item_id, sim))
        return found

    def lexical(self, user_id: str, part: str, query: str, k: int,
                session: str | None = None, caught_up: bool = False) -> list[tuple[str, float]]:
        """``(id, score)`` of the user's ``facts`` or ``episodes`` that share words with ``query``, best first.
        A reader in ``session`` does not wait for its pending turns, nor look again when it ``caught_up`` (``dense``)."""
        check_parts({part: k})
        owner = self._owner(user_id)
        if part == "episodes" and not caught_up:
            self.archive.embed_pending(owner, user_id, session)  # a read never misses another session's turn
        return self.lexicon.search(owner, part, query, k)

    def _check_open(self) -> None:
        if self._closed:
            raise StoreClosed("the memory's store was closed (Memory.close(), leaving `with Memory()`, or "
                              "FactStore.close()); open a new one: Memory() for one in memory, or "
                              "Memory(store=FactStore.persistent(path)) to reopen a folder (also .http, .postgres)")

    # ---- event log and history ---------------------------------------------------------------
    def apply(self, user_id: str, events: Sequence[Event]) -> None:
        """Log ``events`` (write-ahead), change the fact index, then mark them applied (docs/architecture.md §2)."""
        owner = self._check_events(user_id, events)
        with self._unit():  # in one database, the three steps commit together; otherwise the log is ahead
            seqs = self.log.append(owner, events)
            self.facts.effect(owner, user_id, events)
            self.log.mark_applied(owner, seqs)

    def record(self, user_id: str, events: Sequence[Event]) -> None:
        """Append events that change nothing in the index (NOOP, ERROR, copied history) to the log."""
        owner = self._check_events(user_id, events)
        self.log.mark_applied(owner, self.log.append(owner, events))

    def replay(self) -> list[Event]:
        """Apply logged events whose change never reached the index (a crash, an outage), in sequence order,
        with their original times; never planned again. Returns what was applied."""
        return self.log.replay(lambda e: self.facts.effect(owner_of(e.user_id), e.user_id, [e]), self.user_lock)

    def _check_events(self, user_id: str, events: Sequence[Event]) -> str:
        owner = self._owner(user_id)
        for e in events:
            if e.user_id != user_id:
                raise IsolationError(f"event {e.id} belongs to {e.user_id!r}, not {user_id!r}")
        return owner

    def history(self, user_id: str, fact_id: str | None = None) -> list[Event]:
        """The user's events in the order they were acknowledged, optionally for one fact."""
        return self.log.events(self._owner(user_id), user_id, fact_id)

    @contextmanager
    def user_lock(self, user_id: str) -> Iterator[None]:
        """Serialise one user's plan-and-apply: across threads, and across processes sharing the records or log."""
        owner = self._owner(user_id)
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
        """Forget everything about ``user_id``: facts, episodes, both indexes, profile, history and what waited
        for a model or the store; on files, no page or segment keeps their text (docs/usage.md, "What memkit
        guarantees")."""
        _forget(self, self._owner(user_id), user_id)

    @property
    def closed(self) -> bool:
        return self._closed

    def close(self) -> None:
        """Release every part; every later call raises ``StoreClosed``."""
        self._closed = True
        self.vectors.close()
        self.lexicon.close()
        self.records.close()
        self.log.close()


def _open_once(store: FactStore, verify: bool) -> None:
    """What a store does when it opens, never on a read: move old layouts, check its parts agree, fill a new
    text index, replay."""
    if Capability.MIGRATE in capabilities(store.vectors):
        store.vectors.migrate()  # type: ignore[attr-defined]
    if verify:
        health.verify(store)  # StoreCorrupt, never an empty store in place of a damaged one
    if not store.lexicon.filled:  # new, missing or damaged, or written by an older memkit
        _fill(store.lexicon, store.records, store.log)
    if store.records.path != ":memory:":  # a store that outlives its process
        try:
            store.replay()  # what a crash or an outage left logged but not applied
        except StoreUnavailable:
            pass  # stays logged; Memory.flush() or the next open applies it


def _index_folder(records: str) -> Path | None:
    """Where the tantivy index of a records file lives: beside it (``memkit.sqlite3`` -> ``memkit.lexical``)."""
    return None if records == ":memory:" else Path(records).with_suffix(".lexical")


def _forget(store: FactStore, owner: str, user_id: str) -> None:
    """Drop one owner from every part; then, where the parts are files, leave no copy of the text: SQLite
    overwrites freed pages (``secure_delete``) and its write-ahead log is emptied, and a tantivy folder is
    written anew from what remains (docs/usage.md, "What memkit guarantees")."""
    store.records.drop_owner(owner)
    store.log.drop(owner)
    store.vectors.drop(owner, user_id)
    store.lexicon.drop(owner, list(PARTS))
    if isinstance(store.lexicon, LexicalIndex) and store.records.path != ":memory:":
        store.lexicon.rebuild(text_rows(store.records, store.log))
    for db in {id(store.records.db): store.records.db, id(store.log.db): store.log.db}.values():
        db.scrub()


def _fill(text: TextIndex, records: Records, log: EventLog) -> None:
    """Fill a text index from the truth it derives from (the profile and the embedded episodes), and drop what
    an older memkit kept for it (FTS5 tables, a facts-only folder)."""
    text.fill(text_rows(records, log))
    records.drop_fts()
    if records.path != ":memory:" and records.db.dialect.older_files:
        shutil.rmtree(Path(records.path).with_suffix(".facts-index"), ignore_errors=True)
    text.mark_filled()
