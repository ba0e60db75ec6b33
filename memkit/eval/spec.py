"""A benchmark run's what and how, as one frozen object (``RunSpec``): ``memkit bench`` and ``run`` build it,
it is checked once, and every job gets it as it is."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Sequence

from .. import registry, validate
from ..errors import ConfigError
from ..registry import DEFAULT_EMBEDDER
from ..strategies import budget_free, check_options
from .data import Conversation

Job = tuple[Any, str, list[int]]  # (conversation, strategy, budgets)


@dataclass(frozen=True)
class RunSpec:
    """A benchmark run's what and how, built once (by ``memkit bench``, or ``run`` from its arguments), checked
    once (strategies, budgets, memory options, embedder: ``ConfigError`` before anything runs), and passed down
    as it is to every job (``execution.run_job``): ``options`` are the strategies' memory options."""

    strategies: tuple[str, ...]
    budgets: tuple[int, ...]
    k: int = 5
    per_turn_tokens: bool = True
    judge_model: Any = None
    embedder: str = DEFAULT_EMBEDDER
    options: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for name in self.strategies:
            if name not in registry.names("strategy"):
                raise ConfigError(f"unknown strategy {name!r}; choose from {registry.names('strategy')}")
        for b in self.budgets:
            validate.positive_int("budget", b, validate.MAX_BUDGET)
        validate.positive_int("k", self.k, validate.MAX_K)
        check_options(self.options)  # a misspelt option would be dropped in silence
        registry.factory("embedder", self.embedder)  # an unknown name fails here

    def jobs(self, conversations: Sequence[Conversation]) -> list[Job]:
        """One job per strategy and conversation, and per budget for a strategy whose memory depends on it."""
        budgets = list(self.budgets)
        return [(c, name, bs) for name in self.strategies for c in conversations
                for bs in ([budgets] if budget_free(name) else [[b] for b in budgets])]

    def job_options(self) -> dict[str, Any]:
        """What one conversation's run takes beside the conversation, its strategy, budgets and store."""
        return {"k": self.k, "per_turn_tokens": self.per_turn_tokens, "judge_model": self.judge_model, **self.options}
