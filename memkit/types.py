"""The values memkit passes around: turns, facts, events, search hits and built contexts."""

from __future__ import annotations

import random
import threading
import time
import uuid
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field, replace
from enum import Enum
from typing import Any, Iterable


def now() -> float:
    """Seconds since the epoch; the one clock memkit uses."""
    return time.time()


_SEEDED: list[random.Random] = []
_SEEDED_LOCK = threading.Lock()


def new_id(prefix: str = "") -> str:
    """A fresh random id (drawn from the seeded generator inside ``reproducible_ids``)."""
    if _SEEDED:
        with _SEEDED_LOCK:
            if _SEEDED:
                return f"{prefix}{_SEEDED[-1].getrandbits(64):016x}"
    return prefix + uuid.uuid4().hex[:16]


@contextmanager
def reproducible_ids(seed: str) -> Any:
    """Inside this block, ids come from a generator seeded by ``seed``: a benchmark job draws the same ids
    wherever and whenever it runs, so ties broken by id break the same way (``eval/execution.py``)."""
    with _SEEDED_LOCK:
        _SEEDED.append(random.Random(seed))
    try:
        yield
    finally:
        with _SEEDED_LOCK:
            _SEEDED.pop()


@dataclass(frozen=True)
class Turn:
    """One message of a session."""

    id: str
    session_id: str
    user_id: str
    role: str
    content: str
    tokens: int = 0
    time: float = field(default_factory=now)


@dataclass(frozen=True)
class Fact:
    """A durable statement about one user (docs/architecture.md §1)."""

    id: str
    user_id: str
    text: str
    kind: str = "semantic"
    key: str | None = None
    value: str | None = None
    importance: float = 0.5
    source: tuple[str, ...] = ()
    created_at: float = field(default_factory=now)
    valid_from: float = field(default_factory=now)
    valid_to: float | None = None
    superseded_by: str | None = None

    @property
    def current(self) -> bool:
        return self.valid_to is None

    def evolve(self, **changes: Any) -> "Fact":
        """A copy with ``changes`` applied."""
        return replace(self, **changes)

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["source"] = list(self.source)
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "Fact":
        d = dict(d)
        d["source"] = tuple(d.get("source") or ())
        return cls(**{k: v for k, v in d.items() if k in cls.__dataclass_fields__})


@dataclass(frozen=True)
class Episode:
    """One observed turn kept as long-term memory: what was said, by whom, in which session, when.

    ``id`` is the store's sequence number; ``turn_id`` is the caller's id of the turn; ``pos`` its place
    in the session. ``passage_tokens`` is the passage size its turn is indexed at (0: whole;
    ``memkit/store/passages.py``), and ``dense_passages`` how many of those passages, from the first, have a
    vector (0: all; the lexical index has every one). A recalled passage is an excerpt: ``span`` is its character range in the turn
    and the turn's length, ``(start, end, length)``, and ``content`` that range. Episodes are append-only: conflict policies never edit them.
    """

    id: str
    user_id: str
    session_id: str
    turn_id: str
    speaker: str
    role: str
    content: str
    time: float
    tokens: int = 0
    pos: int = 0
    passage_tokens: int = 0
    dense_passages: int = 0
    span: tuple[int, int, int] | None = None

    def evolve(self, **changes: Any) -> "Episode":
        return replace(self, **changes)

    @property
    def ref(self) -> str:
        """Its id in the indexes: the episode's, or its passage's (``<id>:<start>-<end>``)."""
        return self.id if self.span is None else f"{self.id}:{self.span[0]}-{self.span[1]}"

    def excerpt(self, span: tuple[int, int]) -> "Episode":
        """The passage ``span`` of this turn (the whole turn when ``span`` covers it)."""
        if span == (0, len(self.content)):
            return self
        return replace(self, content=self.content[span[0]:span[1]], span=(span[0], span[1], len(self.content)))


@dataclass(frozen=True)
class Recalled:
    """An item found by hybrid recall: a ``Fact`` or an ``Episode``, its fused score, and its rank per channel.

    ``ranks`` maps a channel (``"lexical"``, ``"dense"``) to the item's 1-based rank in it; ``similarity`` is
    the dense similarity when the dense channel measured it (NaN otherwise).
    """

    item: Any
    score: float
    ranks: dict[str, int]
    similarity: float = float("nan")
    why: str = ""

    @property
    def channels(self) -> str:
        return "+".join(f"{c}#{r}" for c, r in sorted(self.ranks.items()))


@dataclass(frozen=True)
class Candidate:
    """A fact proposed by an extractor, before it has an id or an owner."""

    text: str
    kind: str = "semantic"
    key: str | None = None
    value: str | None = None
    importance: float = 0.5
    negated: bool = False
    source: tuple[str, ...] = ()


class EventKind(str, Enum):
    ADD = "ADD"
    UPDATE = "UPDATE"
    DELETE = "DELETE"
    NOOP = "NOOP"
    INVALIDATE = "INVALIDATE"
    ERROR = "ERROR"


