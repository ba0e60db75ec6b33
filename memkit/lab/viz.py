"""Pure functions from memkit objects and result tables to plotly figures and pandas DataFrames."""

from __future__ import annotations

from datetime import datetime, timezone
from html import escape
from pathlib import Path
from typing import Iterable, Sequence

import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from ..types import Context, Event, Fact, Hit

PALETTE = {"facts": "#4C78A8", "episodes": "#72B7B2", "summary": "#F58518", "turns": "#54A24B", "documents": "#B279A2"}


def _t(ts: float) -> datetime:
    return datetime.fromtimestamp(ts, tz=timezone.utc)


def facts_table(facts: Sequence[Fact]) -> pd.DataFrame:
    """One row per fact: key, text, importance, validity and sources."""
    return pd.DataFrame([{"key": f.key, "text": f.text, "importance": round(f.importance, 2), "current": f.current,
                          "source": ", ".join(f.source)} for f in facts],
                        columns=["key", "text", "importance", "current", "source"])


def events_table(events: Sequence[Event]) -> pd.DataFrame:
    """One row per event: kind, before, after, reason and source turns."""
    return pd.DataFrame([{"event": e.kind.value, "key": (e.after or e.before).key if (e.after or e.before) else None,
                          "before": e.before.text if e.before and e.kind.value != "ADD" else "",
                          "after": e.after.text if e.after else "", "reason": e.reason, "source": ", ".join(e.source)}
                         for e in events], columns=["event", "key", "before", "after", "reason", "source"])


def context_table(ctx: Context, evidence: Iterable[str] | None = None) -> pd.DataFrame:
    """The context account: one row per item that went in, with its part, its session and date (an episode's
    session and the date it was said; a fact's date is when it became current), why, and score. With
    ``evidence`` (turn ids), an ``evidence`` column says whether the item is, or was extracted from, one of them.
    ``rank`` is the item's place on the read's fused list (facts and episodes together; none for the profile
    block, the summary and this session's turns)."""
    wanted = set(evidence or ())
    rows = []
    for p in ctx.parts:
        if not p.items and p.text:
            rows.append({"part": p.name, "item": p.text[:80], "why": "", "similarity": None, "score": None,
                         "evidence": False})
        for it in p.items:
            turns = {it.get("turn_id")} | set(it.get("source", ()))
            rows.append({"part": p.name, "rank": it.get("rank"), "session": it.get("session_id", ""),
                         "date": it.get("date", ""), "item": (it.get("text") or it.get("turn_id") or "")[:100],
                         "why": it.get("why", ""), "similarity": it.get("similarity"), "score": it.get("score"),
                         "evidence": bool(wanted & turns)})
    table = pd.DataFrame(rows, columns=["part", "rank", "session", "date", "item", "why", "similarity", "score",
                                        "evidence"])
    # a place, not a measure: "3", not "3.0"; blank where the item has none (profile, summary, this session)
    table["rank"] = [int(r) if isinstance(r, (int, float)) and r == r else "" for r in table["rank"]]
    return table if evidence is not None else table.drop(columns="evidence")


def layers(window_turns: Sequence, summary_text: str, facts: Sequence[Fact]) -> go.Figure:
    """Both layers side by side: the episodic window (+ summary) and the semantic facts."""
    fig = make_subplots(rows=1, cols=2, subplot_titles=("Episodic: window + summary", "Semantic: current facts"),
                        specs=[[{"type": "table"}, {"type": "table"}]])
    ep = [f"[summary] {summary_text}"] if summary_text else []
    ep += [f"{t.role}: {t.content[:120]}" for t in window_turns]
    fig.add_trace(go.Table(header={"values": ["turn"]}, cells={"values": [ep or ["(empty)"]], "align": "left"}), 1, 1)
    fig.add_trace(go.Table(header={"values": ["key", "fact"]},
                           cells={"values": [[f.key or "" for f in facts], [f.text for f in facts]], "align": "left"}), 1, 2)
    rows = max(len(ep), len(facts), 1)  # as tall as the longer table, not a fixed 360 px of blank
    fig.update_layout(height=min(90 + 34 * rows, 480), margin={"t": 40, "b": 10, "l": 10, "r": 10})
    return fig


