"""Components by name: the one lookup that turns ``("policy", "similarity", threshold=0.9)`` into an object.

Built-in components register here the same way as a user's own (``register``), so "by name" and "by object"
are one path: ``Memory(policy=name)``, the strategy ``two-layer:<name>``, the bench runner and the CLI all
look names up here. An unknown name lists the known ones; a misspelt option is a ``ConfigError``. Embedders
are not built per component: every store without one shares ``embed.shared_embedder()``.
"""

from __future__ import annotations

import inspect
from typing import Any, Callable

from .errors import ConfigError
from .extract import LLMExtractor
from .reconcile import BUILT_IN, Policy
from .rules import RuleExtractor
from .summarize import ExtractiveSummarizer, LLMSummarizer

KINDS = ("policy", "extractor", "summarizer", "strategy")
TWO_LAYER = "two-layer:"  # a strategy name of this prefix is two-layer memory under the policy it names
_REGISTRY: dict[str, dict[str, Callable[..., Any]]] = {kind: {} for kind in KINDS}


def register(kind: str, name: str, factory: Callable[..., Any]) -> None:
    """Make ``factory`` buildable as ``build(kind, name, **options)``; a policy registered so is also
    ``Memory(policy=name)`` and the strategy ``two-layer:<name>``."""
    if kind not in _REGISTRY:
        raise ConfigError(f"unknown component kind {kind!r}; choose one of {KINDS}")
    _REGISTRY[kind][name] = factory


def names(kind: str) -> list[str]:
    """The registered names of one kind (strategies: one ``two-layer:<policy>`` per registered policy too)."""
    if kind not in _REGISTRY:
        raise ConfigError(f"unknown component kind {kind!r}; choose one of {KINDS}")
    found = list(_REGISTRY[kind])
    if kind == "strategy":
        found += [TWO_LAYER + p for p in _REGISTRY["policy"]]
    return found


def build(kind: str, name: str, **options: Any) -> Any:
    """A component of ``kind`` named ``name`` with typed ``options``."""
    if kind not in _REGISTRY:
        raise ConfigError(f"unknown component kind {kind!r}; choose one of {KINDS}")
    factory = _REGISTRY[kind].get(name)
    if factory is None and kind == "strategy" and name.startswith(TWO_LAYER) and name[len(TWO_LAYER):] in _REGISTRY["policy"]:
        factory = _two_layer(name[len(TWO_LAYER):])
    if factory is None:
        raise ConfigError(f"unknown {kind} {name!r}; choose one of {names(kind)}")
    params = inspect.signature(factory).parameters
    if not any(p.kind is p.VAR_KEYWORD for p in params.values()):
        wrong = set(options) - set(params)
        if wrong:
            raise ConfigError(f"{kind} {name!r} takes {sorted(params) or 'no options'}, not {sorted(wrong)}")
    return factory(**options)


def as_policy(policy: "str | Policy", **options: Any) -> Policy:
    """A policy object: one given as is, or one built by its registered name with typed options."""
    if not isinstance(policy, str):
        if options:
            raise ConfigError("options go with a policy name, not with a policy object")
        return policy
    return build("policy", policy, **options)


def _strategy(name: str) -> Callable[..., Any]:
    def factory(user_id: str, budget: int = 1200, **options: Any) -> Any:
        from .strategies import make

        return make(name, user_id, budget, **options)

    return factory


def _two_layer(policy: str) -> Callable[..., Any]:
    def factory(user_id: str, budget: int = 1200, store: Any = None, k: int = 5, **memory_options: Any) -> Any:
        from .store import FactStore
        from .strategies import TwoLayer

        return TwoLayer(user_id, store or FactStore.ephemeral(), policy, k, **memory_options)

    return factory


for _policy in BUILT_IN:
    register("policy", _policy.name, _policy)
register("extractor", "rules", RuleExtractor)
register("extractor", "llm", LLMExtractor)
register("summarizer", "extractive", ExtractiveSummarizer)
register("summarizer", "llm", LLMSummarizer)
for _name in ("full", "window", "summary", "rag:bm25", "rag:dense", "rag:hybrid"):
    register("strategy", _name, _strategy(_name))
