"""Hybrid recall over a user's facts and episodes: a lexical channel (SQLite FTS5, BM25) and a dense channel
(Chroma, cosine), fused by reciprocal rank. Each result keeps its rank in every channel that found it, so
the context account can say why it is there (docs/architecture.md §1).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

from .facts import FactStore
from .types import Recalled

CHANNELS = ("lexical", "dense")
RRF_K = 10  # reciprocal rank fusion constant: 60 in Cormack et al. 2009; 10 measured on the dev split (README)
DEPTH = 100  # candidates read from each channel before fusion


@dataclass(frozen=True)
class RecallOptions:
    """Which channels to use, their weight in the fusion, and how deep to read each one.

    ``floor`` drops dense hits of *facts* below that similarity (a fact found lexically needs no floor).
    Episodes have no floor: they compete on fused rank for the budget.
    """

    channels: tuple[str, ...] = CHANNELS
    weights: tuple[tuple[str, float], ...] = (("lexical", 1.0), ("dense", 1.0))
    depth: int = DEPTH
    rrf_k: int = RRF_K

    def __post_init__(self) -> None:
        unknown = set(self.channels) - set(CHANNELS)
        if unknown or not self.channels:
            raise ValueError(f"unknown recall channels {sorted(unknown)}; choose from {CHANNELS}")

    def weight(self, channel: str) -> float:
        return dict(self.weights).get(channel, 1.0)


def fuse(rankings: dict[str, Sequence[str]], options: RecallOptions) -> list[tuple[str, float, dict[str, int]]]:
    """Reciprocal rank fusion: ``score(id) = sum over channels of weight / (rrf_k + rank)``, best first."""
    scores: dict[str, float] = {}
    ranks: dict[str, dict[str, int]] = {}
    for channel, ids in rankings.items():
        w = options.weight(channel)
        for r, i in enumerate(ids, 1):
            scores[i] = scores.get(i, 0.0) + w / (options.rrf_k + r)
            ranks.setdefault(i, {})[channel] = r
    # ties (same fused score): the better dense rank, then the better lexical rank, then the id
    far = 1 << 30
    return sorted(((i, s, ranks[i]) for i, s in scores.items()),
                  key=lambda x: (-x[1], x[2].get("dense", far), x[2].get("lexical", far), x[0]))


def recall_facts(store: FactStore, user_id: str, query: str, vector: Sequence[float] | None, floor: float,
                 options: RecallOptions = RecallOptions()) -> list[Recalled]:
    """The user's current facts for ``query`` by fused rank; dense hits below ``floor`` do not count."""
    rankings: dict[str, list[str]] = {}
    sims: dict[str, float] = {}
    if "dense" in options.channels and vector is not None:
        dense = store.dense(user_id, "facts", vector, options.depth)
        sims = dict(dense)
        rankings["dense"] = [i for i, s in dense if s >= floor]
    if "lexical" in options.channels:
        rankings["lexical"] = [i for i, _ in store.lexical(user_id, "facts", query, options.depth)]
    fused = fuse(rankings, options)
    facts = {f.id: f for f in store.get(user_id, ids=[i for i, _, _ in fused])} if fused else {}
    return [Recalled(facts[i], s, r, sims.get(i, math.nan), _why(r)) for i, s, r in fused if i in facts]


def recall_episodes(store: FactStore, user_id: str, query: str, vector: Sequence[float] | None,
                    options: RecallOptions = RecallOptions()) -> list[Recalled]:
    """The user's episodes (past turns) for ``query`` by fused rank."""
    rankings: dict[str, list[str]] = {}
    sims: dict[str, float] = {}
    if "dense" in options.channels and vector is not None:
        dense = store.dense(user_id, "episodes", vector, options.depth)
        sims = dict(dense)
        rankings["dense"] = [i for i, _ in dense]
    if "lexical" in options.channels:
        rankings["lexical"] = [i for i, _ in store.lexical(user_id, "episodes", query, options.depth)]
    fused = fuse(rankings, options)
    episodes = {e.id: e for e in store.episodes(user_id, [i for i, _, _ in fused])} if fused else {}
    return [Recalled(episodes[i], s, r, sims.get(i, math.nan), _why(r)) for i, s, r in fused if i in episodes]


def _why(ranks: dict[str, int]) -> str:
    return " + ".join(f"{c} #{r}" for c, r in sorted(ranks.items()))
