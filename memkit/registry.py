"""Components by name: one place that turns ``("policy", "similarity", threshold=0.9)`` into an object.

Built-in components register here the same way as a user's own (``register``), so "by name" and "by
object" are one path; an unknown name lists the known ones, a misspelt option is a ``ConfigError``.
Embedders are not built per component: every store without one shares ``embed.shared_embedder()``.
"""

from __future__ import annotations

import inspect
from typing import Any, Callable

from .errors import ConfigError
from .extract import LLMExtractor
from .reconcile import POLICY_TYPES, as_policy
from .rules import RuleExtractor
from .summarize import ExtractiveSummarizer, LLMSummarizer

KINDS = ("policy", "extractor", "summarizer", "strategy")
_REGISTRY: dict[str, dict[str, Callable[..., Any]]] = {kind: {} for kind in KINDS}


def register(kind: str, name: str, factory: Callable[..., Any]) -> None:
    """Make ``factory`` buildable as ``build(kind, name, **options)``."""
    if kind not in _REGISTRY:
        raise ConfigError(f"unknown component kind {kind!r}; choose one of {KINDS}")
    _REGISTRY[kind][name] = factory


def names(kind: str) -> list[str]:
    """The registered names of one kind."""
    return sorted(_REGISTRY[kind])


def build(kind: str, name: str, **options: Any) -> Any:
    """A component of ``kind`` named ``name`` with typed ``options``."""
    if kind not in _REGISTRY:
        raise ConfigError(f"unknown component kind {kind!r}; choose one of {KINDS}")
    factory = _REGISTRY[kind].get(name)
    if factory is None:
        raise ConfigError(f"unknown {kind} {name!r}; choose one of {names(kind)}")
    params = inspect.signature(factory).parameters
    if not any(p.kind is p.VAR_KEYWORD for p in params.values()):
        wrong = set(options) - set(params)
        if wrong:
            raise ConfigError(f"{kind} {name!r} takes {sorted(params) or 'no options'}, not {sorted(wrong)}")
    return factory(**options)


def _strategy(name: str) -> Callable[..., Any]:
    def factory(user_id: str, budget: int = 1200, **options: Any) -> Any:
        from .strategies import make

        return make(name, user_id, budget, **options)

    return factory


def _policy(name: str) -> Callable[..., Any]:
    return lambda **options: as_policy(name, **options)  # one path: as_policy checks the options


for _name in POLICY_TYPES:
    register("policy", _name, _policy(_name))
register("extractor", "rules", RuleExtractor)
register("extractor", "llm", LLMExtractor)
register("summarizer", "extractive", ExtractiveSummarizer)
register("summarizer", "llm", LLMSummarizer)
for _name in ("full", "window", "summary", "rag:bm25", "rag:dense", "rag:hybrid") + tuple(f"two-layer:{p}" for p in POLICY_TYPES):
    register("strategy", _name, _strategy(_name))
