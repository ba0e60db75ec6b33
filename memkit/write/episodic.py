"""The episodic layer: a session's turns, a token-bounded window, and a running summary of what left it.

Sessions live in memory; give a ``SessionStore`` to persist them in SQLite and resume them by id.
"""

from __future__ import annotations

import json
import sqlite3
import threading
from dataclasses import asdict
from pathlib import Path

from ..models import tokens
from .. import validate
from ..errors import InvalidArgument, MemkitError
from .summarize import ExtractiveSummarizer, Summarizer, Summary
from ..types import Turn, new_id, now


class SessionStore:
    """SQLite persistence for episodic sessions (turns, window position, summary), keyed by user and session.

    Two users may each have a session of the same id ("mon", "tue"): a session is ``(user_id, session_id)``.
    A file written by an older memkit (sessions keyed by ``session_id`` alone) is migrated when it opens.
    """

    SCHEMA_VERSION = 1

    def __init__(self, path: str | Path) -> None:
        self.path = str(path)
        self._db = sqlite3.connect(self.path, check_same_thread=False)
        self._db.execute("PRAGMA secure_delete=ON")  # a forgotten user's turns are overwritten, not left in free pages
        self._lock = threading.Lock()
        with self._lock, self._db:
            self._migrate()

    def _migrate(self) -> None:
        if self._db.execute("PRAGMA user_version").fetchone()[0] >= self.SCHEMA_VERSION:
            return
        self._db.execute("BEGIN IMMEDIATE")  # one migration at a time, all of it or nothing
        if self._db.execute("PRAGMA user_version").fetchone()[0] >= self.SCHEMA_VERSION:
            return
        old = self._db.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'sessions'").fetchone()
        if old:  # version 0: sessions keyed by session_id alone; their rows name their user, so nothing is lost
            self._db.execute("ALTER TABLE sessions RENAME TO sessions_v0")
        self._db.execute("CREATE TABLE sessions (user_id TEXT NOT NULL, session_id TEXT NOT NULL,"
                         " window_start INTEGER NOT NULL, summary TEXT NOT NULL, PRIMARY KEY (user_id, session_id))")
        self._db.execute("CREATE TABLE IF NOT EXISTS turns (seq INTEGER PRIMARY KEY AUTOINCREMENT, id TEXT,"
                         " session_id TEXT NOT NULL, user_id TEXT, role TEXT, content TEXT, tokens INTEGER, time REAL)")
        if old:
            self._db.execute("INSERT INTO sessions SELECT user_id, session_id, window_start, summary FROM sessions_v0")
            self._db.execute("DROP TABLE sessions_v0")
        self._db.execute("CREATE INDEX IF NOT EXISTS turns_by_session ON turns (user_id, session_id, seq)")
        self._db.execute(f"PRAGMA user_version = {self.SCHEMA_VERSION}")

    def save(self, buf: "EpisodicBuffer", new_turns: list[Turn]) -> None:
        with self._lock, self._db:
            self._db.execute("INSERT OR REPLACE INTO sessions VALUES (?, ?, ?, ?)",
                             (buf.user_id, buf.session_id, buf.window_start, json.dumps(asdict(buf.summary))))
            self._db.executemany("INSERT INTO turns (id, session_id, user_id, role, content, tokens, time)"
                                 " VALUES (?, ?, ?, ?, ?, ?, ?)",
                                 [(t.id, t.session_id, t.user_id, t.role, t.content, t.tokens, t.time) for t in new_turns])

    def load(self, user_id: str, session_id: str) -> tuple[int, Summary, list[Turn]] | None:
        """The user's session ``session_id`` (window start, summary, turns), or None."""
        with self._lock:
            row = self._db.execute("SELECT window_start, summary FROM sessions WHERE user_id = ? AND session_id = ?",
                                   (user_id, session_id)).fetchone()
            if row is None:
                return None
            turns = [Turn(*r) for r in self._db.execute(
                "SELECT id, session_id, user_id, role, content, tokens, time FROM turns"
                " WHERE user_id = ? AND session_id = ? ORDER BY seq", (user_id, session_id))]
        s = json.loads(row[1])
        return row[0], Summary(s["text"], tuple(s["turn_ids"]), s["tokens"]), turns

    def drop_user(self, user_id: str) -> None:
        """Forget the user's kept sessions: their turns, window and summary (``Memory.forget``)."""
        with self._lock, self._db:
            self._db.execute("DELETE FROM turns WHERE user_id = ?", (user_id,))
            self._db.execute("DELETE FROM sessions WHERE user_id = ?", (user_id,))

    def sessions(self, user_id: str) -> list[str]:
        """The ids of the user's kept sessions, oldest first."""
        with self._lock:
            return [r[0] for r in self._db.execute("SELECT session_id FROM sessions WHERE user_id = ? ORDER BY rowid",
                                                    (user_id,))]

    def delete(self, user_id: str, session_id: str) -> None:
        with self._lock, self._db:
            self._db.execute("DELETE FROM sessions WHERE user_id = ? AND session_id = ?", (user_id, session_id))
            self._db.execute("DELETE FROM turns WHERE user_id = ? AND session_id = ?", (user_id, session_id))

    def close(self) -> None:
        self._db.close()


