"""Run strategies over conversations and return pandas tables: one row per probe, and a summary."""

from __future__ import annotations

import sys
import time
import uuid
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterable, Iterator, Sequence

import pandas as pd

from ..config import offline_embedder
from ..registry import DEFAULT_EMBEDDER
from ..errors import ConfigError
from ..store import FactStore
from .conversation import KEYS
from .data import Conversation
from .spec import RunSpec
from .defaults import DEFAULT_STRATEGIES, RECYCLE
from .metrics import OPS, PROBE_MEASURES, RUN_MEASURES, RunStats, probe_columns, with_columns
from .stats import with_intervals


def run(conversations: Sequence[Conversation], strategies: Iterable[str] = DEFAULT_STRATEGIES,
        budget: int | Sequence[int] = 1200, k: int = 5, store: FactStore | str | None = None, progress: bool = False,
        per_turn_tokens: bool = True, judge_model: Any = None, jobs: int = 1, scheduler: str | None = None,
        parts: str | Path | None = None, resume: bool = False, embed_cache: str | Path | None = None,
        recycle: int = RECYCLE, embedder: str | None = None, **memory_options: Any) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """Every strategy on every conversation at every budget: (results per probe, summary per strategy, budget
    and probe type, op confusion).

    ``memory_options`` go to the two-layer strategies' ``Memory`` (e.g. ``profile_tokens=0``, ``min_score``).
    With ``judge_model`` (a chat model), each probe also gets ``judged_correct`` (see ``eval.judge``).
    ``store`` is a ``FactStore`` (this process only), or ``"ephemeral"`` / a PostgreSQL URL that every worker
    opens for itself. ``jobs`` runs conversations in that many processes, ``scheduler`` on a Dask cluster
    (``eval/execution.py``); the rows are the same and in the same order as a serial run. The ``jobs``
    processes are replaced by fresh ones once they have run ``recycle`` jobs each (0: never), which bounds the
    memory Chroma keeps of the stores they closed. ``parts`` keeps each
    finished job in that folder, and ``resume`` skips the jobs a killed run already finished there.
    ``embed_cache`` puts the encoder behind that embedding-cache file, warmed first with every text the run
    will embed that it lacks, in length-sorted batches across conversations (split among the workers of one machine).
    ``embedder`` names the offline embedder every store of the run shares (``minilm`` or ``e5``; by default
    ``MEMKIT_EMBEDDER``'s, else ``minilm``: ``config.offline_embedder``).
    """
    spec = RunSpec(tuple(strategies), (budget,) if isinstance(budget, int) else tuple(budget), k, per_turn_tokens,
                   judge_model, embedder or offline_embedder(), dict(memory_options))
    return run_spec(conversations, spec, store, progress, jobs, scheduler, parts, resume, embed_cache, recycle)


def run_spec(conversations: Sequence[Conversation], spec: RunSpec, store: FactStore | str | None = None,
             progress: bool = False, jobs: int = 1, scheduler: str | None = None, parts: str | Path | None = None,
             resume: bool = False, embed_cache: str | Path | None = None, recycle: int = RECYCLE,
             cost: dict[str, Any] | None = None) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """``run`` for a ``RunSpec``: where and how it runs is the rest (see ``run``); ``cost`` gets the warm-up's
    texts and seconds (``costed`` adds the rest)."""
    from .execution import Parts, StoreSpec, run_jobs

    _check_run(jobs, recycle)
    todo = spec.jobs(conversations)
    spread = jobs > 1 or scheduler is not None
    if spread and (spec.judge_model is not None or "chat_model" in spec.options):
        raise ConfigError("a chat model (--judge, two-layer:llm) runs in this process only: run without jobs "
                          "or scheduler")
    if isinstance(store, FactStore) and (spread or embed_cache):
        raise ConfigError("jobs, scheduler and embed_cache open a store per worker: pass store as 'ephemeral' "
                          "or a postgresql:// URL, not a FactStore")
    where = store if isinstance(store, FactStore) else \
        StoreSpec(store or "ephemeral", f"bench_{uuid.uuid4().hex[:8]}", str(embed_cache) if embed_cache else None,
                  spec.embedder)
    saved = None
    if parts:
        options = {key: v if isinstance(v, (int, float, str, bool, type(None))) else type(v).__name__
                   for key, v in spec.job_options().items()}
        saved = Parts(Path(parts), {"conversations": [c.id for c in conversations], "strategies": list(spec.strategies),
                                    "budgets": list(spec.budgets), "options": options,
                                    **({"embedder": spec.embedder} if spec.embedder != DEFAULT_EMBEDDER else {})})
        saved.start(todo, resume)
    done = run_jobs(todo, where, spec, jobs, scheduler, saved, progress, recycle=recycle, cost=cost)
    rows = [r for result in done for r in result[0]]
    stats = [s for result in done for s in result[1]]
    results = with_columns(rows, [*KEYS, *probe_columns(spec.judge_model is not None)])
    return results, summarise(results, stats, list(spec.strategies)), confusion_table(stats)


