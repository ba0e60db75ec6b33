"""memkit as LangGraph's long-term store: ``MemkitStore`` is a ``langgraph.store.base.BaseStore`` on memkit's
semantic layer, for a graph that keeps its thread in LangGraph's own checkpointer (docs/usage.md, "LangGraph").

**Namespaces are users.** Each namespace (``("memories", "ana")``) is one memkit user, whose id is the
namespace written as JSON (``["memories", "ana"]``): its items live in that user's profile, vectors, lexical
index and event log, apart from every other namespace's as users are apart. An item is a fact: its key is the
fact's key, its value (a JSON object) the fact's value, and the text embedded for search is the value's
``index`` fields (by default every string in it). A put writes through memkit's write path (``WritePath``)
under ``ItemPolicy``, so every change is in the event log with its history; a delete is a DELETE event.

``search`` ranks a namespace's items by memkit's hybrid recall (dense and lexical, fused by rank) when given a
``query``, else by when they were first put; ``filter`` matches values (equality, or ``$eq``, ``$ne``,
``$gt``, ``$gte``, ``$lt``, ``$lte``); a ``namespace_prefix`` covers every namespace under it. The async forms
run the same calls on a bounded pool of worker threads. TTLs are not supported (``supports_ttl`` is False).
"""

from __future__ import annotations

import asyncio
import json
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Annotated, Any, Callable, ClassVar, Iterable, Sequence, TypedDict

from langchain_core.runnables import RunnableConfig
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages
from langgraph.store.base import (BaseStore, GetOp, InvalidNamespaceError, Item, ListNamespacesOp, Op, PutOp,
                                  Result, SearchItem, SearchOp)

from .. import validate
from ..errors import InvalidArgument
from ..memory import Memory
from ..read.pipeline import ReadOptions, search_facts
from ..store.lexicon import STOPWORDS, stems
from ..read.recall import RecallOptions
from ..store import FactStore
from ..strategies import NoFacts
from ..types import Candidate, Event, EventKind, Fact
from ..write import reconcile
from ..write.path import WritePath

WORKERS = 4
INDEXED, UNINDEXED = "item", "item-unindexed"  # a fact's kind: an item query search may find, or one it may not
OPERATORS = {"$eq": lambda a, b: a == b, "$ne": lambda a, b: a != b, "$gt": lambda a, b: a > b,
             "$gte": lambda a, b: a >= b, "$lt": lambda a, b: a < b, "$lte": lambda a, b: a <= b}


def user_of(namespace: tuple[str, ...]) -> str:
    """The memkit user id a namespace maps to (its labels as a JSON list)."""
    return json.dumps(list(namespace), ensure_ascii=False)


def namespace_of(user_id: str) -> tuple[str, ...] | None:
    """The namespace a memkit user id stands for, or None for a user this store did not make."""
    try:
        labels = json.loads(user_id)
    except ValueError:
        return None
    return tuple(labels) if isinstance(labels, list) and labels and all(isinstance(x, str) for x in labels) else None


@dataclass(frozen=True)
class ItemPolicy:
    """A store's put: the item under a key is replaced exactly (an UPDATE, the old value kept in history), a
    put of the same value is a NOOP, a new key an ADD. Unlike the fact policies, values are compared as
    written (case and all)."""

    name: ClassVar[str] = "item"
    resolves_at_read: ClassVar[bool] = False

    def plan(self, facts: reconcile.FactReader, user_id: str, cands: Sequence[Candidate], t: float) -> list[Event]:
        events = []
        for c in cands:
            old = next(iter(facts.profile(user_id, keys=[c.key])), None)
            if old is None:
                new = reconcile.to_fact(user_id, c, t)
                events.append(Event(EventKind.ADD, user_id, new.id, None, new, f"put {c.key}", c.source, t))
            elif old.value == c.value and old.text == c.text:
                events.append(Event(EventKind.NOOP, user_id, old.id, old, old, f"{c.key} unchanged", c.source, t))
            else:
                new = old.evolve(text=c.text, value=c.value, valid_from=t)
                events.append(Event(EventKind.UPDATE, user_id, old.id, old, new, f"put {c.key}", c.source, t))
        return events

    def resolve(self, facts: Sequence[Fact]) -> list[Fact]:
        return list(facts)


def _labels(namespace: Any, empty: bool) -> tuple[str, ...]:
    """A namespace as a tuple of labels, or LangGraph's ``InvalidNamespaceError`` naming what is wrong: a string
    (which would be read as one label per character), None, a label that is not a non-empty string."""
    if not isinstance(namespace, (tuple, list)):
        raise InvalidNamespaceError(f"a namespace is a tuple of strings, like ('memories', 'ana'), got {namespace!r}")
    if not namespace and not empty:
        raise InvalidNamespaceError("a namespace cannot be empty: it names the user an item belongs to")
    for label in namespace:
        if not isinstance(label, str) or not label or "\x00" in label:
            raise InvalidNamespaceError(f"namespace labels are non-empty strings without NUL, got {label!r} in "
                                        f"{tuple(namespace)!r}")
    return tuple(namespace)


