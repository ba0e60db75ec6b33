"""Conflict policies: ``plan`` turns candidate facts into explicit events; ``apply`` writes them and their history.

Plan first, apply second, so a caller can show a plan without applying it (docs/architecture.md §3).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from typing import Any, ClassVar, Protocol, Sequence, runtime_checkable

from .. import registry
from ..errors import ConfigError, ExtractionError
from ..store import FactStore
from ..models.llm import parse_json
from ..types import Candidate, Event, EventKind, Fact, Hit, fold, new_id, now

SIMILARITY_THRESHOLD = 0.85
DUPLICATE_THRESHOLD = 0.95

RECONCILE_PROMPT = """You manage a user's long-term memory. You get the existing facts (with integer ids)
and new facts. For each new fact decide one event:
ADD (new information), UPDATE (it changes an existing fact: give that id and the new text),
DELETE (it says an existing fact is no longer true: give that id), NONE (already known).
Only use ids from the existing list. Answer with JSON only:
{"memory": [{"new": int, "event": "ADD"|"UPDATE"|"DELETE"|"NONE", "id": int|null, "text": str}]}"""


def to_fact(user_id: str, c: Candidate, t: float | None = None) -> Fact:
    """A new fact for ``user_id`` from an extractor's candidate."""
    t = now() if t is None else t
    return Fact(id=new_id("f"), user_id=user_id, text=c.text, kind=c.kind, key=c.key, value=c.value,
                importance=c.importance, source=c.source, created_at=t, valid_from=t)


def _same_value(a: Fact, c: Candidate) -> bool:
    return (a.value or a.text).strip().lower() == (c.value or c.text).strip().lower()


@runtime_checkable
class FactReader(Protocol):
    """What a policy may read of the facts it plans against: the current facts by key, and the nearest by
    meaning. ``FactStore`` is one; a policy is given a ``FactsView`` of it, never the store itself."""

    def profile(self, user_id: str, limit: int | None = None, ids: Sequence[str] | None = None,
                keys: Sequence[str] | None = None) -> list[Fact]: ...

    def search(self, user_id: str, query: str, k: int = 5, min_score: float = ..., where: Any = None,
               weights: tuple[float, float] = ...) -> list[Hit]: ...


class FactsView:
    """The narrow reader a policy plans with: the store's ``profile`` and ``search``, and nothing else."""

    def __init__(self, store: FactReader) -> None:
        self.profile, self.search = store.profile, store.search


def _nearest(facts: FactReader, user_id: str, text: str) -> tuple[Fact | None, float]:
    hits = facts.search(user_id, text, k=1, min_score=-1.0, weights=(1.0, 0.0))
    return (hits[0].fact, hits[0].similarity) if hits else (None, -1.0)


def _changed(old: Fact, c: Candidate, t: float) -> Fact:
    return old.evolve(text=c.text, key=c.key or old.key, value=c.value, kind=c.kind,
                      importance=max(old.importance, c.importance), source=tuple(dict.fromkeys(old.source + c.source)),
                      valid_from=t)


@runtime_checkable
class Policy(Protocol):
    """A conflict policy: plans events for new candidates, and says which stored facts a reader sees.

    ``resolves_at_read`` is False when a plan leaves one current fact per key (a read shows what is stored),
    True when conflicting facts stay stored and ``resolve`` picks what a reader sees."""

    name: str
    resolves_at_read: bool

    def plan(self, facts: FactReader, user_id: str, cands: Sequence[Candidate], t: float) -> list[Event]: ...

    def resolve(self, facts: Sequence[Fact]) -> list[Fact]: ...


