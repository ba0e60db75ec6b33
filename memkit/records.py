"""SQLite records beside Chroma: episodes (every observed turn) and their lexical index (FTS5).

See docs/architecture.md §2. Every row carries ``owner`` (a hash of the user id); the FTS5 query puts the
owner token inside the full-text match, so the index only ever returns that user's rows, and every row
read back is checked against its owner. Facts have their own lexical index (``memkit/lexicon.py``).
"""

from __future__ import annotations

import os
import re
import sqlite3
import threading
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import Iterable, Iterator, Sequence

from .errors import IsolationError, StoreClosed
from .types import Episode

# Query words that match nearly every turn and carry no topic; dropped from lexical queries only. "user" is
# indexed with every user turn (its speaker) and starts every fact ("User prefers ..."), so it is in half the
# rows or more: BM25 gives it no weight (FTS5's idf is floored near 0 there), yet matching it made FTS5 score
# all of those rows (4 ms at p95 for one user with 5,000 facts). ("s", what "Ana's" leaves, is no such word:
# it selects possessives, a minority of rows, and carries weight.)
STOPWORDS = frozenset("""user users a about after again all am an and any are as at be been before being both but by can could did
do does doing during each few for from had has have having he her here hers herself him himself his how i if in into is
it its itself just me more most my myself no nor not now of off on once only or other our ours out over own same she
should so some such than that the their theirs them then there these they this those through to too under until up very
was we were what when where which while who whom why will with would you your yours yourself""".split())
_WORD = re.compile(r"\w+", re.UNICODE)
_CJK = re.compile(r"([\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af])")

SCHEMA = """
CREATE TABLE IF NOT EXISTS episodes (
  seq INTEGER PRIMARY KEY AUTOINCREMENT, owner TEXT NOT NULL, user_id TEXT NOT NULL, session_id TEXT NOT NULL,
  turn_id TEXT NOT NULL, speaker TEXT NOT NULL, role TEXT NOT NULL, content TEXT NOT NULL, time REAL NOT NULL,
  tokens INTEGER NOT NULL, pos INTEGER NOT NULL, embedded INTEGER NOT NULL DEFAULT 0);
CREATE INDEX IF NOT EXISTS episodes_pending ON episodes(owner, embedded);
CREATE INDEX IF NOT EXISTS episodes_session ON episodes(owner, session_id, pos);
CREATE TABLE IF NOT EXISTS lex_refs (
  id INTEGER PRIMARY KEY AUTOINCREMENT, owner TEXT NOT NULL, kind TEXT NOT NULL, ref TEXT NOT NULL,
  UNIQUE(owner, kind, ref));
CREATE VIRTUAL TABLE IF NOT EXISTS lexical USING fts5(owner, body, tokenize='porter unicode61');
"""


def lexical_text(text: str) -> str:
    """Text as the lexical index sees it: CJK characters become separate tokens (unicode61 keeps runs whole)."""
    return _CJK.sub(r" \1 ", text)