def checked(op: Op) -> Op:
    """``op`` with its namespace a tuple, or the named error for what a careless caller could pass: a wrong
    namespace shape (``InvalidNamespaceError``), a key that is not a string, a negative limit or offset, a depth
    below 1, a query that is not text (``InvalidArgument``)."""
    if isinstance(op, (GetOp, PutOp)):
        if not isinstance(op.key, str):
            raise InvalidArgument(f"an item's key is a string, got {op.key!r}")
        return op._replace(namespace=_labels(op.namespace, empty=False))
    if isinstance(op, SearchOp):
        validate.count("limit", op.limit), validate.count("offset", op.offset)
        if op.query is not None:
            validate.query(op.query)
        return op._replace(namespace_prefix=_labels(op.namespace_prefix, empty=True))
    if isinstance(op, ListNamespacesOp):
        validate.count("limit", op.limit), validate.count("offset", op.offset)
        if op.max_depth is not None:
            validate.positive_int("max_depth", op.max_depth)
        for cond in op.match_conditions or ():
            _labels(cond.path, empty=True)
    return op


def _text(value: dict[str, Any], fields: Sequence[str] | None) -> str:
    """What is embedded and indexed for an item: its ``fields`` (top-level keys), else every string in it."""
    if fields:
        parts = [value.get(f) for f in fields]
    else:
        parts = list(_strings(value))
    text = " ".join(p if isinstance(p, str) else json.dumps(p, ensure_ascii=False) for p in parts if p is not None)
    return text.strip() or json.dumps(value, ensure_ascii=False, sort_keys=True)


def _strings(value: Any) -> Iterable[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for v in value.values():
            yield from _strings(v)
    elif isinstance(value, list):
        for v in value:
            yield from _strings(v)


def _matches(value: dict[str, Any], filter: dict[str, Any] | None) -> bool:
    for field, wanted in (filter or {}).items():
        have = value.get(field)
        if isinstance(wanted, dict) and wanted and all(k in OPERATORS for k in wanted):
            try:
                if not all(OPERATORS[op](have, v) for op, v in wanted.items()):
                    return False
            except TypeError:  # an order between values that have none (None < 3)
                return False
        elif have != wanted:
            return False
    return True


def _when(t: float) -> datetime:
    return datetime.fromtimestamp(t, tz=timezone.utc)


class MemkitStore(BaseStore):
    """LangGraph's ``BaseStore`` on a memkit ``FactStore`` (in memory, a folder, a server or PostgreSQL)."""

    supports_ttl: bool = False

    def __init__(self, store: FactStore | None = None, *, index: Sequence[str] | None = None,
                 workers: int = WORKERS) -> None:
        """``index``: the value fields embedded for search by default (every string in a value when None); a
        put's own ``index`` wins, and ``index=False`` keeps an item out of query search."""
        self.store = store or FactStore.ephemeral()
        self.fields = list(index) if index else None
        self.writes = WritePath(self.store, NoFacts(), ItemPolicy())
        self._pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="memkit-langgraph")

    # ---- BaseStore ------------------------------------------------------------------------------
    def batch(self, ops: Iterable[Op]) -> list[Result]:
        return [self._one(op) for op in ops]

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        return await asyncio.get_running_loop().run_in_executor(self._pool, self.batch, list(ops))

    def close(self) -> None:
        self._pool.shutdown(wait=True)

    def _one(self, op: Op) -> Result:
        op = checked(op)
        if isinstance(op, GetOp):
            fact = self._fact(op.namespace, op.key)
            return None if fact is None else self._item(Item, op.namespace, fact)
        if isinstance(op, PutOp):
            return self._put(op)
        if isinstance(op, SearchOp):
            return self._search(op)
        if isinstance(op, ListNamespacesOp):
            return self._namespaces(op)
        raise TypeError(f"unknown store operation {type(op).__name__}")

    # ---- the operations -------------------------------------------------------------------------
    def _fact(self, namespace: tuple[str, ...], key: str) -> Fact | None:
        return next(iter(self.store.profile(user_of(namespace), keys=[key])), None)

    def _item(self, kind: type, namespace: tuple[str, ...], fact: Fact, score: float | None = None) -> Any:
        fields = dict(value=json.loads(fact.value or "{}"), key=fact.key, namespace=namespace,
                      created_at=_when(fact.created_at), updated_at=_when(fact.valid_from))
        return kind(**fields, score=score) if kind is SearchItem else kind(**fields)

    def _put(self, op: PutOp) -> None:
        user = user_of(op.namespace)
        if op.value is None:
            old = self._fact(op.namespace, op.key)
            if old is not None:
                with self.store.user_lock(user):
                    reconcile.apply(self.store, user, [Event(EventKind.DELETE, user, old.id, old, None, f"delete {op.key}")])
            return None
        if not isinstance(op.value, dict):
            raise InvalidArgument(f"a store item's value is a dict, got {type(op.value).__name__}")
        fields = self.fields if op.index is None else (list(op.index) if op.index else None)
        try:
            value = json.dumps(op.value, ensure_ascii=False, sort_keys=True, allow_nan=False)
        except (TypeError, ValueError) as e:  # an object JSON cannot hold, NaN or infinity: nothing is written
            raise InvalidArgument(f"a store item's value must be JSON (strings, finite numbers, lists, dicts): {e}") from None
        kind = UNINDEXED if op.index is False else INDEXED
        text = _text(op.value, fields) if kind == INDEXED else value
        self.writes.write(user, [Candidate(text=text, key=op.key, value=value, kind=kind, source=(op.key,))])
        return None

    def _under(self, prefix: tuple[str, ...]) -> list[tuple[str, ...]]:
        """The namespaces with items under ``prefix``, in order."""
        found = (namespace_of(u) for u in self.store.users())
        return sorted(ns for ns in found if ns is not None and ns[:len(prefix)] == tuple(prefix))

    def _search(self, op: SearchOp) -> list[SearchItem]:
        hits: list[tuple[float, tuple[str, ...], Fact]] = []
        for ns in self._under(op.namespace_prefix):
            facts = self.store.profile(user_of(ns))
            if op.query:
                depth = max(30, min(len(facts), 100_000))
                options = ReadOptions(k=depth, min_score=-1.0, profile_tokens=0, recall=RecallOptions(depth=depth))
                found = search_facts(self.store, self.writes.policy, user_of(ns), op.query, options)
                hits += [(h.score, ns, h.fact) for h in found if h.fact.kind == INDEXED]
            else:
                hits += [(float("nan"), ns, f) for f in sorted(facts, key=lambda f: (f.created_at, f.id))]
        if op.query:
            hits.sort(key=lambda h: -h[0])
        kept = [h for h in hits if _matches(json.loads(h[2].value or "{}"), op.filter)]
        return [self._item(SearchItem, ns, f, None if score != score else score)
                for score, ns, f in kept[op.offset:op.offset + op.limit]]

    def _namespaces(self, op: ListNamespacesOp) -> list[tuple[str, ...]]:
        every = self._under(())
        for cond in op.match_conditions or ():
            path, n = tuple(cond.path), len(cond.path)
            part = (lambda ns: ns[:n]) if cond.match_type == "prefix" else (lambda ns: ns[-n:] if n else ())
            every = [ns for ns in every if len(ns) >= n and all(p in ("*", x) for p, x in zip(path, part(ns)))]
        if op.max_depth is not None:
            every = sorted(set(ns[:op.max_depth] for ns in every))
        return every[op.offset:op.offset + op.limit]


