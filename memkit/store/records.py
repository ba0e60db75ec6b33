"""The records beside the vectors: episodes (every observed turn), the work that waits for a model or the store,
and the locks processes sharing them take. SQLite (the store's records file) or PostgreSQL (the whole memory in
one database), through ``memkit/store/sql.py``.

See docs/architecture.md §2. Every row carries ``owner`` (a hash of the user id), every query names it, and
every row read back is checked against its user.
"""

from __future__ import annotations

import json
from contextlib import AbstractContextManager
from dataclasses import asdict
from pathlib import Path
from typing import Iterable, Iterator, Sequence

from ..errors import IsolationError
from ..types import Candidate, Episode
from .sql import Database

# The records' schema, one step per version, run once when a database opens, never on a read. In SQLite, step
# 1 is the layout memkit wrote before versions existed.
MIGRATIONS = {
    "sqlite": (
        """CREATE TABLE IF NOT EXISTS episodes (
  seq INTEGER PRIMARY KEY AUTOINCREMENT, owner TEXT NOT NULL, user_id TEXT NOT NULL, session_id TEXT NOT NULL,
  turn_id TEXT NOT NULL, speaker TEXT NOT NULL, role TEXT NOT NULL, content TEXT NOT NULL, time REAL NOT NULL,
  tokens INTEGER NOT NULL, pos INTEGER NOT NULL, embedded INTEGER NOT NULL DEFAULT 0);
CREATE INDEX IF NOT EXISTS episodes_pending ON episodes(owner, embedded);
CREATE INDEX IF NOT EXISTS episodes_session ON episodes(owner, session_id, pos)""",
        # the durable retry queue: a turn to extract is marked in the commit that records it, and unmarked once
        # its extraction is settled; candidates whose planning met an outage wait in their own table
        """ALTER TABLE episodes ADD COLUMN extract INTEGER NOT NULL DEFAULT 0;
CREATE INDEX episodes_extract ON episodes(extract) WHERE extract = 1;
CREATE TABLE waiting_writes (seq INTEGER PRIMARY KEY AUTOINCREMENT, owner TEXT NOT NULL, user_id TEXT NOT NULL,
  time REAL, candidates TEXT NOT NULL)""",
        # the passage size a turn is indexed at (0: whole; memkit/store/passages.py), and turns by time (a question's
        # timeframe, memkit/read/timeframe.py)
        """ALTER TABLE episodes ADD COLUMN passage_tokens INTEGER NOT NULL DEFAULT 0;
CREATE INDEX episodes_time ON episodes(owner, time)""",
        # how many extractions of a turn met a reply that could not be used (write.path.EXTRACT_ATTEMPTS bounds it)
        "ALTER TABLE episodes ADD COLUMN attempts INTEGER NOT NULL DEFAULT 0",
        # how many of a turn's passages have a vector, from the first (0: all; memkit/store/base.py, dense_items)
        "ALTER TABLE episodes ADD COLUMN dense_passages INTEGER NOT NULL DEFAULT 0",
    ),
    "postgres": (
        """CREATE TABLE episodes (
  seq BIGSERIAL PRIMARY KEY, owner TEXT NOT NULL, user_id TEXT NOT NULL, session_id TEXT NOT NULL,
  turn_id TEXT NOT NULL, speaker TEXT NOT NULL, role TEXT NOT NULL, content TEXT NOT NULL,
  time DOUBLE PRECISION NOT NULL, tokens INTEGER NOT NULL, pos INTEGER NOT NULL,
  embedded INTEGER NOT NULL DEFAULT 0, extract INTEGER NOT NULL DEFAULT 0);
CREATE INDEX episodes_pending ON episodes(owner, embedded);
CREATE INDEX episodes_session ON episodes(owner, session_id, pos);
CREATE INDEX episodes_extract ON episodes(extract) WHERE extract = 1;
CREATE TABLE waiting_writes (seq BIGSERIAL PRIMARY KEY, owner TEXT NOT NULL, user_id TEXT NOT NULL,
  time DOUBLE PRECISION, candidates TEXT NOT NULL)""",
        """ALTER TABLE episodes ADD COLUMN passage_tokens INTEGER NOT NULL DEFAULT 0;
CREATE INDEX episodes_time ON episodes(owner, time)""",
        "ALTER TABLE episodes ADD COLUMN attempts INTEGER NOT NULL DEFAULT 0",
        # how many of a turn's passages have a vector, from the first (0: all; memkit/store/base.py, dense_items)
        "ALTER TABLE episodes ADD COLUMN dense_passages INTEGER NOT NULL DEFAULT 0",
    ),
}
EPISODE_COLUMNS = ("seq, user_id, session_id, turn_id, speaker, role, content, time, tokens, pos, passage_tokens,"
                   " dense_passages")
