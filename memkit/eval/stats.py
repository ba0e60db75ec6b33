"""Uncertainty for benchmark tables: bootstrap intervals and paired comparisons, resampling conversations.

Probes of one conversation are not independent (they share a memory), so the unit resampled is the
conversation: a statistic is the mean over the probes of the resampled conversations. A run with one
conversation resamples its probes instead. The seed is fixed, so the same results give the same numbers.
A paired comparison resamples the same conversations for both strategies (its interval), and its p-value
comes from a paired sign-flip permutation test over conversations (two-sided).
A ratio of timings (``ratio_interval``) resamples the timed rounds instead, each a pair of calls.
"""

from __future__ import annotations

from itertools import combinations
from typing import Sequence

import numpy as np
import pandas as pd

from .metrics import PROBE_MEASURES

METRICS = tuple(m.name for m in PROBE_MEASURES if m.interval)  # the measures with an interval and a paired test
RESAMPLES = 2000
SEED = 0


def _clusters(rows: pd.DataFrame, metric: str) -> tuple[np.ndarray, np.ndarray]:
    """Per resampling unit (a conversation, or a probe when there is one conversation): the metric's sum and
    the number of probes with a value."""
    values = rows[["conversation", "probe", metric]].dropna(subset=[metric])
    unit = "conversation" if rows["conversation"].nunique() > 1 else "probe"
    grouped = values.groupby(unit, sort=True)[metric].agg(["sum", "count"])
    return grouped["sum"].to_numpy(float), grouped["count"].to_numpy(float)


def _draws(n: int, resamples: int, seed: int) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, n, size=(resamples, n))


def interval(rows: pd.DataFrame, metric: str, resamples: int = RESAMPLES, seed: int = SEED) -> tuple[float, float]:
    """The bootstrap 95% interval (percentile) of ``metric``'s mean over ``rows``; NaN without values."""
    sums, counts = _clusters(rows, metric)
    if not counts.sum():
        return float("nan"), float("nan")
    idx = _draws(len(sums), resamples, seed)
    n = counts[idx].sum(axis=1)
    stat = sums[idx].sum(axis=1) / np.where(n > 0, n, np.nan)
    low, high = np.nanpercentile(stat, [2.5, 97.5])
    return float(low), float(high)


def ratio_interval(num: Sequence[float], den: Sequence[float], q: float = 95, resamples: int = RESAMPLES,
                   seed: int = SEED) -> tuple[float, float]:
    """The bootstrap 95% interval (percentile) of ``percentile(num, q) / percentile(den, q)`` for paired
    samples (``num[i]`` and ``den[i]`` timed in one round), resampling the rounds; NaN without samples."""
    a, b = np.asarray(num, float), np.asarray(den, float)
    if not len(a) or len(a) != len(b):
        return float("nan"), float("nan")
    idx = _draws(len(a), resamples, seed)
    stat = np.percentile(a[idx], q, axis=1) / np.percentile(b[idx], q, axis=1)
    low, high = np.percentile(stat, [2.5, 97.5])
    return float(low), float(high)


def with_intervals(summary: pd.DataFrame, results: pd.DataFrame, resamples: int = RESAMPLES,
                   seed: int = SEED) -> pd.DataFrame:
    """``summary`` with ``<metric>_ci_low`` / ``<metric>_ci_high`` for evidence recall and answer-in-context on
    every row (each strategy, budget and probe type, and ``all``)."""
    out = summary.copy()
    for metric in METRICS:
        lows, highs = [], []
        for _, row in out.iterrows():
            rows = results[(results["strategy"] == row["strategy"]) & (results["budget"] == row["budget"])]
            if row["type"] != "all":
                rows = rows[rows["type"] == row["type"]]
            low, high = interval(rows, metric, resamples, seed)
            lows.append(low)
            highs.append(high)
        at = list(out.columns).index(metric) + 1
        out.insert(at, f"{metric}_ci_low", lows)
        out.insert(at + 1, f"{metric}_ci_high", highs)
    return out