@dataclass(frozen=True)
class KeyedPolicy:
    """Same ``key`` means same slot: a new value updates the fact in place (the old text stays in history)."""

    name: ClassVar[str] = "keyed"
    resolves_at_read: ClassVar[bool] = False
    supersede: ClassVar[bool] = False  # temporal: close the old version and add a new one instead of updating

    def plan(self, facts: FactReader, user_id: str, cands: Sequence[Candidate], t: float) -> list[Event]:
        events: list[Event] = []
        planned: dict[str, Fact] = {}  # key -> its current fact once this reply's earlier candidates are applied
        for c in cands:
            old = planned.get(c.key) if c.key else None
            if c.key and old is None:
                same = facts.profile(user_id, keys=[c.key])  # the current facts of that key, without a Chroma read
                old = max(same, key=lambda f: f.valid_from) if same else None
            if old is None:
                near, sim = _nearest(facts, user_id, c.text)
                if near is not None and sim >= DUPLICATE_THRESHOLD and (not c.key or near.key in (None, c.key)):
                    events.append(Event(EventKind.NOOP, user_id, near.id, near, near, f"duplicate (sim {sim:.2f})", c.source, t))
                    continue
                new = to_fact(user_id, c, t)
                events.append(Event(EventKind.ADD, user_id, new.id, None, new, f"new key {c.key}" if c.key else "no key",
                                    c.source, t))
            elif _same_value(old, c):
                events.append(Event(EventKind.NOOP, user_id, old.id, old, old, f"{c.key} already {c.value}", c.source, t))
                continue
            elif self.supersede:
                new = to_fact(user_id, c, t)
                events.append(Event(EventKind.INVALIDATE, user_id, old.id, old,
                                    old.evolve(valid_to=t, superseded_by=new.id), f"{c.key}: {old.value} -> {c.value}", c.source, t))
                events.append(Event(EventKind.ADD, user_id, new.id, None, new, f"supersedes {old.id}", c.source, t))
            else:
                new = _changed(old, c, t)
                events.append(Event(EventKind.UPDATE, user_id, old.id, old, new, f"{c.key}: {old.value} -> {c.value}", c.source, t))
            if c.key:
                planned[c.key] = new
        return events

    def resolve(self, facts: Sequence[Fact]) -> list[Fact]:
        return list(facts)  # conflicts were resolved when writing: what is stored is what is shown


@dataclass(frozen=True)
class TemporalPolicy(KeyedPolicy):
    """Same ``key``: the old fact gets ``valid_to`` and ``superseded_by`` and stays queryable "as of"; nothing
    is deleted."""

    name: ClassVar[str] = "temporal"
    supersede: ClassVar[bool] = True


@dataclass(frozen=True)
class SimilarityPolicy:
    """The seeds' rule: the nearest fact above ``threshold`` is overwritten, else the candidate is added."""

    name: ClassVar[str] = "similarity"
    resolves_at_read: ClassVar[bool] = False
    threshold: float = SIMILARITY_THRESHOLD

    def plan(self, facts: FactReader, user_id: str, cands: Sequence[Candidate], t: float) -> list[Event]:
        events = []
        for c in cands:
            old, sim = _nearest(facts, user_id, c.text)
            if old is not None and old.text == c.text:
                events.append(Event(EventKind.NOOP, user_id, old.id, old, old, f"same text (sim {sim:.2f})", c.source, t))
            elif old is not None and sim >= self.threshold:
                events.append(Event(EventKind.UPDATE, user_id, old.id, old, _changed(old, c, t),
                                    f"sim {sim:.2f} >= {self.threshold}", c.source, t))
            else:
                f = to_fact(user_id, c, t)
                events.append(Event(EventKind.ADD, user_id, f.id, None, f, f"nearest sim {sim:.2f} < {self.threshold}",
                                    c.source, t))
        return events

    def resolve(self, facts: Sequence[Fact]) -> list[Fact]:
        return list(facts)


@dataclass(frozen=True)
class AppendPolicy:
    """Add-only: nothing is overwritten (exact repeats are NOOP); the newest fact of each key wins at read time."""

    name: ClassVar[str] = "append"
    resolves_at_read: ClassVar[bool] = True

    def plan(self, facts: FactReader, user_id: str, cands: Sequence[Candidate], t: float) -> list[Event]:
        events = []
        last = {c.key: i for i, c in enumerate(cands) if c.key}  # a key given twice in one reply: its last value
        for i, c in enumerate(cands):
            dup = [f for f in (facts.profile(user_id, keys=[c.key]) if c.key else []) if f.text == c.text]
            if c.key and last[c.key] != i:  # both would be newest at once, and which one a read shows would be chance
                events.append(Event(EventKind.NOOP, user_id, None, None, None, f"{c.key} is given again later in "
                                    "the same reply", c.source, t))
            elif dup:
                events.append(Event(EventKind.NOOP, user_id, dup[0].id, dup[0], dup[0], "same text", c.source, t))
            else:
                f = to_fact(user_id, c, t)
                events.append(Event(EventKind.ADD, user_id, f.id, None, f, "append", c.source, t))
        return events

    def resolve(self, facts: Sequence[Fact]) -> list[Fact]:
        best: dict[str, Fact] = {}
        for f in facts:
            if f.key is not None and (f.key not in best or f.valid_from > best[f.key].valid_from):
                best[f.key] = f
        return [f for f in facts if f.key is None or best[f.key].id == f.id]


