"""The read path's budget plan: how a context's tokens are shared before anything is read. Pure arithmetic,
so the facade, ``bench-scale`` and the tests use the same numbers (docs/architecture.md §5)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from ..validate import MAX_K

# The profile block takes at most this share of a budget: at 100 tokens a 150-token profile would leave
# nothing for what the question is about (docs/decisions.md, "Profile block").
PROFILE_SHARE = 0.15


def profile_share(profile_tokens: int, left: int) -> int:
    """Tokens the profile block may take of the ``left`` a read has for memory: its own cap, at most 15%."""
    return min(profile_tokens, int(left * PROFILE_SHARE))


def profile_rows(profile_tokens: int, k: int) -> int:
    """Profile rows to read for a block of ``profile_tokens`` beside the ``k`` recalled facts: a line costs at
    least 3 tokens ("- ", a word and the newline)."""
    return profile_tokens // 3 + k


def episode_depth(depth: int, budget: int) -> int:
    """How deep to read each episode channel: enough to fill ``budget`` with short turns (about 10 tokens), at
    most what a search may be asked for (``validate.MAX_K``)."""
    return min(max(depth, budget // 10), MAX_K)


def episode_page(budget: int) -> int:
    """Episodes read by id at a time while packing: about what the budget holds of short turns."""
    return min(max(budget // 10, 10), MAX_K)


@dataclass(frozen=True)
class BudgetPlan:
    """A read's shares: ``documents`` for the retriever, ``memory`` for the rest, of which ``reserve`` is kept
    for the session's newest turns (``newest`` is the newest one's tokens) and ``profile`` caps the profile
    block; how deep each episode channel is read and how many episodes are fetched at a time."""

    budget: int
    documents: int
    memory: int
    reserve: int
    newest: int
    profile: int
    depth: int
    episode_depth: int
    page: int


def plan_budget(budget: int, window: Sequence[int], documents: bool, document_share: float, window_share: float,
         profile_tokens: int, depth: int) -> BudgetPlan:
    """The shares of ``budget`` for a session whose window holds turns of ``window`` tokens (oldest first)."""
    doc = int(budget * document_share) if documents else 0
    memory = budget - doc
    newest = sum(window[-1:])
    reserve = min(max(newest, min(sum(window), int(memory * window_share))), memory)
    return BudgetPlan(budget, doc, memory, reserve, newest, profile_share(profile_tokens, memory), depth,
                      episode_depth(depth, budget), episode_page(budget))
