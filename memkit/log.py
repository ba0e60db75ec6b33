"""The event log: append-only, a monotonic sequence number per event, written ahead of the change to the fact
index and marked applied after it (docs/architecture.md §2).

It lives in the same SQLite database as the episodes and the lexical index. ``FactStore.apply`` appends
the planned events (one transaction), changes Chroma, then marks them applied; ``FactStore.replay`` applies
what was logged but never marked, in sequence order and with the original times, without planning again.
History is read from here, in the order events were acknowledged.
"""

from __future__ import annotations

import json
from typing import Sequence

from .errors import IsolationError
from .records import Records
from .types import Event, EventKind

SCHEMA = """
CREATE TABLE IF NOT EXISTS events (
  seq INTEGER PRIMARY KEY AUTOINCREMENT, owner TEXT NOT NULL, id TEXT NOT NULL UNIQUE, user_id TEXT NOT NULL,
  fact_id TEXT, kind TEXT NOT NULL, time REAL NOT NULL, body TEXT NOT NULL, applied INTEGER NOT NULL DEFAULT 0);
CREATE INDEX IF NOT EXISTS events_owner ON events(owner, seq);
CREATE INDEX IF NOT EXISTS events_unapplied ON events(applied, seq);
"""
# Events that change the fact index; the others (NOOP, ERROR) are history only and born applied.
EFFECTS = frozenset({EventKind.ADD, EventKind.UPDATE, EventKind.DELETE, EventKind.INVALIDATE})


class EventLog:
    """Append-only events of every user, in one table of the store's SQLite records."""

    def __init__(self, records: Records) -> None:
        self.records = records
        with records._lock:
            records._db.executescript(SCHEMA)

    def append(self, owner: str, events: Sequence[Event]) -> list[int]:
        """Log ``events`` in one transaction; returns their sequence numbers (increasing)."""
        db = self.records._db
        with self.records._lock:
            self.records._check()
            db.execute("BEGIN IMMEDIATE")
            try:
                seqs = [db.execute(
                    "INSERT INTO events (owner, id, user_id, fact_id, kind, time, body, applied) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                    (owner, e.id, e.user_id, e.fact_id, e.kind.value, e.time, json.dumps(e.to_dict(), ensure_ascii=False),
                     0 if e.kind in EFFECTS else 1)).lastrowid for e in events]
                db.execute("COMMIT")
            except BaseException:
                db.execute("ROLLBACK")
                raise
        return [int(s) for s in seqs]

    def mark_applied(self, seqs: Sequence[int]) -> None:
        with self.records._lock:
            self.records._check()
            self.records._db.executemany("UPDATE events SET applied = 1 WHERE seq = ?", [(s,) for s in seqs])

    def events(self, owner: str, user_id: str, fact_id: str | None = None) -> list[Event]:
        """The user's events in sequence order (the order they were acknowledged), optionally for one fact."""
        sql = "SELECT body FROM events WHERE owner = ?" + (" AND fact_id = ?" if fact_id else "") + " ORDER BY seq"
        with self.records._lock:
            self.records._check()
            rows = self.records._db.execute(sql, (owner, fact_id) if fact_id else (owner,)).fetchall()
        out = [Event.from_dict(json.loads(r[0])) for r in rows]
        for e in out:
            if e.user_id != user_id:
                raise IsolationError(f"event {e.id} of {e.user_id!r} logged under {user_id!r}")
        return out

    def applied(self, seq: int) -> bool:
        with self.records._lock:
            self.records._check()
            row = self.records._db.execute("SELECT applied FROM events WHERE seq = ?", (seq,)).fetchone()
        return row is None or bool(row[0])

    def unapplied(self) -> list[tuple[int, Event]]:
        """Logged events whose change never reached the fact index, in sequence order."""
        with self.records._lock:
            self.records._check()
            rows = self.records._db.execute("SELECT seq, body FROM events WHERE applied = 0 ORDER BY seq").fetchall()
        return [(int(s), Event.from_dict(json.loads(b))) for s, b in rows]

    def drop(self, owner: str) -> None:
        with self.records._lock:
            self.records._check()
            self.records._db.execute("DELETE FROM events WHERE owner = ?", (owner,))
