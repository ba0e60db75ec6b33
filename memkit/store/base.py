"""The store's seams: what holds vectors (``VectorIndex``), what ranks words (``TextIndex``), and the shared rules
every backend applies (owners, parts, filters, ranking). ``FactStore`` (``memkit/store/composed.py``) composes
one of each with the records and the event log; the read path, the policies and the tests use only it.
"""

from __future__ import annotations

import enum
import functools
import hashlib
import itertools
import json
import os
from typing import Any, Callable, Iterable, Iterator, Protocol, Sequence, TypeVar

from . import passages
from .. import validate
from ..errors import InvalidArgument, IsolationError, StorePathError, StoreURLError
from ..types import Episode, Fact

T = TypeVar("T")
PARTS = ("facts", "episodes")  # the two kinds of item a user's index holds
EMBED_BATCH = 32  # pending episodes of one user embedded together (docs/architecture.md §2)
BULK_SIZE = 1000  # in bulk mode: pending episodes of all users embedded together (``FactStore.bulk``)
SIMILARITY_WEIGHT, IMPORTANCE_WEIGHT = 0.7, 0.3
# The floor applies to similarity. The seeds' 0.6 was set for large API embedders; with MiniLM a
# question and the fact answering it have a median cosine of 0.46 on the built-in suite, and small talk
# reaches 0.28 at p90, so the offline default is 0.3 (notebook 5 shows the trade-off).
DEFAULT_FLOOR = 0.3
OPEN_END = 1e18  # a current fact's valid_to, as filters compare it


TIES = 10  # items read past an index's cut at first, so that items tied at it are chosen by id


def past_ties(fetch: Callable[[int], list[T]], n: int, score: Callable[[T], float]) -> list[T]:
    """An index's best items, ``fetch(m)`` (best first), for a cut at ``n``, with every item tied with the
    n-th among them: ``m`` starts at ``n + TIES`` and doubles while the last item read still scores as the
    n-th. Equal scores (the same words said in several sessions) come back in the index's own order (segment,
    graph), which a merge or another build changes, so a caller that orders ties by id and cuts at ``n``
    ranks the same every time only if it sees all of them."""
    m = n + TIES
    while True:
        items = fetch(m)
        if len(items) < m or n <= 0 or score(items[-1]) < score(items[n - 1]):
            return items
        m *= 2


def rank_score(similarity: float, importance: float, weights: tuple[float, float]) -> float:
    """The ranking score: ``w_sim * similarity + w_imp * importance`` (0.7/0.3 by default)."""
    return weights[0] * similarity + weights[1] * importance


def owner_of(user_id: str) -> str:
    """The hash that names ``user_id``'s index and owns its rows (a user id never reaches a backend as-is)."""
    return _owner_hash(validate.user_id(user_id))  # checked first: a list or a blank is named, not hashed


@functools.lru_cache(maxsize=1 << 12)  # every store call of a read names its user: hashed once, not eight times
def _owner_hash(user_id: str) -> str:
    return hashlib.sha256(user_id.encode("utf-8", "surrogatepass")).hexdigest()[:40]


def episode_text(e: Episode) -> str:
    """What the dense and lexical channels index for an episode (or one of its passages): speaker and words."""
    return f"{e.speaker}: {e.content}"


def episode_items(e: Episode) -> list[tuple[str, str]]:
    """``(index id, text)`` of what an episode is indexed as: the whole turn, or each passage of a turn longer
    than its ``passage_tokens`` (``memkit/store/passages.py``)."""
    return [(x.ref, episode_text(x)) for x in map(e.excerpt, passages.spans(e.content, e.passage_tokens))]


def dense_items(e: Episode) -> list[tuple[str, str]]:
    """The part of ``episode_items`` the dense index holds: the first ``e.dense_passages`` (all with 0)."""
    items = episode_items(e)
    return items[:e.dense_passages] if e.dense_passages else items


def text_rows(records: Any, log: Any) -> Iterator[tuple[str, str, str, str]]:
    """What a text index derives from: ``(owner, part, id, text)`` of every current fact (``log``'s profile) and
    every embedded episode (``records``), its passages one by one."""
    return itertools.chain(((owner, "facts", ref, body) for owner, ref, body in log.all_facts()),
                           ((owner, "episodes", ref, text) for owner, e in records.embedded()
                            for ref, text in episode_items(e)))