@contextmanager
def costed(conversations: int, cost: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """What the run in the block cost, into ``cost`` (give it to ``run_spec``) when the block ends: its seconds
    in all and per conversation, the warm-up's (``embedded`` texts; 0 with a warm cache), and the peak memory
    (resident set) of this process and of its largest worker: the largest process it started and waited for
    (the ``jobs`` workers), or on a Dask cluster the largest its workers say (``execution.run_jobs``)."""
    started = time.perf_counter()
    yield cost
    seconds = round(time.perf_counter() - started, 1)  # per conversation from the figure the file keeps
    peak = _peak_rss_mb()
    workers = cost.pop("workers_peak_mb", None)
    if peak is not None and workers is not None:
        peak["largest_worker"] = workers
    cost.update(seconds=seconds, seconds_per_conversation=round(seconds / max(conversations, 1), 1),
                warm_up_s=round(cost.get("warm_up_s", 0.0), 1), embedded=cost.get("embedded", 0),
                peak_rss_mb=peak)


def _peak_rss_mb() -> dict[str, int] | None:
    """The peak resident set of this process and of its largest waited-for child, in MB (None on Windows)."""
    from .execution import own_peak_mb

    if sys.platform == "win32":
        return None
    return {"main": own_peak_mb(), "largest_worker": own_peak_mb(children=True)}


def _check_run(jobs: int, recycle: int) -> None:
    if jobs < 1:
        raise ConfigError(f"jobs must be at least 1, got {jobs}")
    if not isinstance(recycle, int) or recycle < 0:
        raise ConfigError("recycle is how many jobs each worker process runs before fresh ones replace them "
                          f"(0: never); got {recycle!r}")


def summarise(results: pd.DataFrame, stats: list[dict[str, Any]], strategies: Sequence[str]) -> pd.DataFrame:
    """One row per strategy, budget and probe type, plus an ``all`` row per strategy and budget with the
    run-level columns; evidence recall and answer-in-context carry bootstrap 95% intervals (``stats.py``)."""
    metrics = {m.name: m.aggregate for m in PROBE_MEASURES if m.aggregate and not m.judged}
    metrics["probe"] = "count"
    metrics |= {m.name: m.aggregate for m in PROBE_MEASURES if m.aggregate and m.judged and m.name in results}
    keys = ["strategy", "budget"]
    by_type = results.groupby(keys + ["type"]).agg(metrics).rename(columns={"probe": "probes"}).reset_index()
    overall = results.groupby(keys).agg(metrics).rename(columns={"probe": "probes"}).reset_index()
    overall.insert(2, "type", "all")
    extra = []
    for name in strategies:
        for b in sorted({s["budget"] for s in stats if s["strategy"] == name}):
            st = [s for s in stats if s["strategy"] == name and s["budget"] == b]
            conf: dict[tuple[str, str], int] = {}
            for s in [s for s in stats if s["strategy"] == name]:
                for key, n in s["confusion"].items():
                    conf[key] = conf.get(key, 0) + n
            run_stats = RunStats(st, conf, st[0]["keeps_facts"])
            extra.append({"strategy": name, "budget": b, **{m.name: m.run(run_stats) for m in RUN_MEASURES}})
    overall = overall.merge(with_columns(extra, [*keys, *(m.name for m in RUN_MEASURES)]), on=keys, how="left")
    out = pd.concat([overall, by_type], ignore_index=True)
    order = {n: i for i, n in enumerate(strategies)}
    out["_o"] = out["strategy"].map(order)
    out["_t"] = out["type"].map(lambda t: "" if t == "all" else t)
    out = out.sort_values(["_o", "budget", "_t"]).drop(columns=["_o", "_t"]).reset_index(drop=True)
    return with_intervals(out, results)


def confusion_table(stats: list[dict[str, Any]]) -> pd.DataFrame:
    """Gold vs predicted operations per two-layer strategy, summed over conversations."""
    rows = []
    for s in stats:
        for (g, p), n in s["confusion"].items():
            if s["keeps_facts"]:
                rows.append({"strategy": s["strategy"], "gold": g, "predicted": p, "turns": n})
    df = pd.DataFrame(rows, columns=["strategy", "gold", "predicted", "turns"])
    if df.empty:
        return df
    return df.groupby(["strategy", "gold", "predicted"], as_index=False)["turns"].sum()


__all__ = ["DEFAULT_STRATEGIES", "OPS", "confusion_table", "costed", "run", "summarise"]
