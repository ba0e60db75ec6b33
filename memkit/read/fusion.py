"""Reciprocal rank fusion of a read's rankings (``memkit/read/recall.py`` makes them): each item's fused score,
its rank in every ranking that found it, and why it was recalled, as the context account says it.
"""

from __future__ import annotations

from functools import lru_cache
from typing import NamedTuple, Protocol, Sequence, TypeVar

from ..types import Why


class Ref(NamedTuple):
    """An item on a read's one list of facts and episodes: which part it is of, and its id there. Ordered as
    ``(part, id)``, so equal fused scores keep an order that does not depend on the run."""

    part: str  # "facts" or "episodes"
    id: str


Key = TypeVar("Key", str, Ref)  # what a fusion ranks: the ids of one part, or Refs of both


class Weights(Protocol):
    """What fusion needs of the read's options (``recall.RecallOptions``): each ranking's weight, and the constant."""

    rrf_k: int

    def weight(self, channel: str) -> float: ...


def fuse(rankings: "dict[str, Sequence[Key]]", options: Weights) -> "list[tuple[Key, float, dict[str, int]]]":
    """Reciprocal rank fusion: ``score(id) = sum over channels of weight / (rrf_k + rank)``, best first."""
    scores: dict[Key, float] = {}
    ranks: dict[Key, dict[str, int]] = {}
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
    similarities, one index's BM25), as ``Ref``s; on a tie the fact first. A channel only episodes have (the
    question's time) keeps their order."""
    joint: dict[str, list[Ref]] = {}
    new = tuple.__new__  # Ref(part, id) without its Python-level __new__: a read makes a few hundred of them
    for channel in dict.fromkeys([*facts, *episodes]):
        both = [(-s, 0, new(Ref, ("facts", i))) for i, s in facts.get(channel, ())] + \
               [(-s, 1, new(Ref, ("episodes", i))) for i, s in episodes.get(channel, ())]
        joint[channel] = [key for _, _, key in sorted(both, key=lambda x: x[:2])]
    return joint


def why(ranks: dict[str, int]) -> Why:
    """Why an item was recalled: its rank in each channel (shown ``dense #3 + lexical #1``, channels by name)."""
    return why_of(tuple(ranks.items()))


@lru_cache(maxsize=1 << 12)  # the same ranks come back read after read
def why_of(ranks: tuple[tuple[str, int], ...]) -> Why:
    return Why("recalled", ranks)