def compare(results: pd.DataFrame, strategies: Sequence[str], resamples: int = RESAMPLES,
            seed: int = SEED, metrics: Sequence[str] = METRICS) -> pd.DataFrame:
    """Every pair of strategies at each budget and probe type (and ``all``): the paired difference ``a - b`` of
    each of ``metrics``, its bootstrap 95% interval, a sign-flip permutation p-value, and a verdict that says
    "indistinguishable" when the interval covers 0 or p >= 0.05."""
    rows = []
    for budget in sorted(results["budget"].unique()):
        at_budget = results[results["budget"] == budget]
        present = [s for s in strategies if s in set(at_budget["strategy"])]
        types = ["all"] + sorted(at_budget["type"].unique())
        # one table per probe type and metric, a column per strategy, shared by every pair
        wide = {(t, m): (at_budget if t == "all" else at_budget[at_budget["type"] == t]).pivot_table(
                    index=["conversation", "probe"], columns="strategy", values=m, aggfunc="first")
                for t in types for m in metrics if m in at_budget}
        for (a, b), ptype, metric in ((pair, t, m) for pair in combinations(present, 2) for t in types
                                      for m in metrics if (t, m) in wide):
            row = _paired(wide[ptype, metric], a, b, resamples, seed)
            if row is not None:
                rows.append({"budget": budget, "type": ptype, "metric": metric, "strategy_a": a, "strategy_b": b, **row})
    return pd.DataFrame(rows, columns=["budget", "type", "metric", "strategy_a", "strategy_b", "mean_a", "mean_b",
                                       "difference", "ci_low", "ci_high", "p_value", "units", "probes", "verdict"])


def too_few(units: int) -> bool:
    """Whether ``units`` paired units (conversations) are too few for a sign-flip test to reach p < 0.05 (it
    cannot go below 2 / 2**n): five or fewer. Their interval reads as a range, not a test."""
    return 2.0 / 2 ** units >= 0.05


def _paired(wide: pd.DataFrame, a: str, b: str, resamples: int, seed: int) -> dict | None:
    if a not in wide or b not in wide:
        return None
    both = wide[[a, b]].dropna()
    if both.empty:
        return None
    unit = "conversation" if both.index.get_level_values("conversation").nunique() > 1 else "probe"
    per = both.groupby(level=unit, sort=True)
    sums = per.sum()
    sa, sb, n = sums[a].to_numpy(float), sums[b].to_numpy(float), per.size().to_numpy(float)
    d = sa - sb
    observed = d.sum() / n.sum()
    idx = _draws(len(d), resamples, seed)
    boot = d[idx].sum(axis=1) / n[idx].sum(axis=1)
    low, high = (float(x) for x in np.percentile(boot, [2.5, 97.5]))
    signs = np.random.default_rng(seed + 1).choice([-1.0, 1.0], size=(resamples, len(d)))
    null = (signs * d).sum(axis=1) / n.sum()
    p = float((1 + np.sum(np.abs(null) >= abs(observed) - 1e-12)) / (1 + resamples))
    # with few conversations a percentile interval is too narrow: a difference counts only if both say so; and
    # with n units the sign-flip test cannot go below 2 / 2**n: five conversations or fewer can never reach 0.05
    if too_few(len(d)):
        verdict = f"too few {unit}s ({len(d)}) for p < 0.05"
    elif low <= 0 <= high or p >= 0.05:
        verdict = "indistinguishable"
    else:
        verdict = f"{a} higher" if observed > 0 else f"{b} higher"
    return {"mean_a": float(sa.sum() / n.sum()), "mean_b": float(sb.sum() / n.sum()), "difference": float(observed),
            "ci_low": low, "ci_high": high, "p_value": p, "units": len(d), "probes": int(n.sum()), "verdict": verdict}