def check_parts(parts: "Iterable[str] | dict[str, int]") -> None:
    """Known part names, and with a dict of part -> how many items, counts a search can be asked for
    (``validate.MAX_K``): Chroma and tantivy allocate what they are asked for."""
    unknown = set(parts) - set(PARTS)
    if unknown:
        raise InvalidArgument(f"unknown parts {sorted(unknown)}; choose from {sorted(PARTS)}")
    for part, k in parts.items() if isinstance(parts, dict) else ():
        validate.count(f"k ({part})", k, validate.MAX_K)


# ---- filters: Chroma's ``where`` language, applied by memkit to facts on every backend ---------------------
def check_where(where: dict[str, Any] | None) -> dict[str, Any] | None:
    """A caller's filter; one that names ``user_id`` is refused: the store scopes every call to one user."""
    if where and _names_user(where):
        raise IsolationError("a where clause may not name user_id: the store scopes every call to one user")
    return where or None


def fields(f: Fact) -> dict[str, Any]:
    """A fact's fields as a filter sees them (missing text fields are ``""``, an open end is ``OPEN_END``)."""
    return {"kind": f.kind, "key": f.key or "", "value": f.value or "", "importance": float(f.importance),
            "source": json.dumps(list(f.source)), "created_at": f.created_at, "valid_from": f.valid_from,
            "valid_to": OPEN_END if f.valid_to is None else f.valid_to, "superseded_by": f.superseded_by or ""}


_COMPARE = {"$eq": lambda a, b: a == b, "$ne": lambda a, b: a != b, "$gt": lambda a, b: a > b,
            "$gte": lambda a, b: a >= b, "$lt": lambda a, b: a < b, "$lte": lambda a, b: a <= b,
            "$in": lambda a, b: a in b, "$nin": lambda a, b: a not in b}


def matches(where: dict[str, Any] | None, f: Fact) -> bool:
    """Whether fact ``f`` passes ``where`` (``$and``, ``$or``, ``$eq``, ``$ne``, ``$gt``, ``$gte``, ``$lt``,
    ``$lte``, ``$in``, ``$nin``, or a bare value for equality, as in Chroma); an unknown operator or field is a
    ``ValueError``."""
    if not where:
        return True
    values = fields(f)
    for name, cond in where.items():
        if name in ("$and", "$or"):
            results = [matches(c, f) for c in cond]
            if not (all(results) if name == "$and" else any(results)):
                return False
            continue
        if name not in values:
            raise ValueError(f"unknown field {name!r} in where; choose from {sorted(values)}")
        ops = cond if isinstance(cond, dict) else {"$eq": cond}
        for op, operand in ops.items():
            if op not in _COMPARE:
                raise ValueError(f"unknown operator {op!r} in where; choose from {sorted(_COMPARE)}")
            if not _COMPARE[op](values[name], operand):
                return False
    return True


def _names_user(where: Any) -> bool:
    if isinstance(where, dict):
        return any(k == "user_id" or _names_user(v) for k, v in where.items())
    if isinstance(where, list):
        return any(_names_user(x) for x in where)
    return False


# ---- the seams -----------------------------------------------------------------------------------------
class Capability(enum.Enum):
    """What a ``VectorIndex`` may have beyond the base methods, found by what it defines (as langgraph's checkpoint
    conformance suite detects a saver's extended capabilities by the methods it overrides): nothing to declare,
    so nothing to declare wrongly. memkit/store/conformance.py checks the base promises and each one found."""

    MIGRATE = "migrate() -> int: moves what an older memkit wrote to the current layout, when a store opens"
    COLLECTIONS = ("collection_name(owner) -> str, owners(), count(owner), fact_ids(owner): a collection per owner, "
                   "which a store's check compares with its records")
    DATABASE = "db: the database its vectors live in; when it is the records' own, a write's parts commit in one transaction"


_MARKS = {Capability.MIGRATE: "migrate", Capability.COLLECTIONS: "collection_name", Capability.DATABASE: "db"}


def capabilities(index: Any) -> frozenset[Capability]:
    """The capabilities ``index`` has: each one whose method (or, for ``DATABASE``, attribute) it defines."""
    return frozenset(c for c, name in _MARKS.items() if getattr(index, name, None) is not None)


