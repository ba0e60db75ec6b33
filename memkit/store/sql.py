"""One connection seam for the records and the event log: SQLite (the embedded default) or PostgreSQL (psycopg).

Both speak the same SQL with ``?`` placeholders; a PostgreSQL connection translates them. A ``Database`` owns
its connection, its thread guard, the statement that opens a write transaction and the per-owner lock that
processes sharing it take, so the modules above it hold SQL and nothing about where it runs.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import re
import sqlite3
import threading
import time
from contextlib import AbstractContextManager, contextmanager, nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterator, Sequence

from ..errors import ConfigError, StoreClosed, StoreCorrupt, StoreFull, StoreUnavailable

DDL_LOCK = 0x6D656D6B6974  # "memkit": the advisory lock held while a PostgreSQL schema is created or migrated
POOL_SIZE = 8  # PostgreSQL connections per store at most: AsyncMemory's workers and a few threads of the caller's
POOL_WAIT = 30.0  # seconds a thread waits for one of them (or for a server gone away) before StoreUnavailable


def connect_sqlite(path: str | Path, timeout: float, script: str = "", attempts: int = 50) -> sqlite3.Connection:
    """A connection to a SQLite file shared by processes: WAL mode, then ``script`` (its tables). Processes opening
    a new file at once race to switch it to WAL, and SQLite answers the losers "database is locked" at once,
    without its busy wait: they try again (a few seconds at most) instead of failing."""
    attempt = 0
    while True:
        conn = sqlite3.connect(str(path), check_same_thread=False, isolation_level=None, timeout=timeout)
        try:
            if conn.execute("PRAGMA journal_mode").fetchone()[0].lower() != "wal":
                conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=NORMAL")
            conn.execute("PRAGMA secure_delete=ON")  # a deleted row's text is overwritten, not left in a free page
            if script:
                conn.executescript(script)
            return conn
        except sqlite3.OperationalError as e:
            conn.close()
            attempt += 1
            if attempt == attempts or not any(w in str(e) for w in ("locked", "busy")):
                raise
            time.sleep(0.02 * attempt)


@dataclass(frozen=True)
class Dialect:
    """What differs between SQLite and PostgreSQL for memkit, in one place: its ``name`` (the key of each
    component's migrations), how a write transaction begins, how to list a table, whether migrations take the
    cross-process DDL lock, whether reading a page of ids goes by rowid, and whether it can hold what an older
    memkit wrote (SQLite files: FTS5 tables, a lexical index folder, ``PRAGMA user_version``)."""

    name: str
    begin: str
    lists_table: str  # a query of one row when the table named by its parameter exists
    ddl_lock: bool
    by_rowid: bool
    older_files: bool

    def statement(self, sql: str) -> str:
        """``sql`` with memkit's ``?`` placeholders as the driver wants them."""
        return sql if self.name == "sqlite" else sql.replace("?", "%s")

    def starts_with(self, column: str, prefix: str) -> tuple[str, list[str]]:
        """A condition that ``column`` starts with ``prefix``, and its arguments: in SQLite a range of the
        column's own (binary) order, which its index walks; in PostgreSQL ``LIKE``, since a database's
        collation may order text otherwise."""
        if self.name == "sqlite":
            return f"{column} >= ? AND {column} < ?", [prefix, prefix + "\U0010ffff"]
        return f"{column} LIKE ? ESCAPE '!'", [re.sub(r"([!%_])", r"!\1", prefix) + "%"]


SQLITE = Dialect("sqlite", "BEGIN IMMEDIATE", "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?",
                 ddl_lock=False, by_rowid=True, older_files=True)
POSTGRES = Dialect("postgres", "BEGIN", "SELECT 1 FROM information_schema.tables WHERE table_schema = "
                   "current_schema() AND table_name = ?", ddl_lock=True, by_rowid=False, older_files=False)


class Database:
    """A connection with the dialect, the guard and the locks the records and the log share."""

    def __init__(self, conn: Any, dialect: Dialect, owner_lock: Callable[[str], AbstractContextManager[None]],
                 closer: Callable[[], None], path: str = ":memory:",
                 index_lock: Callable[[], AbstractContextManager[None]] = nullcontext, pool: Any = None) -> None:
        """``conn``: SQLite's connection, shared by the threads under ``guard``; ``pool``: PostgreSQL's pool of
        connections (``psycopg_pool.ConnectionPool``), one held by a thread for its outermost call, so threads
        (``AsyncMemory``'s workers) run their statements on the server at once."""
        self.conn, self.dialect, self.path = conn, dialect, path
        self.owner_lock, self.index_lock, self._closer = owner_lock, index_lock, closer
        self.pool = pool
        self.guard = threading.RLock()  # SQLite's one connection: one thread at a time
        self.closed = False
        self._local = threading.local()  # the connection a thread holds, and its transactions open on it

    @classmethod
    def sqlite(cls, path: str | Path = ":memory:") -> "Database":
        """A SQLite file in WAL mode (or ``":memory:"``); processes sharing the file lock owners with byte locks."""
        path = str(path)
        # processes sharing the file wait for each other's write transactions (up to 30 s) instead of failing
        try:
            conn = sqlite3.connect(path, check_same_thread=False, isolation_level=None, timeout=30.0) \
                if path == ":memory:" else connect_sqlite(path, 30.0)
        except sqlite3.DatabaseError as e:
            raise named(e, path) from e
        locks = _ByteLocks.of(path + ".lock") if path != ":memory:" else None

        def byte_lock(offset: int) -> AbstractContextManager[None]:
            return locks.hold(offset) if locks is not None else nullcontext()

        def close() -> None:
            conn.close()
            if locks is not None:
                locks.release()

        # one byte per owner hash prefix (4 billion slots); the lexical index's writer lock one byte past them
        return cls(conn, SQLITE, lambda owner: byte_lock(int(owner[:8], 16)), close, path,
                   index_lock=lambda: byte_lock(1 << 32))

    @classmethod
    def postgres(cls, url: str, namespace: str = "memkit", role: str = "PostgreSQL database") -> "Database":
        """A PostgreSQL database; each namespace gets its own schema, and the per-owner lock is an advisory lock,
        so it holds across machines (``pip install 'memkit-lab[postgres]'``)."""
        try:
            import psycopg
            from psycopg import sql
        except ImportError:
            raise ConfigError("a PostgreSQL store needs psycopg: pip install 'memkit-lab[postgres]'") from None
        try:
            from psycopg_pool import ConnectionPool
        except ImportError:
            raise ConfigError("a PostgreSQL store needs psycopg_pool: pip install 'memkit-lab[postgres]'") from None
        schema = sql.Identifier(f"memkit_{namespace}")
        try:
            with psycopg.connect(url, autocommit=True) as conn:
                with conn.transaction():  # one process at a time creates the schema (IF NOT EXISTS can race)
                    conn.execute("SELECT pg_advisory_xact_lock(%s)", (DDL_LOCK,))
                    conn.execute(sql.SQL("CREATE SCHEMA IF NOT EXISTS {}").format(schema))
        except psycopg.OperationalError as e:
            raise StoreUnavailable(f"the {role} ({_safe(url)}) is unreachable: {e}".strip()) from e

        def configure(conn: Any) -> None:
            conn.execute(sql.SQL("SET search_path TO {}, public").format(schema))

        pool = ConnectionPool(url, min_size=1, max_size=POOL_SIZE, kwargs={"autocommit": True}, configure=configure,
                              timeout=POOL_WAIT, name=f"memkit-{namespace}", open=True)
        lock, close_locks = _advisory_lock(url, namespace)

        def close() -> None:
            pool.close()
            close_locks()

        return cls(None, POSTGRES, lock, close, url, pool=pool)

    def scrub(self) -> None:
        """After a forget: SQLite's write-ahead log copied into the file and emptied, so no frame of it holds a
        deleted row. PostgreSQL: nothing here (dead rows wait for VACUUM, the server's WAL for its recycling:
        docs/usage.md, "What memkit guarantees")."""
        if self.dialect.name == "sqlite" and self.path != ":memory:":
            with self.guard:
                self.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")

    # ---- statements -----------------------------------------------------------------------------
    def check(self) -> None:
        if self.closed:
            raise StoreClosed("this store's database was closed; open a new store")

    @contextmanager
    def _held(self) -> Iterator[Any]:
        """The connection this thread runs on: SQLite's one, under the guard; PostgreSQL's from the pool, kept
        by the thread until its outermost call returns (a transaction's statements share it)."""
        if self.pool is None:
            with self.guard:
                self.check()
                yield self.conn
            return
        self.check()
        held = getattr(self._local, "conn", None)
        if held is not None:
            yield held
            return
        from psycopg_pool import PoolTimeout

        try:
            conn = self._local.conn = self.pool.getconn()
        except PoolTimeout as e:
            raise self._why_no_connection() from e
        try:
            yield conn
        finally:
            self._local.conn = None
            self.pool.putconn(conn)  # back to the pool; a broken one is replaced

    def _why_no_connection(self) -> StoreUnavailable:
        """The pool gave no connection in ``POOL_WAIT``: a server that cannot be reached says so (its pooled
        connections were found broken and new ones fail), else every connection was busy."""
        import psycopg

        try:
            psycopg.connect(self.path, connect_timeout=5).close()
        except psycopg.OperationalError as e:
            return StoreUnavailable(f"the PostgreSQL database ({_safe(self.path)}) is unreachable: {e}".strip())
        return StoreUnavailable(f"no PostgreSQL connection came free in {POOL_WAIT:g} s ({_safe(self.path)}; "
                                f"{POOL_SIZE} at most per store, all busy)")

    def execute(self, sql: str, args: Sequence[Any] = ()) -> Any:
        """Run one statement (placeholders ``?``); returns how many rows it changed."""
        with self._held() as conn:
            return self._run(conn, sql, args).rowcount

    def rows(self, sql: str, args: Sequence[Any] = ()) -> list[tuple]:
        with self._held() as conn:
            return self._run(conn, sql, args).fetchall()

    def _run(self, conn: Any, sql: str, args: Sequence[Any]) -> Any:
        if self.dialect is SQLITE:
            try:
                return conn.execute(sql, tuple(args))
            except sqlite3.DatabaseError as e:
                error = named(e, self.path)
                if error is e:
                    raise
                raise error from e
        import psycopg

        try:
            return conn.execute(self.dialect.statement(sql), tuple(args) or None)
        except psycopg.OperationalError as e:
            raise StoreUnavailable(f"the PostgreSQL database is unreachable: {e}".strip()) from e

    @contextmanager
    def transaction(self) -> Iterator[Callable[..., Any]]:
        """One write transaction: yields ``run(sql, args)``; committed on exit, rolled back on an error. A
        transaction opened inside another (same thread) joins it: one commit for both."""
        with self._held() as conn:
            run = lambda sql, args=(): self._run(conn, sql, args)  # noqa: E731
            depth = getattr(self._local, "depth", 0)
            if depth:
                self._local.depth = depth + 1
                try:
                    yield run
                finally:
                    self._local.depth -= 1
                return
            run(self.dialect.begin)
            self._local.depth = 1
            try:
                yield run
                run("COMMIT")
            except BaseException:
                if self.dialect is not SQLITE or conn.in_transaction:  # SQLite ends one itself on a full disk
                    run("ROLLBACK")
                raise
            finally:
                self._local.depth = 0

    def migrate(self, name: str, steps: Sequence[str]) -> int:
        """Run the ``steps`` of component ``name`` (each ``;``-separated statements) not yet applied, in one
        transaction, and return its schema version (a row of ``schema_versions``). Run once when a store opens,
        never on a read."""
        if self.version(name) >= len(steps):
            return len(steps)
        with self.transaction() as run:  # one process migrates; the others wait, then find it done
            if self.dialect.ddl_lock:
                run("SELECT pg_advisory_xact_lock(?)", (DDL_LOCK,))
            run("CREATE TABLE IF NOT EXISTS schema_versions (name TEXT PRIMARY KEY, version INTEGER NOT NULL)")
            version = self.version(name)
            for step in steps[version:]:
                for statement in filter(str.strip, step.split(";")):
                    run(statement)
            run("INSERT INTO schema_versions (name, version) VALUES (?, ?) ON CONFLICT (name) DO UPDATE "
                "SET version = excluded.version", (name, len(steps)))
        return len(steps)

    def version(self, name: str) -> int:
        """How many migration steps of component ``name`` the database has (a records file written before
        ``schema_versions`` existed counted them in ``PRAGMA user_version``)."""
        listed = self.rows(self.dialect.lists_table, ("schema_versions",))
        found = self.rows("SELECT version FROM schema_versions WHERE name = ?", (name,)) if listed else []
        if found:
            return found[0][0]
        return self.rows("PRAGMA user_version")[0][0] if self.dialect.older_files and name == "records" else 0

    def close(self) -> None:
        with self.guard:
            if not self.closed:
                self.closed = True
                self._closer()


def named(e: sqlite3.DatabaseError, path: str) -> Exception:
    """A SQLite error as memkit names it, with the file's path: a damaged file is ``StoreCorrupt``, a full disk
    ``StoreFull``; a locked or busy file and a constraint stay SQLite's own (memkit's bugs, or retried above)."""
    said = str(e)
    if "full" in said:
        return StoreFull(f"cannot write {path}: {said}; free space on its disk (what was written before stays "
                         "readable and consistent)")
    damaged = any(w in said for w in ("malformed", "disk I/O", "not a database"))
    if isinstance(e, (sqlite3.IntegrityError, sqlite3.ProgrammingError, sqlite3.InterfaceError)) or \
            isinstance(e, sqlite3.OperationalError) and not damaged:
        return e
    return StoreCorrupt(f"the records file {path} is damaged ({said}): run `memkit store check {Path(path).parent}` "
                        f"and `memkit store repair {Path(path).parent}`; a file that cannot be read must be restored "
                        "from a backup")


def _safe(url: str) -> str:
    """A database URL without its password, for messages."""
    return re.sub(r"://([^:/@]+):[^@]*@", r"://\1:***@", url)


class _ByteLocks:
    """The byte locks of one lock file, one per process: a byte is locked for other processes (``fcntl``, on
    POSIX) and for the other threads and stores of this one (a thread lock per byte). POSIX locks belong to the
    process, not to a descriptor: two stores of one process with a descriptor each would both hold a byte, and
    either's close would release the other's locks, so every store of the file in a process shares this."""

    _open: dict[str, "_ByteLocks"] = {}
    _guard = threading.Lock()

    def __init__(self, path: str) -> None:
        self.path, self.users = path, 0
        self.fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644) if importlib.util.find_spec("fcntl") else None
        self.threads: dict[int, threading.RLock] = {}  # type: ignore[valid-type]
        self.depth: dict[int, int] = {}  # how deep the thread holding a byte holds it

    @classmethod
    def of(cls, path: str) -> "_ByteLocks":
        with cls._guard:
            locks = cls._open.get(path)
            if locks is None:
                locks = cls._open[path] = cls(path)
            locks.users += 1
            return locks

    def release(self) -> None:
        with self._guard:
            self.users -= 1
            if self.users == 0:
                del self._open[self.path]
                if self.fd is not None:
                    os.close(self.fd)

    @contextmanager
    def hold(self, offset: int) -> Iterator[None]:
        """The byte at ``offset``, for this thread (again, if it holds it already) and no other."""
        with self._guard:
            lock = self.threads.setdefault(offset, threading.RLock())
        with lock:
            self.depth[offset] = depth = self.depth.get(offset, 0) + 1
            try:
                if self.fd is None or depth > 1:  # Windows: SQLite's own locking only; held already: held
                    yield
                    return
                import fcntl

                fcntl.lockf(self.fd, fcntl.LOCK_EX, 1, offset)
                try:
                    yield
                finally:
                    fcntl.lockf(self.fd, fcntl.LOCK_UN, 1, offset)
            finally:
                self.depth[offset] -= 1


def _advisory_lock(url: str, namespace: str) -> tuple[Callable[[str], AbstractContextManager[None]], Callable[[], None]]:
    """A per-owner lock held as a PostgreSQL session advisory lock, on one connection per thread (a thread that
    takes an owner's lock again takes it on the same session, where advisory locks are reentrant); and the
    function that closes those connections with the store."""
    import psycopg

    local, made, guard = threading.local(), [], threading.Lock()

    @contextmanager
    def lock(owner: str) -> Iterator[None]:
        conn = getattr(local, "conn", None)
        if conn is None or conn.closed:
            conn = local.conn = psycopg.connect(url, autocommit=True)
            with guard:
                made.append(conn)
        # 60 bits of a hash of namespace and owner: fits PostgreSQL's signed bigint
        key = int(hashlib.sha256(f"{namespace}/{owner}".encode()).hexdigest()[:15], 16)
        conn.execute("SELECT pg_advisory_lock(%s)", (key,))
        try:
            yield
        finally:
            conn.execute("SELECT pg_advisory_unlock(%s)", (key,))

    def close() -> None:
        with guard:
            for conn in made:
                conn.close()
            made.clear()

    return lock, close
