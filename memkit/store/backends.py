"""The parts each of ``FactStore``'s constructors composes (docs/architecture.md §8): keyword arguments for
``FactStore(...)``, built here so the store's class holds no backend's set-up."""

from __future__ import annotations

import inspect
import re
import uuid
from pathlib import Path
from typing import Any

from .. import validate
from ..errors import StoreURLError
from .base import parse_store_url
from .chroma import MAX_USERS, ChromaIndex
from .log import EventLog
from .records import Records
from .sql import Database


def ephemeral(embedder: Any) -> dict[str, Any]:
    import chromadb

    # Every EphemeralClient in a process shares one system: a random namespace keeps stores apart.
    vectors = ChromaIndex(chromadb.EphemeralClient(), embedder, f"mk{uuid.uuid4().hex[:8]}", "ephemeral")
    return dict(vectors=vectors, records=Records(), embedder=embedder, backend="ephemeral")


def from_url(url: str, embedder: Any, namespace: str, **options: Any) -> dict[str, Any]:
    """The parts of the store a URL names (``FactStore.from_url``); ``options`` go to its constructor."""
    kind, where = parse_store_url(url)
    validate.namespace(namespace)  # before anything is written: it names files beside the records
    make = {"memory": ephemeral, "file": persistent, "chroma": http, "postgres": postgres}[kind]
    fixed = {"embedder", "namespace", "path", "url", "host", "port"}  # what the URL and the caller give
    unknown = set(options) - (set(inspect.signature(make).parameters) - fixed)
    if unknown:
        raise StoreURLError(f"{url!r}: a {kind} store takes no {', '.join(sorted(unknown))}")
    if kind == "memory":
        return ephemeral(embedder)
    if kind == "chroma":
        host, _, port = where.rpartition(":")
        return http(host, int(port), embedder, namespace, **options)
    return make(where, embedder, namespace, **options)


def persistent(path: str, embedder: Any, namespace: str, max_users: int = MAX_USERS) -> dict[str, Any]:
    validate.namespace(namespace)
    vectors = ChromaIndex.persistent(path, embedder, namespace, max_users)
    return dict(vectors=vectors, records=Records(Path(path) / f"{namespace}.sqlite3"), embedder=embedder,
                backend="persistent")


def http(host: str, port: int, embedder: Any, namespace: str, records: str | Path | None = None,
         log: str | None = None) -> dict[str, Any]:
    validate.namespace(namespace)
    vectors = ChromaIndex.http(host, port, embedder, namespace)
    if records is None:  # shared by every process of this machine that talks to the same server
        folder = Path.home() / ".memkit"
        folder.mkdir(parents=True, exist_ok=True)
        records = folder / f"records-{re.sub(r'[^A-Za-z0-9._-]', '_', host)}-{port}-{namespace}.sqlite3"
    return dict(vectors=vectors, records=Records(records), log=EventLog.postgres(log, namespace) if log else None,
                embedder=embedder, backend="http")


def postgres(url: str, embedder: Any, namespace: str) -> dict[str, Any]:
    from .postgres import PgTextIndex, PgVectorIndex

    validate.namespace(namespace)

    db = Database.postgres(url, namespace)
    return dict(vectors=PgVectorIndex(db, embedder), records=Records(db), log=EventLog(db), text=PgTextIndex(db),
                embedder=embedder, backend="postgres")