# ---- an agent with the seeds' shape ------------------------------------------------------------------
SYSTEM = {"role": "system", "content": "You are a helpful assistant. Use what you know about the user."}


class AgentState(TypedDict):
    """The graph's state: the thread's messages (what the checkpointer keeps) and this turn's context."""

    user_id: str
    question: str
    messages: Annotated[list[Any], add_messages]
    context: list[dict[str, str]]


def agent(memory: Memory, complete: Callable[[list[dict[str, str]]], str], checkpointer: Any,
          budget: int = 600) -> Any:
    """A compiled LangGraph graph: ``recall`` (observe the question, build its context with
    ``Memory.context``) -> ``answer`` (``complete`` the context: a chat model's ``complete``) -> ``remember``
    (observe the answer). The thread is the checkpointer's (a thread id is a memkit session); what outlives it
    is memkit's; the graph's long-term store is a ``MemkitStore`` on the same ``FactStore``."""
    def recall(state: AgentState, config: RunnableConfig) -> dict[str, Any]:
        thread = config["configurable"]["thread_id"]
        memory.observe(state["user_id"], thread, "user", state["question"])
        ctx = memory.context(state["user_id"], thread, state["question"], budget=budget)
        return {"context": list(ctx.messages), "messages": [{"role": "user", "content": state["question"]}]}

    def answer(state: AgentState) -> dict[str, Any]:
        return {"messages": [{"role": "assistant", "content": complete([SYSTEM, *state["context"]])}]}

    def remember(state: AgentState, config: RunnableConfig) -> dict[str, Any]:
        memory.observe(state["user_id"], config["configurable"]["thread_id"], "assistant",
                       state["messages"][-1].content)
        return {}

    graph = StateGraph(AgentState)
    for name, node in (("recall", recall), ("answer", answer), ("remember", remember)):
        graph.add_node(name, node)
    for a, b in ((START, "recall"), ("recall", "answer"), ("answer", "remember"), ("remember", END)):
        graph.add_edge(a, b)
    return graph.compile(checkpointer=checkpointer, store=MemkitStore(memory.store))


def quoting(messages: list[dict[str, str]]) -> str:
    """An offline stand-in for a chat model (the notebooks' and tests' default): it answers with the line of
    the context that shares the most words with the question (the last message), so what memory recalled
    shows in the answer. It is not a model: it writes nothing of its own."""
    question = {w for w in stems(messages[-1]["content"]) if w not in STOPWORDS}
    lines = [x.strip() for m in messages[1:-1] for x in m["content"].splitlines() if x.strip() and not x.endswith(":")]
    best = max(lines, key=lambda x: len(question & set(stems(x))), default="")
    return f"From memory: {best}" if best and question & set(stems(best)) else "I have nothing on that yet."
