"""Reciprocal rank fusion of a read's rankings (``memkit/read/recall.py`` makes them): each item's fused score,
its rank in every ranking that found it, and why it was recalled, as the context account says it.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Protocol, Sequence


class Weights(Protocol):
    """What fusion needs of the read's options (``recall.RecallOptions``): each ranking's weight, and the constant."""

    rrf_k: int

    def weight(self, channel: str) -> float: ...


def fuse(rankings: dict[str, Sequence[str]], options: Weights) -> list[tuple[str, float, dict[str, int]]]:
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
    order = sorted((-s, ranks[i].get("dense", far), ranks[i].get("lexical", far), i) for i, s in scores.items())
    return [(i, -s, ranks[i]) for s, _, _, i in order]


def ranked_ids(scored: dict[str, list[tuple[str, float]]]) -> dict[str, list[str]]:
    """Each channel's ranking as ids, best first."""
    return {c: [i for i, _ in hits] for c, hits in scored.items()}


def one_list(facts: dict[str, list[tuple[str, float]]], episodes: dict[str, list[tuple[str, float]]]
             ) -> dict[str, list[str]]:
    """Facts and episodes ranked together in each channel by the channel's own score (one dense query's
    similarities, one index's BM25), as ``"f:<id>"`` and ``"e:<id>"``; on a tie the fact first. A channel only
    episodes have (the question's time) keeps their order."""
    joint: dict[str, list[str]] = {}
    for channel in dict.fromkeys([*facts, *episodes]):
        both = [(-s, 0, f"f:{i}") for i, s in facts.get(channel, ())] + \
               [(-s, 1, f"e:{i}") for i, s in episodes.get(channel, ())]
        joint[channel] = [key for _, _, key in sorted(both, key=lambda x: x[:2])]
    return joint


def why(ranks: dict[str, int]) -> str:
    """Why an item was recalled: its rank in each channel (``dense #3 + lexical #1``, channels by name)."""
    return why_of(tuple(ranks.items()))


@lru_cache(maxsize=1 << 12)  # the same ranks come back read after read
def why_of(ranks: tuple[tuple[str, int], ...]) -> str:
    return " + ".join(f"{c} #{r}" for c, r in sorted(ranks))