# what held the lexical index before tantivy did (docs/architecture.md §2): dropped by ``drop_fts``
FTS_TABLES = ("lexical", "lex_refs")


class Records:
    """Episodes and the retry queue in one database, shared by the stores of one process (a SQLite file in WAL
    mode, ``":memory:"``, or a PostgreSQL database given as a ``Database``)."""

    def __init__(self, path: "str | Path | Database" = ":memory:") -> None:
        self.db = path if isinstance(path, Database) else Database.sqlite(path)
        self.path = self.db.path
        self.version = self.db.migrate("records", MIGRATIONS[self.db.dialect.name])

    def owner_lock(self, owner: str) -> AbstractContextManager[None]:
        """A lock on one owner across the processes that share these records."""
        return self.db.owner_lock(owner)

    def index_lock(self) -> AbstractContextManager[None]:
        """The lock a writer of the tantivy index beside a records file takes (``memkit/store/lexicon.py``)."""
        return self.db.index_lock()

    # ---- episodes ----------------------------------------------------------------------------
    def add_episode(self, owner: str, ep: Episode, extract: bool = False) -> Episode:
        """Record one observed turn (marked to be extracted, with ``extract``, in the same commit); returns it
        with its ``seq`` and its position in the session."""
        with self.db.transaction() as run:
            pos = run("SELECT COUNT(*) FROM episodes WHERE owner = ? AND session_id = ?",
                      (owner, ep.session_id)).fetchone()[0]
            seq = run("INSERT INTO episodes (owner, user_id, session_id, turn_id, speaker, role, content, time, tokens,"
                      " pos, extract, passage_tokens, dense_passages) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
                      " RETURNING seq",
                      (owner, ep.user_id, ep.session_id, ep.turn_id, ep.speaker, ep.role, ep.content, ep.time,
                       ep.tokens, pos, int(extract), ep.passage_tokens, ep.dense_passages)).fetchone()[0]
        return ep.evolve(id=str(seq), pos=pos)

    def episodes(self, owner: str, user_id: str, ids: Iterable[str] | None = None, pending: bool = False,
                 but_session: str | None = None) -> list[Episode]:
        """The user's episodes by id (all of them when ``ids`` is None), or only those not yet embedded (and
        indexed), leaving out ``but_session``'s."""
        # by id, SQLite reads the rows by rowid: "+owner" keeps its planner off the owner index, which for a page
        # of ids walked all of the user's rows
        by_rowid = ids is not None and self.db.dialect.by_rowid
        sql = f"SELECT {EPISODE_COLUMNS} FROM episodes WHERE {'+owner' if by_rowid else 'owner'} = ?"
        args: list = [owner]
        if pending:
            sql += " AND embedded = 0"
        if but_session is not None:
            sql += " AND session_id != ?"
            args.append(but_session)
        if ids is not None:
            ids = [int(i) for i in ids]
            if not ids:
                return []
            sql += f" AND seq IN ({','.join('?' * len(ids))})"
            args += ids
        return [self._own(user_id, _episode(r)) for r in self.db.rows(sql + " ORDER BY seq", args)]

    def between(self, owner: str, user_id: str, start: float, end: float, limit: int,
                but_session: str | None = None) -> list[Episode]:
        """The user's embedded episodes said from ``start`` to ``end``, in the order they were said (at most
        ``limit``), leaving out ``but_session``'s."""
        sql = f"SELECT {EPISODE_COLUMNS} FROM episodes WHERE owner = ? AND embedded = 1 AND time BETWEEN ? AND ?"
        args: list = [owner, start, end]
        if but_session is not None:
            sql += " AND session_id != ?"
            args.append(but_session)
        rows = self.db.rows(sql + " ORDER BY seq LIMIT ?", args + [limit])
        return [self._own(user_id, _episode(r)) for r in rows]

    def neighbours(self, owner: str, user_id: str, ep: Episode, span: int = 1) -> list[Episode]:
        """The turns just before and after ``ep`` in its session."""
        rows = self.db.rows(f"SELECT {EPISODE_COLUMNS} FROM episodes"
                            " WHERE owner = ? AND session_id = ? AND pos BETWEEN ? AND ? AND pos != ? ORDER BY pos",
                            (owner, ep.session_id, ep.pos - span, ep.pos + span, ep.pos))
        return [self._own(user_id, _episode(r)) for r in rows]

    def mark_embedded(self, owner: str, ids: Sequence[str]) -> None:
        with self.db.transaction() as run:
            for i in ids:
                run("UPDATE episodes SET embedded = 1 WHERE owner = ? AND seq = ?", (owner, int(i)))

    def count_episodes(self, owner: str, pending: bool = False) -> int:
        return self.db.rows("SELECT COUNT(*) FROM episodes WHERE owner = ?" + (" AND embedded = 0" if pending else ""),
                            (owner,))[0][0]

    def embedded(self) -> Iterator[tuple[str, Episode]]:
        """``(owner, episode)`` for every embedded episode of every user, to fill the lexical index."""
        rows = self.db.rows(f"SELECT owner, {EPISODE_COLUMNS} FROM episodes WHERE embedded = 1 ORDER BY seq")
        return ((r[0], _episode(r[1:])) for r in rows)

    # ---- what waits for a model or the store ----------------------------------------------------------
    def to_extract(self) -> list[Episode]:
        """Every user's turns marked to be extracted and not yet settled, oldest first."""
        return [_episode(r) for r in self.db.rows(f"SELECT {EPISODE_COLUMNS} FROM episodes WHERE extract = 1 ORDER BY seq")]

    def extracted(self, owner: str, episode_id: str) -> None:
        """The turn's extraction is settled (its facts written, or its failure reported): unmark it."""
        self.db.execute("UPDATE episodes SET extract = 0 WHERE owner = ? AND seq = ?", (owner, int(episode_id)))

    def attempted(self, owner: str, episode_id: str) -> int:
        """One more extraction of the turn met an unusable reply: how many have, now."""
        with self.db.transaction() as run:
            run("UPDATE episodes SET attempts = attempts + 1 WHERE owner = ? AND seq = ?", (owner, int(episode_id)))
            return run("SELECT attempts FROM episodes WHERE owner = ? AND seq = ?", (owner, int(episode_id))).fetchone()[0]

    def wait(self, owner: str, user_id: str, cands: Sequence[Candidate], time: float | None) -> None:
        """Keep candidates whose planning met an outage, to be planned by a later ``flush``."""
        body = json.dumps([{**asdict(c), "source": list(c.source)} for c in cands])
        self.db.execute("INSERT INTO waiting_writes (owner, user_id, time, candidates) VALUES (?, ?, ?, ?)",
                        (owner, user_id, time, body))

    def waiting(self) -> list[tuple[int, str, list[Candidate], float | None]]:
        """``(id, user_id, candidates, time)`` of every write waiting to be planned, oldest first."""
        rows = self.db.rows("SELECT seq, user_id, candidates, time FROM waiting_writes ORDER BY seq")
        return [(r[0], r[1], [Candidate(**{**c, "source": tuple(c["source"])}) for c in json.loads(r[2])], r[3])
                for r in rows]

    def written(self, owner: str, wait_id: int) -> None:
        """A waiting write was planned: forget it."""
        self.db.execute("DELETE FROM waiting_writes WHERE owner = ? AND seq = ?", (owner, wait_id))

    def drop_fts(self) -> None:
        """Drop the FTS5 tables a SQLite records file kept before the lexical index was tantivy's."""
        if self.db.dialect.older_files:
            with self.db.transaction() as run:  # the write lock taken at once: no BUSY on upgrade
                for table in FTS_TABLES:
                    run(f"DROP TABLE IF EXISTS {table}")

    def drop_owner(self, owner: str) -> None:
        """Forget every record of one user."""
        with self.db.transaction() as run:
            run("DELETE FROM episodes WHERE owner = ?", (owner,))
            run("DELETE FROM waiting_writes WHERE owner = ?", (owner,))

    @staticmethod
    def _own(user_id: str, ep: Episode) -> Episode:
        if ep.user_id != user_id:
            raise IsolationError(f"episode {ep.id} of {ep.user_id!r} found under {user_id!r}")
        return ep

    def close(self) -> None:
        self.db.close()


def _episode(row: Sequence) -> Episode:
    return Episode(str(row[0]), *row[1:])