@dataclass(frozen=True)
class LLMPolicy:
    """The model decides ADD/UPDATE/DELETE/NONE per fact, seeing existing facts under small integer ids it
    cannot invent. The candidates it cannot place (a reply that is not a valid decision list, or one that
    skips a candidate) go to the ``fallback`` policy, each event's reason saying so; ``fallback=None`` reports
    them as ``ERROR`` events instead, and they are dropped."""

    name: ClassVar[str] = "llm"
    resolves_at_read: ClassVar[bool] = False
    needs_model: ClassVar[bool] = True  # built with the configured chat model (registry.needs_model)
    model: Any = None
    fallback: str | None = "keyed"

    def __post_init__(self) -> None:
        if self.model is None:
            raise ConfigError("the llm policy needs a chat model: pass chat_model= (or model=), or set "
                              "MEMKIT_LLM_BASE_URL and MEMKIT_LLM_MODEL and use Memory.from_settings(policy='llm')")
        if self.fallback == self.name:
            raise ConfigError("the llm policy's fallback must be another policy (keyed, temporal, ...) or None")
        if self.fallback is not None:
            registry.as_policy(self.fallback)  # a misspelt name fails here, not at the first bad reply

    def plan(self, facts: FactReader, user_id: str, cands: Sequence[Candidate], t: float) -> list[Event]:
        """The model's decisions (and the fallback's for what it skipped), then whatever keeps one current fact
        per key: a model may ADD two values of one key, or ADD a key the fallback also adds (``one_per_key``)."""
        events = self._decide(facts, user_id, cands, t)
        return events + one_per_key(facts, user_id, events, t)

    def _decide(self, facts: FactReader, user_id: str, cands: Sequence[Candidate], t: float) -> list[Event]:
        existing: dict[str, Fact] = {}
        for c in cands:
            for h in facts.search(user_id, c.text, k=5, min_score=-1.0, weights=(1.0, 0.0)):
                existing.setdefault(h.fact.id, h.fact)
        ids = list(existing)
        payload = {"existing": [{"id": i, "text": existing[fid].text} for i, fid in enumerate(ids)],
                   "new": [{"new": j, "text": c.text} for j, c in enumerate(cands)]}
        reply = self.model.complete([{"role": "system", "content": RECONCILE_PROMPT},
                                     {"role": "user", "content": json.dumps(payload, ensure_ascii=False)}], json_mode=True)
        try:
            events, skipped = _llm_events(reply, existing, ids, cands, user_id, t)
        except ExtractionError as e:
            if self.fallback is None:
                raise
            return self._fall_back(facts, user_id, cands, t, f"the model's reply was unusable ({e})")
        if self.fallback is None:  # a fact the model skipped is reported, not silently dropped
            return events + [Event(EventKind.ERROR, user_id, None, None, None, f"llm gave no decision for: {c.text}",
                                   c.source, t) for c in skipped]
        return events + self._fall_back(facts, user_id, skipped, t, "the model gave no decision")

    def _fall_back(self, facts: FactReader, user_id: str, cands: Sequence[Candidate], t: float, why: str) -> list[Event]:
        """``cands`` planned by the fallback policy, each event's reason naming why and by which policy."""
        if not cands:
            return []
        events = registry.as_policy(self.fallback).plan(facts, user_id, cands, t)
        return [replace(x, reason=f"{why}; planned by {self.fallback}: {x.reason}") for x in events]

    def resolve(self, facts: Sequence[Fact]) -> list[Fact]:
        return list(facts)


