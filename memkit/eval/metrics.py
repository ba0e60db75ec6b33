"""Metric definitions (docs/architecture.md §5), each a small pure function so notebooks and the runner share them."""

from __future__ import annotations

import math
import re
import unicodedata
from typing import Iterable, Sequence

import numpy as np

from ..types import Context, Event, EventKind, Fact
from .data import Conversation

OPS = ("ADD", "UPDATE", "DELETE", "NOOP")


def normalise(text: str) -> str:
    """Lowercase, no accents or punctuation, single spaces (answer matching in the DPR style)."""
    text = text.lower()
    if not text.isascii():  # ASCII has no accents to strip (NFKD leaves it as it is)
        text = unicodedata.normalize("NFKD", text)
        text = "".join(c for c in text if not unicodedata.combining(c))
    return " ".join(re.sub(r"[^\w\s]", " ", text).split())


def _sentences(text: str) -> list[str]:
    return [s for s in (normalise(x) for x in re.split(r"(?<=[.!?。！？])\s*|\n", text)) if len(s) >= 8]


def covered_turns(ctx: Context, conv: Conversation, evidence: Iterable[str]) -> set[str]:
    """Evidence turns the context covers: a shown fact whose ``source`` has the turn; the turn itself among the
    shown episodes or session turns (whole or cut to fit); or, for text that carries no turn ids (a summary),
    a sentence of the turn verbatim that no other turn of the conversation says (a line shared by many turns,
    "Tell me more!", covers none of them)."""
    sources = {s for p in ctx.parts if p.name == "facts" for item in p.items for s in item.get("source", ())}
    shown = {item["turn_id"] for p in ctx.parts if p.name in SHOWN_TURNS for item in p.items if "turn_id" in item}
    text = normalise(ctx.text)
    said_by = _said_by(conv)
    out = set()
    for tid in evidence:
        if tid in sources or tid in shown:
            out.add(tid)
            continue
        turn = conv.turn(tid)
        if turn is not None and any(s in text for s in _own_sentences(turn.content) if said_by.get(s, 0) <= 1):
            out.add(tid)
    return out


SHOWN_TURNS = ("episodes", "turns")  # the parts whose items are turns shown in the context
_SAID_BY: dict[int, tuple[Conversation, dict[str, int]]] = {}


def _own_sentences(content: str) -> set[str]:
    return set(_sentences(content) or [normalise(content)])


def _said_by(conv: Conversation) -> dict[str, int]:
    """How many turns of ``conv`` say each sentence (cached per conversation object)."""
    hit = _SAID_BY.get(id(conv))
    if hit is not None and hit[0] is conv:
        return hit[1]
    counts: dict[str, int] = {}
    for s in conv.sessions:
        for t in s.turns:
            for x in _own_sentences(t.content):
                counts[x] = counts.get(x, 0) + 1
    if len(_SAID_BY) > 256:
        _SAID_BY.clear()
    _SAID_BY[id(conv)] = (conv, counts)
    return counts


def evidence_recall(ctx: Context, conv: Conversation, evidence: Sequence[str]) -> float:
    """Share of the probe's evidence turns the context covers; NaN when the probe has none."""
    if not evidence:
        return math.nan
    return len(covered_turns(ctx, conv, evidence)) / len(set(evidence))


def shown_sessions(ctx: Context, conv: Conversation) -> set[str]:
    """Sessions the context shows a turn of: an episode or session turn, or the source turn of a shown fact."""
    session_of = {t.id: s.id for s in conv.sessions for t in s.turns}
    turns = {s for p in ctx.parts if p.name == "facts" for item in p.items for s in item.get("source", ())}
    turns |= {item["turn_id"] for p in ctx.parts if p.name in SHOWN_TURNS for item in p.items if "turn_id" in item}
    return {session_of[t] for t in turns if t in session_of}


def session_recall(ctx: Context, conv: Conversation, sessions: Sequence[str]) -> tuple[float, float]:
    """``(any, all)``: whether the context shows a turn of any / of every answer session (LongMemEval's
    ``recall_any`` and ``recall_all``, with the context's budget in place of a number of retrieved sessions);
    NaN when the probe names no sessions."""
    if not sessions:
        return math.nan, math.nan
    shown = shown_sessions(ctx, conv) & set(sessions)
    return float(bool(shown)), float(len(shown) == len(set(sessions)))


def repeated_lines(ctx: Context) -> int:
    """Lines of the context that repeat an earlier line (compared normalised): budget spent saying a thing twice."""
    lines = [normalise(line) for m in ctx.messages for line in m["content"].splitlines()]
    lines = [line for line in lines if line]
    return len(lines) - len(set(lines))


def answer_in_context(ctx: Context, answer: str) -> float:
    """1.0 if the normalised gold answer occurs in the normalised context; NaN for empty answers."""
    a = normalise(answer)
    return math.nan if not a else float(a in normalise(ctx.text))


def stale(ctx: Context, answer: str, old_answer: str | None) -> float:
    """1.0 when the old value is in the context and the new one is not (only the stale value is presented)."""
    if not old_answer:
        return math.nan
    text = normalise(ctx.text)
    return float(normalise(old_answer) in text and normalise(answer) not in text)


def turn_op(events: Sequence[Event]) -> str:
    """The one operation a turn's events amount to (UPDATE > DELETE > ADD > ERROR > NOOP): a turn whose
    extraction or planning failed and wrote nothing is an ERROR, its own outcome, never a NOOP (a model that
    fails every turn would otherwise score every turn that should change nothing as right)."""
    kinds = {e.kind for e in events}
    if kinds & {EventKind.UPDATE, EventKind.INVALIDATE}:
        return "UPDATE"
    if EventKind.DELETE in kinds:
        return "DELETE"
    if EventKind.ADD in kinds:
        return "ADD"
    if EventKind.ERROR in kinds:
        return "ERROR"
    return "NOOP"


def duplicate_rate(facts: Sequence[Fact]) -> float:
    """Share of a user's current facts that restate another: same key, or the same normalised text."""
    if not facts:
        return math.nan
    keys: dict[str, int] = {}
    texts: dict[str, int] = {}
    for f in facts:
        if f.key:
            keys[f.key] = keys.get(f.key, 0) + 1
        texts[normalise(f.text)] = texts.get(normalise(f.text), 0) + 1
    dup = sum(1 for f in facts if (f.key and keys[f.key] > 1) or texts[normalise(f.text)] > 1)
    return dup / len(facts)


def percentile(values: Sequence[float], q: float) -> float:
    return float(np.percentile(values, q)) if len(values) else math.nan
