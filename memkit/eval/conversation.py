"""One conversation fed to one strategy, probed at every budget: the unit of work a benchmark run spreads over
processes or a cluster (``eval/execution.py``) and gathers into tables (``eval/runner.py``)."""

from __future__ import annotations

import math
import time
from dataclasses import replace
from typing import Any, Sequence

import numpy as np

from ..store import FactStore
from ..strategies import make
from ..types import reproducible_ids
from .data import Conversation, timestamp
from .judge import judge
from .metrics import PROBE_MEASURES, duplicate_rate, turn_op


def run_conversation(conv: Conversation, strategy: str, budget: int | Sequence[int], k: int, store: FactStore,
                     per_turn_tokens: bool = True, judge_model: Any = None,
                     **memory_options: Any) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Feed one conversation to one strategy; return its probe rows (one per budget) and its per-conversation stats.

    ``budget`` may be a list: a strategy whose memory does not depend on the budget is fed once and asked at
    every budget; the others (``summary``) are fed once per budget by ``run``.
    """
    budgets = [budget] if isinstance(budget, int) else list(budget)
    with reproducible_ids(f"{conv.id}|{strategy}"):  # not by budgets: a run at 400 and one at 100,400 agree at 400
        return _run_conversation(conv, strategy, budgets, k, store, per_turn_tokens, judge_model, **memory_options)


def _run_conversation(conv: Conversation, strategy: str, budgets: list[int], k: int, store: FactStore,
                      per_turn_tokens: bool, judge_model: Any,
                      **memory_options: Any) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    s = make(strategy, conv.user_id, budgets[0], store=store, k=k, **memory_options)
    gold = {op["turn"]: op["op"] for op in conv.ops}
    rows, writes, reads = [], [], []
    write_total = 0.0
    turn_tokens: dict[int, list[int]] = {b: [] for b in budgets}
    confusion: dict[tuple[str, str], int] = {}
    probes_after: dict[str, list] = {}
    for p in conv.probes:
        probes_after.setdefault(p.after_session, []).append(p)
    for session in conv.sessions:
        t0 = timestamp(session.time)
        for i, turn in enumerate(session.turns):
            when = None if t0 is None else t0 + i
            start = time.perf_counter()
            events = s.observe(session.id, turn.id, turn.role, turn.content, when, turn.speaker)
            writes.append((time.perf_counter() - start) * 1000)
            if turn.role == "user":
                if conv.ops:
                    key = (gold.get(turn.id, "NOOP"), turn_op(events))
                    confusion[key] = confusion.get(key, 0) + 1
                if per_turn_tokens:
                    for b in budgets:
                        turn_tokens[b].append(s.context(session.id, turn.content, b).tokens)
        start = time.perf_counter()
        s.end_session(session.id)  # batched episode embeddings land here: part of the write path's cost
        end_ms = (time.perf_counter() - start) * 1000
        write_total += sum(writes[-len(session.turns):]) + end_ms if session.turns else end_ms
        for p in probes_after.get(session.id, ()):
            for b in budgets:
                start = time.perf_counter()
                ctx = s.context(f"probe:{p.id}", p.question, b, now=p.time)
                reads.append((time.perf_counter() - start) * 1000)
                row = {"conversation": conv.id, "strategy": strategy, "budget": b, "probe": p.id, "type": p.type,
                       **{m.name: m.probe(ctx, conv, p) for m in PROBE_MEASURES if m.probe is not None},
                       "read_ms": reads[-1]}
                if judge_model is not None:
                    row["judged_correct"], row["judged_answer"] = judge(judge_model, ctx, p.question, p.answer)
                rows.append(row)
            if hasattr(s, "memory"):
                s.memory.end_session(conv.user_id, f"probe:{p.id}")
    facts = store.get(conv.user_id) if s.keeps_facts else []
    stats = [{"conversation": conv.id, "strategy": strategy, "budget": b,
              "tokens_per_turn": float(np.mean(turn_tokens[b])) if turn_tokens[b] else math.nan,
              "write_ms": writes, "write_total_ms": write_total, "turns": len(writes), "read_ms": reads[j::len(budgets)], "confusion": confusion if j == 0 else {},
              "duplicate_rate": duplicate_rate(facts) if s.keeps_facts else math.nan, "keeps_facts": s.keeps_facts}
             for j, b in enumerate(budgets)]
    return rows, stats


KEYS = ("conversation", "strategy", "budget", "probe", "type")  # what a row of results.csv is about


def scoped(conv: Conversation, strategy: str) -> Conversation:
    """The same conversation under a user id unique to the strategy, so strategies never share facts."""
    return replace(conv, user_id=f"{strategy}/{conv.user_id}")
