"""The event log and the profile it maintains (docs/architecture.md §2).

Append-only, a monotonic sequence number per event, written ahead of the change to the fact index and
marked applied after it. ``FactStore.apply`` appends the planned events (one transaction), changes the index,
then marks them applied; ``FactStore.replay`` applies what was logged but never marked, in sequence order
and with the original times, without planning again. History is read from here.

Beside the events lives the **profile**: one row per current fact of each user, kept in step with the fact
index by every change to it, so it is the fold of the user's applied events. The read path takes facts from
it by importance, by id or by key.

The SQL is written once, for both databases the connection seam (``memkit/store/sql.py``) opens: SQLite (the
store's records file, so one machine's processes share it) and PostgreSQL (every app process, on any machine,
shares one log, one profile and one per-user lock).
"""

from __future__ import annotations

import json
from contextlib import AbstractContextManager
from functools import lru_cache
from typing import Any, Callable, Iterator, Sequence

from ..errors import IsolationError
from ..types import Event, EventKind, Fact, current, fold
from .base import owner_of
from .sql import Database

_TABLES = """CREATE TABLE IF NOT EXISTS events (
  seq {serial} PRIMARY KEY, owner TEXT NOT NULL, id TEXT NOT NULL UNIQUE, user_id TEXT NOT NULL,
  fact_id TEXT, kind TEXT NOT NULL, time DOUBLE PRECISION NOT NULL, body TEXT NOT NULL,
  applied INTEGER NOT NULL DEFAULT 0);
CREATE INDEX IF NOT EXISTS events_owner ON events(owner, seq);
CREATE INDEX IF NOT EXISTS events_unapplied ON events(applied, seq);
CREATE TABLE IF NOT EXISTS profile (
  owner TEXT NOT NULL, fact_id TEXT NOT NULL, key TEXT, importance DOUBLE PRECISION NOT NULL,
  valid_from DOUBLE PRECISION NOT NULL, body TEXT NOT NULL, PRIMARY KEY (owner, fact_id));
DROP INDEX IF EXISTS profile_rank;
CREATE INDEX IF NOT EXISTS profile_order ON profile(owner, importance DESC, valid_from DESC, fact_id);
CREATE INDEX IF NOT EXISTS profile_key ON profile(owner, key)"""
# One step per version; step 1 is idempotent, since logs written before versions existed already hold it.
MIGRATIONS = {"sqlite": (_TABLES.format(serial="INTEGER"),), "postgres": (_TABLES.format(serial="BIGSERIAL"),)}
# Events that change the fact index; the others (NOOP, ERROR) are history only and born applied.
EFFECTS = frozenset({EventKind.ADD, EventKind.UPDATE, EventKind.DELETE, EventKind.INVALIDATE})
UPSERT = ("INSERT INTO profile (owner, fact_id, key, importance, valid_from, body) VALUES (?, ?, ?, ?, ?, ?) "
          "ON CONFLICT (owner, fact_id) DO UPDATE SET key = excluded.key, importance = excluded.importance, "
          "valid_from = excluded.valid_from, body = excluded.body")


@lru_cache(maxsize=8192)
def _fact(body: str) -> Fact:
    """A profile row's fact, parsed once per distinct row (reads take the same rows again and again)."""
    return Fact.from_dict(json.loads(body))