def fact_timeline(facts: Sequence[Fact], until: float | None = None) -> go.Figure:
    """One bar per fact version, from ``valid_from`` to ``valid_to`` (or ``until``), a row per key and value.

    Real timestamps are drawn as dates; small synthetic ones (notebooks replay turns at t = 1000, 1001, …)
    as plain numbers.
    """
    end = until or max([f.valid_to or f.valid_from for f in facts] + [0]) + 1
    dates = any(f.valid_from > 1e9 for f in facts)
    fig = go.Figure()
    for f in sorted(facts, key=lambda x: (x.key or "~", x.valid_from)):
        stop = f.valid_to or end
        row = f"{f.key or f.text[:30]}: {f.value or f.text[:20]}"
        start = _t(f.valid_from) if dates else f.valid_from
        width = (stop - f.valid_from) * 1000 if dates else stop - f.valid_from
        fig.add_trace(go.Bar(y=[row], x=[width], base=[start], orientation="h", showlegend=False,
                             marker_color="#4C78A8" if f.current else "#BBBBBB", hovertext=f.text))
    fig.update_layout(xaxis={"type": "date" if dates else "linear", "title": "valid time"},
                      yaxis={"autorange": "reversed"}, height=140 + 32 * len(facts),
                      title="Fact versions (blue: current, grey: superseded)", margin={"t": 40, "b": 40})
    return fig


def recall_scores(hits: Sequence[Hit], floor: float) -> go.Figure:
    """Each candidate fact's similarity against the floor: above it, the fact may enter the context."""
    fig = go.Figure(go.Bar(x=[round(h.similarity, 3) for h in hits], y=[h.fact.text[:60] for h in hits],
                           orientation="h", marker_color=["#54A24B" if h.similarity >= floor else "#E45756" for h in hits],
                           text=[f"score {h.score:.2f}" for h in hits], textposition="outside", cliponaxis=False))
    fig.add_vline(x=floor, line_dash="dash", annotation_text=f"floor {floor}")
    low = min([0.0] + [h.similarity for h in hits])
    # room on the right for the score labels, and a y axis as wide as the longest fact
    fig.update_layout(title="Similarity against the floor<br><sup>ranked by 0.7·similarity + 0.3·importance</sup>",
                      xaxis={"title": "similarity", "range": [low, 1.2]},
                      yaxis={"autorange": "reversed", "automargin": True}, height=160 + 30 * len(hits),
                      margin={"t": 60, "r": 40})
    return fig


def budget_breakdown(ctx: Context) -> go.Figure:
    """Tokens per part of a built context against its budget."""
    fig = go.Figure()
    for p in ctx.parts:
        fig.add_trace(go.Bar(x=[p.tokens], y=["context"], name=f"{p.name} ({p.tokens})", orientation="h",
                             marker_color=PALETTE.get(p.name)))
    fig.add_vline(x=ctx.budget, line_dash="dash", annotation_text=f"budget {ctx.budget}")
    fig.update_layout(barmode="stack", height=220, title=f"{ctx.tokens} of {ctx.budget} tokens",
                      xaxis={"range": [0, max(ctx.budget, ctx.tokens) * 1.1]}, margin={"t": 40, "r": 40},
                      legend={"orientation": "h", "y": -0.35})
    return fig


def episodic_trace(trace: pd.DataFrame) -> go.Figure:
    """Window and summary size (tokens) per turn of a replayed session."""
    fig = go.Figure()
    for col, color in (("window_tokens", PALETTE["turns"]), ("summary_tokens", PALETTE["summary"])):
        fig.add_trace(go.Scatter(x=trace["turn"], y=trace[col], name=col.replace("_", " "), line_color=color))
    fig.update_layout(title="Window and summary size per turn (tokens)", height=320, margin={"t": 40})
    return fig


