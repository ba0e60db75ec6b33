"""A conversation played through a memory whose write path uses a chat model, turn by turn, and what became of
each turn. ``scripts/measure_local_model.py`` plays ``CONVERSATION`` against llama.cpp's server with the model
the ``local-llm`` extra installs; ``tests/test_local_model.py`` plays part of it and checks what must hold
with any model: every turn accounted for, nothing extracted twice, nothing lost across a restart.
"""

from __future__ import annotations

import time as clock
from dataclasses import dataclass
from typing import Iterable, Sequence

from ..lab.demo import FRIDAY_QUESTION, TUESDAY
from ..memory import Memory
from ..types import EventKind

# the demo's Tuesday and Friday's question, then twenty user turns of preferences, changes of mind, negations and small talk, each
# with a short assistant reply (issue 38: the conversation that stored nothing with a 135M model)
LATER = [
    "I'm vegetarian, so no meat in any recipe you suggest.",
    "My sister Priya is a data scientist in Toronto.",
    "I use Python at work, mostly pandas.",
    "Ugh, Mondays.",
    "I don't drink coffee anymore, only green tea.",
    "Actually, give me distances in miles from now on: my race is in Boston.",
    "I live in Lyon with my partner Tom.",
    "The weather is lovely today.",
    "I don't like running on treadmills.",
    "My dog is called Biscuit.",
    "We moved to Berlin last month.",
    "I'm allergic to peanuts.",
    "Thanks, that helps!",
    "I switched from pandas to polars this week.",
    "My race is on 12 April.",
    "I never eat after 8 pm.",
    "Haha, fair enough.",
    "I'm no longer vegetarian, I eat fish now.",
    "Call me Lena, not Helena.",
    "My budget for new running shoes is 150 euros.",
]
REPLIES = ["Noted.", "Got it.", "Thanks for telling me.", "Understood.", "Okay."]
CONVERSATION: list[tuple[str, str]] = TUESDAY + [("user", FRIDAY_QUESTION), ("assistant", "About 14 km.")] + [pair for i, text in enumerate(LATER)
                                                 for pair in (("user", text), ("assistant", REPLIES[i % len(REPLIES)]))]


@dataclass(frozen=True)
class TurnRun:
    """One observed turn: its id, role, how long ``observe`` took, and the kinds of the events it returned."""

    turn_id: str
    role: str
    seconds: float
    events: tuple[str, ...]


def play(memory: Memory, user_id: str, session_id: str, turns: Sequence[tuple[str, str]], start: int = 0,
         time: float = 1_767_225_600.0) -> list[TurnRun]:
    """Observe ``turns`` (``(role, text)``) in order as turns ``start``, ``start + 1``, ... of the session (ids
    ``t<n>``, a minute apart from ``time``), timing each ``observe``."""
    runs = []
    for n, (role, text) in enumerate(turns, start):
        began = clock.perf_counter()
        events = memory.observe(user_id, session_id, role, text, turn_id=f"t{n}", time=time + 60 * n)
        runs.append(TurnRun(f"t{n}", role, clock.perf_counter() - began, tuple(e.kind.value for e in events)))
    return runs


def outcomes(memory: Memory, user_id: str, turn_ids: Iterable[str]) -> dict[str, str]:
    """What became of each turn, from the store's records and event log: ``"facts"`` (an event changed or
    confirmed a fact from it), ``"pending"`` (its extraction, or the planning of its facts, waits for
    ``flush()``), ``"given up"`` (its replies stayed unusable for every attempt) or ``"none"`` (extracted,
    nothing durable in it)."""
    waiting = {t.id for u, t, _ in memory.pending_turns if u == user_id}
    waiting |= {s for u, cands, _ in memory.pending if u == user_id for c in cands for s in c.source}
    facts, given_up = set(), set()
    for e in memory.store.history(user_id):
        if e.kind != EventKind.ERROR:
            facts |= set(e.source)
        elif "given up" in e.reason:
            given_up |= set(e.source)
    return {t: "pending" if t in waiting else "facts" if t in facts else "given up" if t in given_up else "none"
            for t in turn_ids}


def written_twice(memory: Memory, user_id: str) -> list[tuple[str, str]]:
    """``(turn id, fact text)`` of every fact added more than once from the same turn: a turn extracted twice."""
    seen: set[tuple[str, str]] = set()
    twice = []
    for e in memory.store.history(user_id):
        if e.kind == EventKind.ADD and e.after is not None:
            for s in e.source:
                key = (s, e.after.text.casefold())
                if key in seen:
                    twice.append(key)
                seen.add(key)
    return twice