def query_terms(query: str) -> list[str]:
    """The words of ``query`` worth matching: lowercased, CJK per character, stopwords out, each once."""
    words = [w.lower() for w in _WORD.findall(lexical_text(query))]
    return list(dict.fromkeys(w for w in words if w not in STOPWORDS))


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
        self._db.executescript(SCHEMA)
        self._closed = False
        self._lockfd: int | None = None
        if self.path != ":memory:":
            try:
                import fcntl  # noqa: F401

                self._lockfd = os.open(self.path + ".lock", os.O_RDWR | os.O_CREAT, 0o644)
            except ImportError:
                pass

    def owner_lock(self, owner: str) -> AbstractContextManager[None]:
        """A lock on one owner across processes that share this file (a POSIX byte-range lock on a side file);
        in memory there is no other process to exclude."""
        return self._byte_lock(int(owner[:8], 16))  # one byte per owner hash prefix: 4 billion slots

    def index_lock(self) -> AbstractContextManager[None]:
        """The lock a writer of the fact index takes (``memkit/lexicon.py``): one byte past the owners'."""
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
    def add_episode(self, owner: str, ep: Episode) -> Episode:
        """Record one observed turn and index it lexically, in one transaction; returns it with its ``seq``."""
        with self._lock:
            self._check()
            self._db.execute("BEGIN IMMEDIATE")
            try:
                pos = self._db.execute("SELECT COUNT(*) FROM episodes WHERE owner = ? AND session_id = ?",
                                       (owner, ep.session_id)).fetchone()[0]
                cur = self._db.execute(
                    "INSERT INTO episodes (owner, user_id, session_id, turn_id, speaker, role, content, time, tokens, pos)"
                    " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    (owner, ep.user_id, ep.session_id, ep.turn_id, ep.speaker, ep.role, ep.content, ep.time, ep.tokens, pos))
                seq = str(cur.lastrowid)
                self._index(owner, seq, f"{ep.speaker} {ep.content}")
                self._db.execute("COMMIT")
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
        return ep.evolve(id=seq, pos=pos)

    def episodes(self, owner: str, user_id: str, ids: Iterable[str] | None = None, pending: bool = False) -> list[Episode]:
        """The user's episodes by id (all of them when ``ids`` is None), or only those not yet embedded."""
        # by id, the rows are read by rowid: "+owner" keeps the planner off the owner index, which for a page of
        # ids walked all of the user's rows (docs/architecture.md §6)
        sql = ("SELECT seq, user_id, session_id, turn_id, speaker, role, content, time, tokens, pos FROM episodes"
               f" WHERE {'owner' if ids is None else '+owner'} = ?")
        args: list = [owner]
        if pending:
            sql += " AND embedded = 0"
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
                "SELECT seq, user_id, session_id, turn_id, speaker, role, content, time, tokens, pos FROM episodes"
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

    # ---- lexical index -----------------------------------------------------------------------
    def _index(self, owner: str, seq: str, text: str) -> None:
        rowid = self._db.execute("INSERT INTO lex_refs (owner, kind, ref) VALUES (?, 'e', ?)", (owner, seq)).lastrowid
        self._db.execute("INSERT INTO lexical (rowid, owner, body) VALUES (?, ?, ?)", (rowid, "e" + owner, lexical_text(text)))

    def drop_fact_rows(self) -> int:
        """Remove the fact rows that FTS5 held before facts had their own index (``memkit/lexicon.py``)."""
        with self._lock:
            self._check()
            with self._db:
                self._db.execute("BEGIN IMMEDIATE")  # take the write lock now: no BUSY on upgrade
                rows = self._db.execute("SELECT id FROM lex_refs WHERE kind = 'f'").fetchall()
                self._db.executemany("DELETE FROM lexical WHERE rowid = ?", rows)
                self._db.execute("DELETE FROM lex_refs WHERE kind = 'f'")
        return len(rows)

    def search(self, owner: str, query: str, k: int) -> list[tuple[str, float]]:
        """BM25 (FTS5) over one user's episodes: ``(seq, score)``, best first."""
        terms = query_terms(query)
        if not terms or k <= 0:
            return []
        match = f'owner:"e{owner}" AND body:(' + " OR ".join('"' + t.replace('"', '""') + '"' for t in terms) + ")"
        with self._lock:
            self._check()
            rows = self._db.execute(
                "SELECT r.ref, r.owner, bm25(lexical, 0.0, 1.0) AS s FROM lexical JOIN lex_refs r ON r.id = lexical.rowid"
                " WHERE lexical MATCH ? ORDER BY s LIMIT ?", (match, k)).fetchall()
        for _, row_owner, _ in rows:
            if row_owner != owner:
                raise IsolationError("the lexical index returned another user's row")
        return [(ref, -float(s)) for ref, _, s in rows]

    def drop_owner(self, owner: str) -> None:
        """Forget every record of one user."""
        with self._lock:
            self._check()
            with self._db:
                self._db.execute("BEGIN IMMEDIATE")  # take the write lock now: no BUSY on upgrade
                for kind in ("f", "e"):
                    self._db.execute("DELETE FROM lexical WHERE lexical MATCH ?", (f'owner:"{kind}{owner}"',))
                self._db.execute("DELETE FROM lex_refs WHERE owner = ?", (owner,))
                self._db.execute("DELETE FROM episodes WHERE owner = ?", (owner,))

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