class VectorIndex(Protocol):
    """Vectors of every user's current facts and episodes, searched within one owner only; what it has beyond
    these methods is a ``Capability``, found by ``capabilities(index)``."""

    dimension: int

    def put(self, owner: str, user_id: str, part: str, ids: Sequence[str], vectors: Sequence[Sequence[float]]) -> None:
        """Insert or replace the owner's items ``ids`` with ``vectors``. Vectors only: an item's text lives in
        the records and the profile, which a read takes it from."""
        ...

    def remove(self, owner: str, user_id: str, part: str, ids: Sequence[str]) -> None: ...

    def nearest(self, owner: str, user_id: str, vector: Sequence[float], n: int) -> list[tuple[str, str, float]]:
        """``(part, id, similarity)`` of the owner's ``n`` items nearest to ``vector``, closest first."""
        ...

    def warm(self, owner: str, user_id: str) -> None: ...

    def drop(self, owner: str, user_id: str) -> None: ...

    def close(self) -> None: ...


class TextIndex(Protocol):
    """Word search over every user's current facts and episodes, within one owner's part only."""

    @property
    def filled(self) -> bool: ...

    def mark_filled(self) -> None: ...

    def fill(self, rows: Iterable[tuple[str, str, str, str]]) -> None: ...

    def change(self, owner: str, part: str, put: Sequence[tuple[str, str]], remove: Sequence[str] = ()) -> None: ...

    def search(self, owner: str, part: str, query: str, k: int) -> list[tuple[str, float]]: ...

    def drop(self, owner: str, parts: Sequence[str]) -> None: ...

    def close(self) -> None: ...


STORE_URLS = ("memory://", "file://PATH", "chroma://HOST:PORT", "postgresql://...")


def file_path(url: str) -> str:
    """The local folder a ``file:`` URL names, as RFC 8089 reads it: ``file:///P``, ``file://localhost/P`` or
    ``file:/P``, percent-decoded; another host, a relative path, ``~``, a query or a fragment is ``StoreURLError``."""
    from urllib.parse import unquote, urlsplit

    kinds = f"; store URLs: {', '.join(STORE_URLS)}"
    parts = urlsplit(url)
    if parts.query or parts.fragment or url.endswith(("?", "#")):
        raise StoreURLError(f"{url!r}: a file: store URL takes no query or fragment (pass options as keywords: "
                            "FactStore.from_url(url, max_users=...))" + kinds)
    if parts.netloc.startswith("~") or parts.path.startswith("~"):
        raise StoreURLError(f"{url!r}: '~' is not expanded in a URL; write the folder's absolute path "
                            f"(file://{os.path.expanduser('~')}/...)" + kinds)
    if parts.netloc not in ("", "localhost"):
        raise StoreURLError(f"{url!r} names the host {parts.netloc!r}: a file: URL is a folder on this machine, "
                            "file:///absolute/path (a relative path: file://$PWD/path)" + kinds)
    path = unquote(parts.path, errors="strict")
    if not path.startswith("/") or path == "/":
        raise StoreURLError(f"{url!r} names no folder path: write file:///absolute/path/to/folder" + kinds)
    if "\x00" in path:
        raise StorePathError(f"{url!r}: the path holds a NUL character, which no file name can")
    return path


def parse_store_url(url: str) -> tuple[str, str]:
    """``(kind, where)`` of a store URL (``FactStore.from_url``): ``("memory", "")``, ``("file", PATH)``,
    ``("chroma", "HOST:PORT")`` or ``("postgres", URL)``; ``ephemeral`` is ``memory://``. ``StoreURLError``
    names the kinds when ``url`` is none of them."""
    if not isinstance(url, str):
        raise StoreURLError(f"a store URL is a string such as {', '.join(STORE_URLS)}; got {url!r}")
    if url in ("ephemeral", "memory://", "memory:"):
        return "memory", ""
    if url.startswith("file:"):
        return "file", file_path(url)
    if url.startswith("chroma://"):
        host, _, port = url[len("chroma://"):].rpartition(":")
        if host and port.isdigit():
            return "chroma", f"{host}:{port}"
    if url.startswith(("postgresql://", "postgres://")):
        return "postgres", url
    raise StoreURLError(f"{url!r} is not a store URL; use one of {', '.join(STORE_URLS)}")
