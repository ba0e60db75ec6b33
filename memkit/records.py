"""SQLite records beside Chroma: episodes (every observed turn), the work that waits for a model or the store,
and the locks processes sharing them take.

See docs/architecture.md §2. Every row carries ``owner`` (a hash of the user id), every query names it, and
every row read back is checked against its user. The lexical index of facts and episodes is tantivy's,
beside this file (``memkit/lexicon.py``).
"""

from __future__ import annotations

import json
import os
import sqlite3
import threading
from contextlib import AbstractContextManager, contextmanager
from dataclasses import asdict
from pathlib import Path
from typing import Iterable, Iterator, Sequence

from .errors import IsolationError, StoreClosed
from .types import Candidate, Episode

# The records' schema, one step per version (PRAGMA user_version counts the steps applied), run once when a
# file opens, never on a read. Step 1 is the layout memkit wrote before versions existed.
MIGRATIONS = (
    """CREATE TABLE IF NOT EXISTS episodes (
  seq INTEGER PRIMARY KEY AUTOINCREMENT, owner TEXT NOT NULL, user_id TEXT NOT NULL, session_id TEXT NOT NULL,
  turn_id TEXT NOT NULL, speaker TEXT NOT NULL, role TEXT NOT NULL, content TEXT NOT NULL, time REAL NOT NULL,
  tokens INTEGER NOT NULL, pos INTEGER NOT NULL, embedded INTEGER NOT NULL DEFAULT 0);
CREATE INDEX IF NOT EXISTS episodes_pending ON episodes(owner, embedded);
CREATE INDEX IF NOT EXISTS episodes_session ON episodes(owner, session_id, pos)""",
    # the durable retry queue: a turn to extract is marked in the commit that records it, and unmarked once its
    # extraction is settled; candidates whose planning met an outage wait in their own table
    """ALTER TABLE episodes ADD COLUMN extract INTEGER NOT NULL DEFAULT 0;
CREATE INDEX episodes_extract ON episodes(extract) WHERE extract = 1;
CREATE TABLE waiting_writes (seq INTEGER PRIMARY KEY AUTOINCREMENT, owner TEXT NOT NULL, user_id TEXT NOT NULL,
  time REAL, candidates TEXT NOT NULL)""",
)
EPISODE_COLUMNS = "seq, user_id, session_id, turn_id, speaker, role, content, time, tokens, pos"
# what held the lexical index before tantivy did (docs/architecture.md §2): dropped by ``drop_fts``
FTS_TABLES = ("lexical", "lex_refs")