class EventLog:
    """Append-only events of every user and the profile of current facts they fold into."""

    def __init__(self, db: Database) -> None:
        self.db = db
        self.version = db.migrate("log", MIGRATIONS[db.dialect.name])
        if not db.rows("SELECT 1 FROM profile LIMIT 1"):
            self._backfill()

    @classmethod
    def postgres(cls, url: str, namespace: str = "memkit") -> "EventLog":
        """The log in a PostgreSQL database shared by every app process (``pip install 'memkit-lab[postgres]'``);
        each store namespace gets its own schema."""
        return cls(Database.postgres(url, namespace, role="event log database"))

    def owner_lock(self, owner: str) -> AbstractContextManager[None]:
        """Serialise one owner's writers across the processes sharing this log's database."""
        return self.db.owner_lock(owner)

    def _backfill(self) -> None:
        """Fold the applied events into the profile: a log written before the profile existed."""
        rows = self.db.rows("SELECT owner, body FROM events WHERE applied = 1 AND kind IN "
                            "('ADD', 'UPDATE', 'DELETE', 'INVALIDATE') ORDER BY seq")
        by_owner: dict[str, list[Event]] = {}
        for owner, body in rows:
            by_owner.setdefault(owner, []).append(Event.from_dict(json.loads(body)))
        for owner, events in by_owner.items():
            state = fold(events)
            now_current = current(state)
            self.put_profile(owner, now_current)
            self.drop_profile(owner, [i for i in state if i not in {f.id for f in now_current}])

    def folded(self, owner: str) -> dict[str, Fact | None]:
        """The fold of the owner's applied events: its facts as the log has them (``health.findings``)."""
        rows = self.db.rows("SELECT body FROM events WHERE owner = ? AND applied = 1 AND kind IN "
                            "('ADD', 'UPDATE', 'DELETE', 'INVALIDATE') ORDER BY seq", (owner,))
        return fold(Event.from_dict(json.loads(b)) for (b,) in rows)

    # ---- events ------------------------------------------------------------------------------
    def append(self, owner: str, events: Sequence[Event]) -> list[int]:
        """Log ``events`` in one transaction; returns their sequence numbers (increasing). Events that change
        nothing in the index are born applied."""
        with self.db.transaction() as run:
            seqs = [run("INSERT INTO events (owner, id, user_id, fact_id, kind, time, body, applied) "
                        "VALUES (?, ?, ?, ?, ?, ?, ?, ?) RETURNING seq",
                        (owner, e.id, e.user_id, e.fact_id, e.kind.value, e.time,
                         json.dumps(e.to_dict(), ensure_ascii=False),
                         0 if e.kind in EFFECTS else 1)).fetchone()[0] for e in events]
        return [int(s) for s in seqs]

    def mark_applied(self, owner: str, seqs: Sequence[int]) -> None:
        with self.db.transaction() as run:
            for seq in seqs:
                run("UPDATE events SET applied = 1 WHERE owner = ? AND seq = ?", (owner, seq))

    def events(self, owner: str, user_id: str, fact_id: str | None = None) -> list[Event]:
        """The user's events in sequence order (the order they were acknowledged), optionally for one fact."""
        sql = "SELECT body FROM events WHERE owner = ?" + (" AND fact_id = ?" if fact_id else "") + " ORDER BY seq"
        out = [Event.from_dict(json.loads(b)) for (b,) in self.db.rows(sql, (owner, fact_id) if fact_id else (owner,))]
        for e in out:
            if e.user_id != user_id:
                raise IsolationError(f"event {e.id} of {e.user_id!r} logged under {user_id!r}")
        return out

    def applied(self, seq: int) -> bool:
        rows = self.db.rows("SELECT applied FROM events WHERE seq = ?", (seq,))
        return not rows or bool(rows[0][0])

    def unapplied(self) -> list[tuple[int, Event]]:
        """Logged events whose change never reached the fact index, in sequence order."""
        rows = self.db.rows("SELECT seq, body FROM events WHERE applied = 0 ORDER BY seq")
        return [(int(s), Event.from_dict(json.loads(b))) for s, b in rows]

    def replay(self, effect: Callable[[Event], None],
               lock: Callable[[str], AbstractContextManager[Any]]) -> list[Event]:
        """Apply (``effect``) the logged events whose change never reached the index, in sequence order, each
        under its user's ``lock`` and checked again inside it: an event unapplied only because its writer
        (another thread or process) is still applying it is left to that writer. Returns what was applied."""
        done = []
        for seq, e in self.unapplied():
            with lock(e.user_id):
                if self.applied(seq):
                    continue
                effect(e)
                self.mark_applied(owner_of(e.user_id), [seq])
            done.append(e)
        return done

    # ---- profile -----------------------------------------------------------------------------
    def put_profile(self, owner: str, facts: Sequence[Fact]) -> None:
        """Insert or replace current facts in the owner's profile (``FactStore.upsert`` calls this)."""
        with self.db.transaction() as run:
            for f in facts:
                run(UPSERT, (owner, f.id, f.key, f.importance, f.valid_from, json.dumps(f.to_dict(), ensure_ascii=False)))

    def drop_profile(self, owner: str, ids: Sequence[str]) -> None:
        """Remove facts from the owner's profile (``FactStore.delete`` calls this)."""
        with self.db.transaction() as run:
            for i in ids:
                run("DELETE FROM profile WHERE owner = ? AND fact_id = ?", (owner, i))

    def profile(self, owner: str, user_id: str, limit: int | None = None, ids: Sequence[str] | None = None,
                keys: Sequence[str] | None = None, prefix: str | None = None) -> list[Fact]:
        """The user's current facts from the profile: the ``limit`` most important (newest first among equals),
        or those with the given ids, or those with the given keys, or those whose key starts with ``prefix``."""
        sql, args = "SELECT body FROM profile WHERE owner = ?", [owner]
        for column, values in (("fact_id", ids), ("key", keys)):
            if values is not None:
                if not values:
                    return []
                sql += f" AND {column} IN ({', '.join('?' * len(values))})"
                args += list(values)
        if prefix is not None:
            where, values = self.db.dialect.starts_with("key", prefix)
            sql, args = f"{sql} AND {where}", args + values
        lookup = ids is not None or keys is not None or prefix is not None
        if not lookup:  # the ordered read walks the profile_order index; a lookup goes by its own key, sorted here
            sql += " ORDER BY importance DESC, valid_from DESC, fact_id" + ("" if limit is None else f" LIMIT {int(limit)}")
        facts = [_fact(b) for (b,) in self.db.rows(sql, args)]
        if lookup:
            facts = sorted(facts, key=lambda f: (-f.importance, -f.valid_from, f.id))[:limit]
        for f in facts:
            if f.user_id != user_id:
                raise IsolationError(f"profile row {f.id} of {f.user_id!r} found under {user_id!r}")
        return facts

    def users(self) -> list[str]:
        """The ids of the users with a current fact, sorted."""
        rows = self.db.rows("SELECT DISTINCT user_id FROM events WHERE owner IN (SELECT DISTINCT owner FROM profile)")
        return sorted(u for (u,) in rows)

    def all_facts(self) -> Iterator[tuple[str, str, str]]:
        """``(owner, fact id, text)`` of every current fact of every user, to fill the fact index."""
        for owner, fact_id, body in self.db.rows("SELECT owner, fact_id, body FROM profile ORDER BY owner"):
            yield owner, fact_id, json.loads(body)["text"]

    def drop(self, owner: str) -> None:
        with self.db.transaction() as run:
            run("DELETE FROM events WHERE owner = ?", (owner,))
            run("DELETE FROM profile WHERE owner = ?", (owner,))

    def close(self) -> None:
        self.db.close()