def _llm_events(reply: str, existing: dict[str, Fact], ids: list[str], cands: Sequence[Candidate], user_id: str,
                t: float) -> tuple[list[Event], list[Candidate]]:
    """The events a model's reply decides, checked (every id one that was offered), and the candidates it
    gave no decision for."""
    data = parse_json(reply)
    items = data.get("memory") if isinstance(data, dict) else None
    if not isinstance(items, list):
        raise ExtractionError('expected {"memory": [...]}', reply)
    events, seen = [], set()
    for it in items:
        try:
            j, kind = int(it["new"]), str(it["event"]).upper()
            c = cands[j]
        except (KeyError, TypeError, ValueError, IndexError):
            raise ExtractionError(f"bad memory item {it!r}", reply) from None
        seen.add(j)
        ref = it.get("id")
        if kind in {"UPDATE", "DELETE", "NONE", "NOOP"} and ref is not None:
            if not isinstance(ref, int) or not 0 <= ref < len(ids):
                raise ExtractionError(f"the model named an id that was not offered: {ref!r}", reply)
            old = existing[ids[ref]]
        elif kind in {"UPDATE", "DELETE"}:
            raise ExtractionError(f"{kind} without an id", reply)
        else:
            old = None
        text = it.get("text") if isinstance(it.get("text"), str) and it.get("text").strip() else c.text
        c2 = Candidate(text, c.kind, c.key, c.value, c.importance, c.negated, c.source)
        if kind == "ADD":
            f = to_fact(user_id, c2, t)
            events.append(Event(EventKind.ADD, user_id, f.id, None, f, "llm: ADD", c.source, t))
        elif kind == "UPDATE":
            events.append(Event(EventKind.UPDATE, user_id, old.id, old, _changed(old, c2, t), "llm: UPDATE", c.source, t))
        elif kind == "DELETE":
            events.append(Event(EventKind.DELETE, user_id, old.id, old, None, "llm: DELETE", c.source, t))
        elif kind in {"NONE", "NOOP"}:
            events.append(Event(EventKind.NOOP, user_id, old.id if old else None, old, old, "llm: NONE", c.source, t))
        else:
            raise ExtractionError(f"unknown event {kind!r}", reply)
    return events, [c for j, c in enumerate(cands) if j not in seen]


# the built-in policies, registered by name (memkit/registry.py, the one lookup of policies)
BUILT_IN = (SimilarityPolicy, KeyedPolicy, LLMPolicy, AppendPolicy, TemporalPolicy)
POLICIES = tuple(p.name for p in BUILT_IN)  # their names; registry.names("policy") lists every registered one
for _policy in BUILT_IN:
    registry.register("policy", _policy.name, _policy)


def plan(policy: "str | Policy", store: FactReader, user_id: str, cands: Sequence[Candidate], t: float | None = None,
         **options: Any) -> list[Event]:
    """Events that ``policy`` (an object, or a registered name with its options) would apply for ``cands``;
    nothing is written. The policy reads the facts through a ``FactsView``."""
    return registry.as_policy(policy, **options).plan(FactsView(store), user_id, list(cands), now() if t is None else t)


def one_per_key(facts: FactReader, user_id: str, events: Sequence[Event], t: float) -> list[Event]:
    """Events that close every fact but the newest of a key that ``events`` would leave with two current facts,
    whatever a model planned (``LLMPolicy``; ``KeyedPolicy`` plans a key once per reply by itself). The
    ``similarity`` policy ignores keys by design: its known failures are for showing."""
    state = fold(events)
    keys = {f.key for f in state.values() if f is not None and f.key and f.valid_to is None}
    closing = []
    for key in sorted(keys):
        now_current = {f.id: f for f in facts.profile(user_id, keys=[key])}
        now_current.update({i: f for i, f in state.items() if f is not None and f.key == key})
        live = sorted((f for i, f in now_current.items() if f.valid_to is None and state.get(i, f) is not None),
                      key=lambda f: (f.valid_from, f.created_at))
        for old in live[:-1]:
            closing.append(Event(EventKind.INVALIDATE, user_id, old.id, old,
                                 old.evolve(valid_to=t, superseded_by=live[-1].id),
                                 f"one current fact per key: {key} is now {live[-1].value}", old.source, t))
    return closing


def apply(store: FactStore, user_id: str, events: Sequence[Event]) -> None:
    """Apply planned events through the store's event log: logged first, then the index, then marked applied."""
    store.apply(user_id, events)
