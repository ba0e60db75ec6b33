"""Components by name: the one lookup that turns ``("policy", "similarity", threshold=0.9)`` into an object.

The registry is a leaf: it imports nothing of memkit but its errors. Built-in components register themselves
through the same ``register`` a user calls, when their modules load; the first lookup loads those modules
(``BUILT_IN``, imported by name, as simonw/llm loads its default plugins). So "by name" and "by object" are one
path: ``Memory(policy=name)``, the strategy ``two-layer:<name>``, the bench runner and the CLI all look names
up here. An unknown name lists the known ones; a misspelt option is a ``ConfigError``.

Each registered class says what it is: ``name``; ``needs_model`` (True: it is built with the configured chat
model, ``model=``); a strategy's ``budget_free`` and ``keeps_facts``. Embedders are looked up here by name
too (``minilm``, ``e5``), but not built per component: every store without one shares
``embed.shared_embedder(name)``.
"""

from __future__ import annotations

import importlib
import inspect
import threading
from typing import Any, Callable, Protocol

from .errors import ConfigError


class Named(Protocol):
    """What the registry needs of a component: its ``name`` (a policy's is what ``two-layer:<name>`` says). The
    registry is typed against this, not against the rooms above it (``write.reconcile.Policy`` satisfies it)."""

    name: str

# "chat", "api-embedder" and "cache" are how Settings (config.py, below the rooms that define them) builds the
# configured chat model, an OpenAI-compatible embedder and the embedding cache
KINDS = ("policy", "extractor", "summarizer", "strategy", "embedder", "chat", "api-embedder", "cache")
# the offline embedder every store, Memory and bench run uses unless told another (MEMKIT_EMBEDDER, --embedder):
# the one place its name is the default (docs/decisions.md, "The offline embedder")
DEFAULT_EMBEDDER = "minilm"
# A strategy name of this prefix is two-layer memory under the policy it names: the factory registered under
# the bare prefix, given ``policy=``
TWO_LAYER = "two-layer:"
# the modules whose components register themselves, loaded by name before the first lookup (as simonw/llm
# loads its default plugins); then every installed package's entry point in the group PLUGINS
PLUGINS = "memkit.plugins"
BUILT_IN = ("memkit.write.rules", "memkit.write.extract", "memkit.write.summarize", "memkit.write.reconcile",
            "memkit.strategies", "memkit.models.embed", "memkit.models.llm", "memkit.store.embed_cache")
_REGISTRY: dict[str, dict[str, Callable[..., Any]]] = {kind: {} for kind in KINDS}
_loaded = False


def _built_in() -> None:
    global _loaded
    if not _loaded:
        _loaded = True
        for module in BUILT_IN:
            importlib.import_module(module)
        _plugins()


def _plugins() -> None:
    """Load every installed plugin: each entry point of the group ``memkit.plugins`` names a module whose import
    registers its components (``register(kind, name, factory)``), or a function called once with no arguments
    (``[project.entry-points."memkit.plugins"] mine = "my_package.memkit_plugin"``; docs/extending.md)."""
    from importlib.metadata import entry_points

    for ep in sorted(entry_points(group=PLUGINS), key=lambda e: e.name):
        try:
            loaded = ep.load()
            if callable(loaded):
                loaded()
        except Exception as e:  # a plugin that cannot load is named, never a silent absence
            raise ConfigError(f"the memkit plugin {ep.name!r} ({ep.value}) failed to load: "
                              f"{type(e).__name__}: {e}") from e


def listing() -> dict[str, dict[str, str]]:
    """Every registered component: kind -> name -> the module that registered it (``memkit components``)."""
    _built_in()
    out = {kind: {name: getattr(made, "__module__", "?") for name, made in sorted(_REGISTRY[kind].items())
                  if name != TWO_LAYER} for kind in KINDS}
    out["strategy"].update({TWO_LAYER + p: out["policy"][p] for p in out["policy"]})
    return out


def _kind(kind: str) -> dict[str, Callable[..., Any]]:
    if kind not in _REGISTRY:
        raise ConfigError(f"unknown component kind {kind!r}; choose one of {KINDS}")
    _built_in()
    return _REGISTRY[kind]


def register(kind: str, name: str, factory: Callable[..., Any]) -> None:
    """Make ``factory`` buildable as ``build(kind, name, **options)``; a policy registered so is also
    ``Memory(policy=name)`` and the strategy ``two-layer:<name>``."""
    if kind not in _REGISTRY:
        raise ConfigError(f"unknown component kind {kind!r}; choose one of {KINDS}")
    _REGISTRY[kind][name] = factory


def names(kind: str) -> list[str]:
    """The registered names of one kind (strategies: one ``two-layer:<policy>`` per registered policy too)."""
    found = [n for n in _kind(kind) if n != TWO_LAYER]
    if kind == "strategy" and TWO_LAYER in _REGISTRY["strategy"]:
        found += [TWO_LAYER + p for p in _kind("policy")]
    return found


def factory(kind: str, name: str) -> Callable[..., Any]:
    """What ``name`` is registered as (a class, usually: its attributes say what it is)."""
    found = _kind(kind).get(name)
    if found is None and kind == "strategy" and name.startswith(TWO_LAYER) and name[len(TWO_LAYER):] in _kind("policy"):
        found = _REGISTRY["strategy"].get(TWO_LAYER)
    if found is None:
        raise ConfigError(f"unknown {kind} {name!r}; choose one of {names(kind)}")
    return found


def needs_model(kind: str, name: str) -> bool:
    """Whether ``name`` is built with a chat model (a ``two-layer:<policy>`` strategy: whether its policy is)."""
    if kind == "strategy" and name.startswith(TWO_LAYER) and name not in _kind(kind):
        return needs_model("policy", name[len(TWO_LAYER):])
    return bool(getattr(factory(kind, name), "needs_model", False))


def build(kind: str, name: str, **options: Any) -> Any:
    """A component of ``kind`` named ``name`` with typed ``options``."""
    make = factory(kind, name)
    if kind == "strategy" and name.startswith(TWO_LAYER) and name not in _REGISTRY[kind]:
        options = {**options, "policy": name[len(TWO_LAYER):]}
    params = inspect.signature(make).parameters
    if not any(p.kind is p.VAR_KEYWORD for p in params.values()):
        wrong = set(options) - set(params)
        if wrong:
            raise ConfigError(f"{kind} {name!r} takes {sorted(params) or 'no options'}, not {sorted(wrong)}")
    return make(**options)


def as_policy(policy: "str | Named", **options: Any) -> Any:
    """A policy object: one given as is, or one built by its registered name with typed options."""
    if not isinstance(policy, str):
        if options:
            raise ConfigError("options go with a policy name, not with a policy object")
        return policy
    return build("policy", policy, **options)


_SHARED: dict[tuple[str, str], Any] = {}
_SHARED_LOCK = threading.Lock()


def shared(kind: str, name: str) -> Any:
    """The process's one component of ``kind`` named ``name``, built on first use with no options (the offline
    embedders: every store built without one shares it, loaded once)."""
    with _SHARED_LOCK:
        if (kind, name) not in _SHARED:
            _SHARED[kind, name] = build(kind, name)
        return _SHARED[kind, name]
