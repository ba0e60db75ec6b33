"""The strategies compared in benchmarks: full history, sliding window, summary compression, two-layer memory.

Each one sees the same turns and builds a ``Context`` for a query under a token budget (full history
ignores the budget: it is the upper reference for recall and the worst case for tokens).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Protocol

from . import assemble, tokens
from .errors import ConfigError
from .episodic import EpisodicBuffer
from .store import FactStore
from .memory import Memory
from .recall import RecallOptions
from .summarize import Summary
from .reconcile import POLICIES
from .types import Candidate, Context, Event, Part, Turn

RAG = {"rag:bm25": ("lexical",), "rag:dense": ("dense",), "rag:hybrid": ("lexical", "dense")}
# the built-in strategies; ``registry.names("strategy")`` adds ``two-layer:<name>`` for every registered policy
STRATEGIES = ("full", "window", "summary") + tuple(f"two-layer:{p}" for p in POLICIES) + tuple(RAG)


class Strategy(Protocol):
    name: str
    budget_free: bool  # True when what it stores does not depend on the budget (one run serves every budget)
    keeps_facts: bool  # True when it writes facts (so operation accuracy and duplicates mean something)

    def observe(self, session_id: str, turn_id: str, role: str, content: str, time: float | None,
                speaker: str | None = None) -> list[Event]: ...

    def end_session(self, session_id: str) -> None: ...

    def context(self, session_id: str, query: str, budget: int, now: float | None = None) -> Context: ...


HEADERS = {**assemble.HEADERS, "summary": "Summary of earlier turns:"}  # a summary strategy has no other session


def _turn_context(turns: list[Turn], budget: int, summary: Summary | None = None) -> Context:
    parts = [assemble.turns_part(turns)]
    if summary is not None and summary.text:
        parts.insert(0, Part("summary", summary.text, tokens.count(summary.text),
                             tuple({"turn_id": t} for t in summary.turn_ids)))
    return Context(assemble.messages(parts, turns, HEADERS), tuple(parts), budget)


class FullHistory:
    """Every turn of every session, whatever the budget."""

    name = "full"
    budget_free = True
    keeps_facts = False

    def __init__(self, user_id: str) -> None:
        self.buf = EpisodicBuffer("all", user_id, window_tokens=10**12)

    def observe(self, session_id: str, turn_id: str, role: str, content: str, time: float | None,
                speaker: str | None = None) -> list[Event]:
        self.buf.append(role, content, turn_id, time)
        return []

    def end_session(self, session_id: str) -> None:
        pass

    def context(self, session_id: str, query: str, budget: int, now: float | None = None) -> Context:
        return _turn_context(self.buf.turns, budget)


class SlidingWindow(FullHistory):
    """The newest turns, across sessions, that fit the budget."""

    name = "window"

    def context(self, session_id: str, query: str, budget: int, now: float | None = None) -> Context:
        chosen: list[Turn] = []
        used = 0
        for t in reversed(self.buf.turns):
            if used + t.tokens > budget:
                break
            chosen.insert(0, t)
            used += t.tokens
        return _turn_context(chosen, budget)


class SummaryCompression(FullHistory):
    """The newest turns plus a running summary of older ones, across sessions (60/40 split of the budget)."""

    name = "summary"
    budget_free = False

    def __init__(self, user_id: str, budget: int, summary_share: float = 0.4) -> None:
        self.buf = EpisodicBuffer("all", user_id, window_tokens=int(budget * (1 - summary_share)),
                                  summary_tokens=int(budget * summary_share))

    def context(self, session_id: str, query: str, budget: int, now: float | None = None) -> Context:
        return _turn_context(self.buf.window, budget, self.buf.summary)


class TwoLayer:
    """memkit's ``Memory``: this session's window and summary plus the user's facts and episodes, under one policy."""

    budget_free = True
    keeps_facts = True

    def __init__(self, user_id: str, store: FactStore, policy: str = "keyed", k: int = 5, **memory_options: object) -> None:
        self.name = f"two-layer:{policy}"
        self.user_id = user_id
        self.memory = Memory(store=store, policy=policy, k=k, **memory_options)  # type: ignore[arg-type]

    def observe(self, session_id: str, turn_id: str, role: str, content: str, time: float | None,
                speaker: str | None = None) -> list[Event]:
        return self.memory.observe(self.user_id, session_id, role, content, turn_id, time, speaker)

    def end_session(self, session_id: str) -> None:
        self.memory.end_session(self.user_id, session_id)

    def context(self, session_id: str, query: str, budget: int, now: float | None = None) -> Context:
        return self.memory.context(self.user_id, session_id, query, budget, now=now)


class NoFacts:
    """An extractor that keeps nothing: raw-turn retrieval stores no facts."""

    def extract(self, text: str, source: tuple[str, ...] = ()) -> list[Candidate]:
        return []


class RawTurnRetrieval(TwoLayer):
    """The equal-token baseline: past turns retrieved by one channel (or both, fused) and packed in rank order
    into the budget, with this session's newest turns; no facts, no summary, no dates, repeats not folded, no
    diversity, long turns whole (no passages), no reading of the question's time, no ranking up of the person it names."""

    keeps_facts = False

    def __init__(self, name: str, user_id: str, store: FactStore, **memory_options: object) -> None:
        self.name = name
        self.user_id = user_id
        base = memory_options.pop("recall", None) or RecallOptions()
        options = {**memory_options, "profile_tokens": 0, "facts": False, "episode_dates": False,
                   "fold_repeats": False, "diversity": 0.0, "passage_tokens": 0, "recall": replace(base, channels=RAG[name], timeframes=False, subjects=False),
                   "extractor": NoFacts()}
        self.memory = Memory(store=store, **options)  # type: ignore[arg-type]


def embeds_episodes(name: str, passage_tokens: int) -> int | None:
    """The passage size strategy ``name`` embeds past turns at (0: whole turns), or None if it embeds none."""
    from .registry import TWO_LAYER

    if name in RAG:
        return 0
    return passage_tokens if name.startswith(TWO_LAYER) else None


def budget_free(name: str) -> bool:
    """Whether strategy ``name`` stores the same things whatever the budget (so one run serves every budget)."""
    return name != SummaryCompression.name


def make(name: str, user_id: str, budget: int, store: FactStore | None = None, k: int = 5,
         **memory_options: object) -> Strategy:
    """A fresh strategy ``name`` for one conversation (``two-layer:<policy>`` for any registered policy)."""
    from . import registry

    if name.startswith(registry.TWO_LAYER):
        return registry.build("strategy", name, user_id=user_id, budget=budget, store=store, k=k, **memory_options)
    builders = {
        "full": lambda: FullHistory(user_id),
        "window": lambda: SlidingWindow(user_id),
        "summary": lambda: SummaryCompression(user_id, budget),
        **{rag: (lambda rag=rag: RawTurnRetrieval(rag, user_id, store or FactStore.ephemeral(), **{
            k_: v for k_, v in memory_options.items() if k_ in ("neighbours", "window_share", "recall")}))
           for rag in RAG},
    }
    if name not in builders:
        raise ConfigError(f"unknown strategy {name!r}; choose from {registry.names('strategy')}")
    return builders[name]()