class EpisodicBuffer:
    """One session: every turn, a window of the newest within ``window_tokens``, and a running ``summary``."""

    def __init__(self, session_id: str, user_id: str, window_tokens: int = 1000, summary_tokens: int = 300,
                 summarizer: Summarizer | None = None, store: SessionStore | None = None) -> None:
        self.session_id = validate.session_id(session_id)
        self.user_id = validate.user_id(user_id)
        self.window_tokens = window_tokens
        self.summary_tokens = summary_tokens
        self.summarizer = summarizer or ExtractiveSummarizer()
        self.store = store
        self.turns: list[Turn] = []
        self.window_start = 0
        self.summary = Summary()
        self.fold_error: str | None = None  # why the last fold failed (the window then runs over its budget)

    @classmethod
    def resume(cls, store: SessionStore, session_id: str, user_id: str, **kwargs: object) -> "EpisodicBuffer | None":
        """The user's persisted session ``session_id``, or None if the store has none."""
        loaded = store.load(validate.user_id(user_id), validate.session_id(session_id))
        if loaded is None:
            return None
        start, summary, turns = loaded
        buf = cls(session_id, user_id, store=store, **kwargs)  # type: ignore[arg-type]
        buf.turns, buf.window_start, buf.summary = turns, start, summary
        return buf

    @property
    def window(self) -> list[Turn]:
        return self.turns[self.window_start:]

    @property
    def window_tokens_used(self) -> int:
        return sum(t.tokens for t in self.window)

    def append(self, role: str, content: str, turn_id: str | None = None, time: float | None = None) -> Turn:
        """Add a turn; if the window overflows, fold the oldest turns into the summary (never the newest)."""
        if role not in {"user", "assistant", "system", "tool"}:
            raise InvalidArgument(f"role must be user, assistant, system or tool, got {role!r}")
        text = validate.content(content)
        turn = Turn(turn_id or new_id(f"{self.session_id}:"), self.session_id, self.user_id, role, text,
                    tokens.count(text), now() if time is None else time)
        self.turns.append(turn)
        start = self.window_start
        leaving: list[Turn] = []
        while self.window_start < len(self.turns) - 1 and self.window_tokens_used > self.window_tokens:
            leaving.append(self.turns[self.window_start])
            self.window_start += 1
        if leaving:
            try:
                self.summary = self.summarizer.fold(self.summary, leaving, self.summary_tokens)
                self.fold_error = None
            except MemkitError as e:  # a model fault: the turns stay in the window until a fold succeeds
                self.window_start = start
                self.fold_error = str(e)
        if self.store is not None:
            self.store.save(self, [turn])
        return turn

    def discard(self) -> None:
        """End the session and forget it, in memory and in the store."""
        if self.store is not None:
            self.store.delete(self.user_id, self.session_id)
        self.turns, self.window_start, self.summary = [], 0, Summary()