def strategy_comparison(summary: pd.DataFrame) -> go.Figure:
    """Evidence recall and context tokens per strategy (the ``all`` rows of a bench summary); with several
    budgets, recall against budget, one line per strategy."""
    s = summary[summary["type"] == "all"]
    if "budget" in s and s["budget"].nunique() > 1:
        return recall_vs_budget(summary)
    fig = make_subplots(rows=1, cols=2, subplot_titles=("evidence recall (95% interval)", "context tokens per probe"))
    fig.add_trace(go.Bar(x=s["strategy"], y=s["evidence_recall"].round(3), marker_color="#4C78A8", showlegend=False,
                         error_y=_interval(s, "evidence_recall")), 1, 1)
    fig.add_trace(go.Bar(x=s["strategy"], y=s["context_tokens"].round(1), marker_color="#F58518", showlegend=False), 1, 2)
    fig.update_yaxes(range=[0, 1], row=1, col=1)
    fig.update_layout(height=380, title="Strategies compared", margin={"t": 60})
    return fig


def recall_vs_budget(summary: pd.DataFrame) -> go.Figure:
    """Evidence recall (left) and tokens used (right) against the context budget, one line per strategy."""
    s = summary[summary["type"] == "all"]
    fig = make_subplots(rows=1, cols=2, subplot_titles=("evidence recall (95% interval)", "context tokens per probe"))
    for i, (name, g) in enumerate(s.groupby("strategy", sort=False)):
        g = g.sort_values("budget")
        color = COLORS[i % len(COLORS)]
        fig.add_trace(go.Scatter(x=g["budget"], y=g["evidence_recall"].round(3), name=name, line_color=color,
                                 mode="lines+markers", error_y=_interval(g, "evidence_recall")), 1, 1)
        fig.add_trace(go.Scatter(x=g["budget"], y=g["context_tokens"].round(1), name=name, line_color=color,
                                 mode="lines+markers", showlegend=False), 1, 2)
    fig.update_yaxes(range=[0, 1], row=1, col=1)
    fig.update_xaxes(title="budget (tokens)")
    fig.update_layout(height=420, title="Recall against budget", margin={"t": 60})
    return fig


def _interval(rows: pd.DataFrame, metric: str) -> dict | None:
    """Plotly error bars from a summary's ``<metric>_ci_low`` / ``_ci_high`` columns (None without them)."""
    if f"{metric}_ci_low" not in rows:
        return None
    return {"type": "data", "symmetric": False, "array": (rows[f"{metric}_ci_high"] - rows[metric]).round(3).tolist(),
            "arrayminus": (rows[metric] - rows[f"{metric}_ci_low"]).round(3).tolist(), "thickness": 1}


COLORS = ["#4C78A8", "#F58518", "#54A24B", "#E45756", "#72B7B2", "#B279A2", "#FF9DA6", "#9D755D", "#BAB0AC"]


def recall_by_type(summary: pd.DataFrame) -> pd.DataFrame:
    """Evidence recall pivoted: probe types as rows, strategy (and budget, when there are several) as columns."""
    s = summary[summary["type"] != "all"]
    columns = ["strategy", "budget"] if "budget" in s and s["budget"].nunique() > 1 else "strategy"
    return s.pivot_table(index="type", columns=columns, values="evidence_recall", sort=False).round(3)


def write_page(fig: go.Figure, path: str | Path) -> None:
    """``fig`` as one HTML file that opens offline (plotly.js inside), titled as the figure is."""
    title = fig.layout.title.text or "memkit"
    html = fig.to_html(include_plotlyjs=True, full_html=True)
    Path(path).write_text(html.replace("<head>", f"<head><title>{escape(title)}</title>", 1), "utf-8")
