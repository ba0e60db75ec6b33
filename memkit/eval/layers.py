"""What each layer adds: two-layer memory with one layer switched off at a time, beside raw retrieval, on the
same conversations, probes and budgets (docs/benchmarks.md, "What each layer adds").

A variant is a strategy and the memory options that switch a layer off: the facts (recalled facts and the
profile block: ``facts=False, profile_tokens=0``), the profile block alone, the episodes (past turns). The
raw-retrieval baselines (``rag:*``) are measured beside them for stale content. ``measure`` runs every variant
(``runner.run``, so each is exactly what ``memkit bench`` would run) and returns one row per probe and budget,
the variant in ``strategy``; ``table`` turns those rows into each variant's means and its paired difference
from full two-layer memory, with a bootstrap interval over conversations (``stats.compare``), per question
type and for all of them.
"""

from __future__ import annotations

from typing import Any, Sequence

import pandas as pd

from ..errors import ConfigError
from .data import Conversation
from .runner import run
from .stats import compare

FULL = "two-layer"
VARIANTS: dict[str, tuple[str, dict[str, Any]]] = {
    FULL: ("two-layer:keyed", {}),
    "without facts": ("two-layer:keyed", {"facts": False, "profile_tokens": 0}),
    "without the profile": ("two-layer:keyed", {"profile_tokens": 0}),
    "without episodes": ("two-layer:keyed", {"episodes": False}),
    "rag:bm25": ("rag:bm25", {}),
    "rag:dense": ("rag:dense", {}),
    "rag:hybrid": ("rag:hybrid", {}),
}
BUDGETS = (100, 200, 400, 1200)
MEASURES = ("evidence_recall", "answer_in_context", "stale")  # the table's columns, each with a paired difference


def measure(conversations: Sequence[Conversation], budgets: Sequence[int] = BUDGETS,
            variants: Sequence[str] | None = None, **run_options: Any) -> pd.DataFrame:
    """Every variant (all of ``VARIANTS`` by default) on ``conversations`` at ``budgets``: the runner's rows
    per probe and budget, the variant's name in ``strategy``. ``run_options`` go to ``runner.run`` (``jobs``,
    ``embed_cache``, ``embedder``, ``store``)."""
    names = list(variants or VARIANTS)
    unknown = sorted(set(names) - set(VARIANTS))
    if unknown:
        raise ConfigError(f"unknown layer variants {unknown}; choose from {list(VARIANTS)}")
    rows = []
    for name in names:
        strategy, options = VARIANTS[name]
        results, _, _ = run(conversations, [strategy], budget=list(budgets), per_turn_tokens=False,
                            **run_options, **options)
        rows.append(results.assign(strategy=name))
    return pd.concat(rows, ignore_index=True)


def table(results: pd.DataFrame) -> pd.DataFrame:
    """Per variant, budget and question type (``all`` first): the probes, each measure's mean, and its paired
    difference from full two-layer memory with a 95% interval (``<measure>_diff``, ``_low``, ``_high``; none
    on the full memory's own rows). Stale content is counted over the probes that can show it (BEAM's
    knowledge updates; none on REALTALK, which marks no changed values)."""
    seen = list(dict.fromkeys(results["strategy"]))
    names = [FULL, *(n for n in seen if n != FULL)] if FULL in seen else seen  # compare pairs the full one first
    paired = compare(results, names, metrics=MEASURES)
    if not paired.empty:
        paired = paired[paired["strategy_a"] == FULL]
    rows = []
    for (name, budget), at in results.groupby(["strategy", "budget"], sort=False):
        for ptype in ["all"] + sorted(at["type"].unique()):
            probes = at if ptype == "all" else at[at["type"] == ptype]
            row: dict[str, Any] = {"variant": name, "budget": int(budget), "type": ptype, "probes": len(probes),
                                   "conversations": probes["conversation"].nunique()}
            for m in MEASURES:
                row[m] = probes[m].mean() if m in probes else float("nan")
                match = paired[(paired["strategy_b"] == name) & (paired["budget"] == budget) &
                               (paired["type"] == ptype) & (paired["metric"] == m)] if name != FULL else paired[:0]
                # compare gives full minus variant: the table says what the variant changes (variant minus full;
                # + 0.0 turns a -0.0 into 0.0)
                for col, of in (("diff", "difference"), ("low", "ci_high"), ("high", "ci_low")):
                    row[f"{m}_{col}"] = -float(match[of].iloc[0]) + 0.0 if len(match) else float("nan")
            rows.append(row)
    order = {n: i for i, n in enumerate(names)}
    out = pd.DataFrame(rows)
    return out.sort_values(["budget", "type", "variant"], key=lambda c: c.map(order) if c.name == "variant" else
                           c.map(lambda t: "" if t == "all" else t) if c.name == "type" else c, kind="stable",
                           ignore_index=True)


def _cell(row: pd.Series, measure: str, digits: int) -> str:
    """The full memory's own value, or a variant's paired difference from it with the interval."""
    if pd.isna(row[f"{measure}_diff"]):
        return "–" if pd.isna(row[measure]) else f"{row[measure]:.{digits}f}"
    return f"{row[f'{measure}_diff']:+.{digits}f} [{row[f'{measure}_low']:+.2f}, {row[f'{measure}_high']:+.2f}]"


def frame(table: pd.DataFrame, measure: str, ptype: str = "all", digits: int = 3) -> pd.DataFrame:
    """One measure of ``table`` as the docs page and notebook 8 show it: a row per variant, a column per
    budget; the full memory's value, and each other variant's difference from it [95% interval], at
    ``digits`` decimals (intervals at 2)."""
    rows = table[table["type"] == ptype]
    budgets = sorted(int(b) for b in rows["budget"].unique())
    cells = {variant: [_cell(got.set_index("budget").loc[b], measure, digits) if b in set(got["budget"]) else "–"
                       for b in budgets]
             for variant, got in rows.groupby("variant", sort=False)}
    return pd.DataFrame.from_dict(cells, orient="index", columns=budgets)