@dataclass(frozen=True)
class Event:
    """One planned or applied change to a user's facts; ``before``/``after`` are facts or None."""

    kind: EventKind
    user_id: str
    fact_id: str | None = None
    before: Fact | None = None
    after: Fact | None = None
    reason: str = ""
    source: tuple[str, ...] = ()
    time: float = field(default_factory=now)
    id: str = field(default_factory=new_id)

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id, "kind": self.kind.value, "user_id": self.user_id, "fact_id": self.fact_id,
            "before": self.before.to_dict() if self.before else None,
            "after": self.after.to_dict() if self.after else None,
            "reason": self.reason, "source": list(self.source), "time": self.time,
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "Event":
        return cls(
            kind=EventKind(d["kind"]), user_id=d["user_id"], fact_id=d.get("fact_id"),
            before=Fact.from_dict(d["before"]) if d.get("before") else None,
            after=Fact.from_dict(d["after"]) if d.get("after") else None,
            reason=d.get("reason", ""), source=tuple(d.get("source") or ()),
            time=d["time"], id=d["id"],
        )


class Why(str):
    """Why an item is in a read: the text the context account shows (``"dense #1 + lexical #3"``, ``"profile"``)
    and, as data, its ``kind`` (``"recalled"``, ``"profile"``, ``"instruction"``, ...) and, for a recalled item,
    its rank in each ranking that found it (``ranks``). A plain string given as a ``why`` is its own kind."""

    kind: str
    ranks: tuple[tuple[str, int], ...]

    def __new__(cls, kind: str, ranks: "tuple[tuple[str, int], ...]" = ()) -> "Why":
        ranks = tuple(sorted(ranks))
        self = super().__new__(cls, " + ".join(f"{c} #{r}" for c, r in ranks) if ranks else kind)
        self.kind, self.ranks = kind, ranks
        return self

    def __getnewargs__(self) -> tuple[str, tuple[tuple[str, int], ...]]:  # pickled as what it is made of
        return self.kind, self.ranks


def as_why(why: str) -> Why:
    return why if isinstance(why, Why) else Why(why)


@dataclass(frozen=True)
class Hit:
    """A fact found by a search: ``similarity`` in [-1, 1] (higher is closer), the ranking ``score``, and ``why`` it is here."""

    fact: Fact
    similarity: float
    score: float
    why: Why = Why("similar")

    def __post_init__(self) -> None:
        object.__setattr__(self, "why", as_why(self.why))


@dataclass(frozen=True)
class Part:
    """One block of a built context and why it is there."""

    name: str
    text: str
    tokens: int
    items: tuple[dict[str, Any], ...] = ()


@dataclass(frozen=True)
class Context:
    """What ``Memory.context`` built: chat messages plus an account of every part."""

    messages: tuple[dict[str, str], ...]
    parts: tuple[Part, ...]
    budget: int
    notes: tuple[str, ...] = ()  # what the reader should know about how this read went (a cold read, ...)

    @property
    def turn_ids(self) -> tuple[str, ...]:
        """The turns the context carries: the session's shown turns, those its summary covers, the episodes."""
        by_name = {p.name: p for p in self.parts}
        return tuple(item["turn_id"] for name in ("turns", "summary", "episodes") if name in by_name
                     for item in by_name[name].items if "turn_id" in item)

    @property
    def fact_ids(self) -> tuple[str, ...]:
        """The facts the context shows."""
        return tuple(item["id"] for p in self.parts if p.name == "facts" for item in p.items)

    @property
    def tokens(self) -> int:
        return sum(p.tokens for p in self.parts)

    @property
    def text(self) -> str:
        return "\n".join(m["content"] for m in self.messages)

    def account(self) -> list[dict[str, Any]]:
        """One row per part: name, tokens, number of items, and why each item is there (``"dense #1 + lexical
        #2"`` for a recalled item, ``"profile"`` for a profile fact, ``"instruction"`` for a standing instruction
        that holds for the question, ``"summary"`` / ``"window"`` for the session's own)."""
        default = {"summary": "summary", "turns": "window", "documents": "retriever"}
        return [{"part": p.name, "tokens": p.tokens, "items": len(p.items),
                 "why": [it.get("why", default.get(p.name, "")) for it in p.items]} for p in self.parts]


def fold(events: "Iterable[Event]", state: "dict[str, Fact | None] | None" = None) -> "dict[str, Fact | None]":
    """The one rule that turns events into fact state: each fact id maps to its last version (ADD, UPDATE:
    current; INVALIDATE: its closed version, ``valid_to`` set) or to None (DELETE). NOOP and ERROR change
    nothing. Pure: ``state`` (a fold so far) is copied, never changed."""
    out = dict(state or {})
    for e in events:
        if e.kind in (EventKind.ADD, EventKind.UPDATE, EventKind.INVALIDATE) and e.after is not None:
            out[e.after.id] = e.after
        elif e.kind == EventKind.DELETE and e.fact_id:
            out[e.fact_id] = None
    return out


def current(state: "dict[str, Fact | None]") -> "list[Fact]":
    """The facts of a fold that hold now (not deleted, not closed)."""
    return [f for f in state.values() if f is not None and f.valid_to is None]