class Records:
    """One SQLite database (a file in WAL mode, or ``":memory:"``) shared by the stores of one process."""

    def __init__(self, path: str | Path = ":memory:") -> None:
        self.path = str(path)
        # processes sharing the file wait for each other's write transactions (up to 30 s) instead of failing
        self._db = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None, timeout=30.0)
        self._lock = threading.RLock()
        if self.path != ":memory:":
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=NORMAL")
        self._migrate()
        self._closed = False
        self._lockfd: int | None = None
        if self.path != ":memory:":
            try:
                import fcntl  # noqa: F401

                self._lockfd = os.open(self.path + ".lock", os.O_RDWR | os.O_CREAT, 0o644)
            except ImportError:
                pass

    def _migrate(self) -> None:
        if self._db.execute("PRAGMA user_version").fetchone()[0] >= len(MIGRATIONS):
            return
        self._db.execute("BEGIN IMMEDIATE")  # one process migrates; the others wait, then find it done
        try:
            version = self._db.execute("PRAGMA user_version").fetchone()[0]
            for step in MIGRATIONS[version:]:
                for statement in step.split(";"):
                    self._db.execute(statement)
            self._db.execute(f"PRAGMA user_version = {len(MIGRATIONS)}")
            self._db.execute("COMMIT")
        except BaseException:
            self._db.execute("ROLLBACK")
            raise

    @property
    def version(self) -> int:
        """The schema version of the file (how many of ``MIGRATIONS`` it has)."""
        return self._db.execute("PRAGMA user_version").fetchone()[0]

    def owner_lock(self, owner: str) -> AbstractContextManager[None]:
        """A lock on one owner across processes that share this file (a POSIX byte-range lock on a side file);
        in memory there is no other process to exclude."""
        return self._byte_lock(int(owner[:8], 16))  # one byte per owner hash prefix: 4 billion slots

    def index_lock(self) -> AbstractContextManager[None]:
        """The lock a writer of the lexical index takes (``memkit/lexicon.py``): one byte past the owners'."""
        return self._byte_lock(1 << 32)

    @contextmanager
    def _byte_lock(self, offset: int) -> Iterator[None]:
        if self._lockfd is None:
            yield
            return
        import fcntl

        fcntl.lockf(self._lockfd, fcntl.LOCK_EX, 1, offset)
        try:
            yield
        finally:
            fcntl.lockf(self._lockfd, fcntl.LOCK_UN, 1, offset)

    def _check(self) -> None:
        if self._closed:
            raise StoreClosed("these records were closed; open a new store")

    # ---- episodes ----------------------------------------------------------------------------
    def add_episode(self, owner: str, ep: Episode, extract: bool = False) -> Episode:
        """Record one observed turn (marked to be extracted, with ``extract``, in the same commit); returns it
        with its ``seq`` and its position in the session."""
        with self._lock:
            self._check()
            self._db.execute("BEGIN IMMEDIATE")
            try:
                pos = self._db.execute("SELECT COUNT(*) FROM episodes WHERE owner = ? AND session_id = ?",
                                       (owner, ep.session_id)).fetchone()[0]
                cur = self._db.execute(
                    "INSERT INTO episodes (owner, user_id, session_id, turn_id, speaker, role, content, time, tokens, pos,"
                    " extract) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    (owner, ep.user_id, ep.session_id, ep.turn_id, ep.speaker, ep.role, ep.content, ep.time, ep.tokens, pos,
                     int(extract)))
                seq = str(cur.lastrowid)
                self._db.execute("COMMIT")
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
        return ep.evolve(id=seq, pos=pos)

    def episodes(self, owner: str, user_id: str, ids: Iterable[str] | None = None, pending: bool = False,
                 but_session: str | None = None) -> list[Episode]:
        """The user's episodes by id (all of them when ``ids`` is None), or only those not yet embedded (and
        indexed), leaving out ``but_session``'s."""
        # by id, the rows are read by rowid: "+owner" keeps the planner off the owner index, which for a page of
        # ids walked all of the user's rows (docs/architecture.md §6)
        sql = (f"SELECT {EPISODE_COLUMNS} FROM episodes"
               f" WHERE {'owner' if ids is None else '+owner'} = ?")
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
        with self._lock:
            self._check()
            rows = self._db.execute(sql + " ORDER BY seq", args).fetchall()
        return [self._own(user_id, Episode(str(r[0]), *r[1:])) for r in rows]

    def neighbours(self, owner: str, user_id: str, ep: Episode, span: int = 1) -> list[Episode]:
        """The turns just before and after ``ep`` in its session."""
        with self._lock:
            self._check()
            rows = self._db.execute(
                f"SELECT {EPISODE_COLUMNS} FROM episodes"
                " WHERE owner = ? AND session_id = ? AND pos BETWEEN ? AND ? AND pos != ? ORDER BY pos",
                (owner, ep.session_id, ep.pos - span, ep.pos + span, ep.pos)).fetchall()
        return [self._own(user_id, Episode(str(r[0]), *r[1:])) for r in rows]

    def mark_embedded(self, owner: str, ids: Sequence[str]) -> None:
        with self._lock:
            self._check()
            self._db.executemany("UPDATE episodes SET embedded = 1 WHERE owner = ? AND seq = ?",
                                 [(owner, int(i)) for i in ids])

    def count_episodes(self, owner: str, pending: bool = False) -> int:
        with self._lock:
            self._check()
            return self._db.execute("SELECT COUNT(*) FROM episodes WHERE owner = ?" + (" AND embedded = 0" if pending else ""),
                                    (owner,)).fetchone()[0]

    def embedded(self) -> Iterator[tuple[str, Episode]]:
        """``(owner, episode)`` for every embedded episode of every user, to fill the lexical index."""
        with self._lock:
            self._check()
            rows = self._db.execute(
                "SELECT owner, seq, user_id, session_id, turn_id, speaker, role, content, time, tokens, pos"
                " FROM episodes WHERE embedded = 1 ORDER BY seq").fetchall()
        return ((r[0], Episode(str(r[1]), *r[2:])) for r in rows)

    # ---- what waits for a model or the store ----------------------------------------------------------
    def to_extract(self) -> list[Episode]:
        """Every user's turns marked to be extracted and not yet settled, oldest first."""
        with self._lock:
            self._check()
            rows = self._db.execute(f"SELECT {EPISODE_COLUMNS} FROM episodes WHERE extract = 1 ORDER BY seq").fetchall()
        return [Episode(str(r[0]), *r[1:]) for r in rows]

    def extracted(self, owner: str, episode_id: str) -> None:
        """The turn's extraction is settled (its facts written, or its failure reported): unmark it."""
        with self._lock:
            self._check()
            self._db.execute("UPDATE episodes SET extract = 0 WHERE owner = ? AND seq = ?", (owner, int(episode_id)))

    def wait(self, owner: str, user_id: str, cands: Sequence[Candidate], time: float | None) -> None:
        """Keep candidates whose planning met an outage, to be planned by a later ``flush``."""
        body = json.dumps([{**asdict(c), "source": list(c.source)} for c in cands])
        with self._lock:
            self._check()
            self._db.execute("INSERT INTO waiting_writes (owner, user_id, time, candidates) VALUES (?, ?, ?, ?)",
                             (owner, user_id, time, body))

    def waiting(self) -> list[tuple[int, str, list[Candidate], float | None]]:
        """``(id, user_id, candidates, time)`` of every write waiting to be planned, oldest first."""
        with self._lock:
            self._check()
            rows = self._db.execute("SELECT seq, user_id, candidates, time FROM waiting_writes ORDER BY seq").fetchall()
        return [(r[0], r[1], [Candidate(**{**c, "source": tuple(c["source"])}) for c in json.loads(r[2])], r[3])
                for r in rows]

    def written(self, owner: str, wait_id: int) -> None:
        """A waiting write was planned: forget it."""
        with self._lock:
            self._check()
            self._db.execute("DELETE FROM waiting_writes WHERE owner = ? AND seq = ?", (owner, wait_id))

    def drop_fts(self) -> None:
        """Drop the FTS5 tables a records file kept before the lexical index was tantivy's."""
        with self._lock:
            self._check()
            with self._db:
                self._db.execute("BEGIN IMMEDIATE")  # take the write lock now: no BUSY on upgrade
                for table in FTS_TABLES:
                    self._db.execute(f"DROP TABLE IF EXISTS {table}")

    def drop_owner(self, owner: str) -> None:
        """Forget every record of one user."""
        with self._lock:
            self._check()
            with self._db:
                self._db.execute("BEGIN IMMEDIATE")  # take the write lock now: no BUSY on upgrade
                self._db.execute("DELETE FROM episodes WHERE owner = ?", (owner,))
                self._db.execute("DELETE FROM waiting_writes WHERE owner = ?", (owner,))

    @staticmethod
    def _own(user_id: str, ep: Episode) -> Episode:
        if ep.user_id != user_id:
            raise IsolationError(f"episode {ep.id} of {ep.user_id!r} found under {user_id!r}")
        return ep

    def close(self) -> None:
        with self._lock:
            if not self._closed:
                self._closed = True
                self._db.close()
                if self._lockfd is not None:
                    os.close(self._lockfd)
                    self._lockfd = None
