"""Metric definitions (docs/architecture.md §5), each a small pure function so notebooks and the runner share them."""

from __future__ import annotations

import functools
import math
import re
import unicodedata
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Sequence

import numpy as np
import pandas as pd

from ..types import Context, Event, EventKind, Fact
from .data import Conversation, DSession

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


def _own_sentences(content: str) -> set[str]:
    return set(_sentences(content) or [normalise(content)])


def _said_by(conv: Conversation) -> dict[str, int]:
    """How many turns of ``conv`` say each sentence (cached by the conversation's sessions, a value: a cache
    keyed by an object's id answers for another object that reuses a freed one's id)."""
    return _said_by_sessions(conv.sessions)


@functools.lru_cache(maxsize=256)
def _said_by_sessions(sessions: tuple[DSession, ...]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for s in sessions:
        for t in s.turns:
            for x in _own_sentences(t.content):
                counts[x] = counts.get(x, 0) + 1
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


def stale_turns(ctx: Context, conv: Conversation, superseded: Sequence[str], evidence: Sequence[str]) -> float:
    """For data that marks which evidence turns said a value others replaced (BEAM's knowledge updates) and no
    value: 1.0 when the context covers a superseded turn and none of the turns that replaced it (a fact
    updated in place covers both, its sources holding both turns); NaN for a probe without such turns."""
    newer = [e for e in evidence if e not in set(superseded)]
    if not superseded or not newer:
        return math.nan
    return float(bool(covered_turns(ctx, conv, superseded)) and not covered_turns(ctx, conv, newer))


def stale_of(ctx: Context, conv: Conversation, probe: Any) -> float:
    """The probe's stale measure: by value where the data gives the old one (the generated suites), else by
    turn where it marks superseded turns (BEAM), else NaN (REALTALK marks no changed values)."""
    if probe.old_answer:
        return stale(ctx, probe.answer, probe.old_answer)
    return stale_turns(ctx, conv, probe.superseded, probe.evidence)


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


@dataclass(frozen=True)
class Measure:
    """One column of a benchmark's tables, declared once: the runner, the summary, the console table of
    ``memkit bench`` and the statistics all read ``PROBE_MEASURES`` and ``RUN_MEASURES``.

    A probe measure is a column of ``results.csv``: ``probe(ctx, conv, probe)`` gives its value (None: the
    runner fills it, a timing or the judge's), and ``aggregate`` how the summary takes it over probes (None:
    not summarised). A run measure is a column of the summary per strategy and budget: ``run(RunStats)``.
    ``shown``: in the console table; ``interval``: a bootstrap 95% interval in the summary (``stats.py``);
    ``judged``: only in a run with a judge; ``label``: how tables, axes and pages name it (with its unit)."""

    name: str
    probe: Callable[[Context, Conversation, Any], float] | None = None
    aggregate: str | None = "mean"
    run: Callable[["RunStats"], float] | None = None
    shown: bool = True
    interval: bool = False
    judged: bool = False
    label: str = ""


@dataclass(frozen=True)
class RunStats:
    """What one strategy's conversations at one budget left for the run measures."""

    stats: Sequence[dict[str, Any]]  # the runner's per-conversation stats at this budget
    confusion: dict[tuple[str, str], int]  # gold vs predicted operations, over every budget's conversations
    keeps_facts: bool

    @property
    def writes(self) -> list[float]:
        return [w for s in self.stats for w in s["write_ms"]]

    @property
    def reads(self) -> list[float]:
        return [r for s in self.stats for r in s["read_ms"]]

    @property
    def has_ops(self) -> bool:
        """Whether there are user turns with gold operations, from a strategy that keeps facts."""
        return bool(sum(self.confusion.values())) and self.keeps_facts

    def of_turns(self, predicted: Callable[[str, str], bool]) -> float:
        """The share of user turns whose (gold, predicted) operation ``predicted`` accepts; NaN without any."""
        if not self.has_ops:
            return math.nan
        return sum(n for (g, p), n in self.confusion.items() if predicted(g, p)) / sum(self.confusion.values())


def _mean(values: Iterable[float]) -> float:
    kept = [v for v in values if not math.isnan(v)]
    return float(np.mean(kept)) if kept else math.nan


def fact_precision(confusion: dict[tuple[str, str], int]) -> float:
    """Of the user turns the strategy wrote a fact from (ADD, UPDATE or DELETE), the share whose gold operation
    is a write too: a turn that should change nothing but stored a fact (chat taken for a fact) counts
    against it. NaN when nothing was written."""
    writes = {"ADD", "UPDATE", "DELETE"}
    wrote = sum(n for (_, p), n in confusion.items() if p in writes)
    return sum(n for (g, p), n in confusion.items() if p in writes and g in writes) / wrote if wrote else math.nan


PROBE_MEASURES = (
    Measure("evidence_recall", lambda ctx, conv, p: evidence_recall(ctx, conv, p.evidence), interval=True,
            label="evidence recall (share of evidence turns shown)"),
    Measure("answer_in_context", lambda ctx, conv, p: answer_in_context(ctx, p.answer)
            if p.type != "abstention" else math.nan, interval=True, label="answer in context (share of questions)"),
    Measure("context_tokens", lambda ctx, conv, p: ctx.tokens, label="context tokens"),
    Measure("stale", stale_of, label="stale (an old value shown alone)"),
    Measure("repeated_lines", lambda ctx, conv, p: repeated_lines(ctx)),
    # shown when a data set names answer sessions (the console drops a column with no value)
    Measure("session_recall_any", lambda ctx, conv, p: session_recall(ctx, conv, p.sessions)[0]),
    Measure("session_recall_all", lambda ctx, conv, p: session_recall(ctx, conv, p.sessions)[1]),
    Measure("read_ms", aggregate=None, shown=False),  # the runner times the read
    Measure("judged_correct", judged=True),  # eval.judge
    Measure("judged_answer", aggregate=None, shown=False, judged=True),
)
RUN_MEASURES = (
    Measure("tokens_per_turn", run=lambda r: _mean(s["tokens_per_turn"] for s in r.stats), label="tokens sent per turn"),
    Measure("op_accuracy", run=lambda r: r.of_turns(lambda g, p: g == p), label="op accuracy"),
    # the share of user turns whose extraction or planning failed and wrote nothing
    Measure("error_rate", run=lambda r: r.of_turns(lambda g, p: p == "ERROR"), label="error rate"),
    Measure("fact_precision", run=lambda r: fact_precision(r.confusion) if r.has_ops else math.nan,
            label="fact precision"),
    Measure("duplicate_rate", run=lambda r: _mean(s["duplicate_rate"] for s in r.stats) if r.keeps_facts else math.nan,
            label="duplicates"),
    Measure("turns_per_s", run=lambda r: sum(s["turns"] for s in r.stats)
            / max(sum(s["write_total_ms"] for s in r.stats) / 1000, 1e-9)),
    Measure("read_p50_ms", run=lambda r: percentile(r.reads, 50)),
    Measure("read_p95_ms", run=lambda r: percentile(r.reads, 95)),
    Measure("write_p50_ms", run=lambda r: percentile(r.writes, 50), label="write p50 ms"),
    Measure("write_p95_ms", run=lambda r: percentile(r.writes, 95)),
)


MEASURES = {m.name: m for m in PROBE_MEASURES + RUN_MEASURES}
HEADLINE = "evidence_recall"  # the measure a run is judged by first (the console's comparison, the README's table)


def label(column: str) -> str:
    """How tables, axes and pages name a column: its measure's label, else its name in words."""
    m = MEASURES.get(column)
    return m.label if m is not None and m.label else column.replace("_", " ")


def shown_columns(judged: bool = False) -> list[str]:
    """The measures a run's summary shows (``memkit bench``'s console, notebook 7), in the table's order; the
    judge's too with ``judged``."""
    return [m.name for m in PROBE_MEASURES + RUN_MEASURES if m.shown and (judged or not m.judged)]


def probe_columns(judged: bool) -> list[str]:
    """The measure columns of ``results.csv``, in order (the judge's only in a judged run)."""
    return [m.name for m in PROBE_MEASURES if judged or not m.judged]


def with_columns(rows: Sequence[dict[str, Any]], columns: Sequence[str]) -> pd.DataFrame:
    """``rows`` as a frame of exactly ``columns``: a row without one of them, or with one more, is an error
    (``pd.DataFrame(rows, columns=...)`` would drop or leave empty a column silently)."""
    for row in rows:
        if set(row) != set(columns):
            raise ValueError(f"a row's columns {sorted(set(row) ^ set(columns))} differ from the declared ones")
    return pd.DataFrame(list(rows), columns=list(columns))
