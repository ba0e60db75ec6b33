"""Settings read from the environment, in one place: offline by default, or any OpenAI-compatible endpoint.

Every module that needs the environment asks here (``offline_embedder``, ``cache_dir``, ``api_key``,
``environment``, ``environ_set``), so this module sits below the models and the store (docs/architecture.md §7)
and builds what the settings name through the registry (``registry.build`` / ``registry.shared``), never by
importing the rooms above it.
"""

from __future__ import annotations

import os
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator, Mapping

from . import registry
from .errors import ConfigError
from .registry import DEFAULT_EMBEDDER

DEFAULT_MAX_TOKENS = 256  # the longest reply a chat request allows unless MEMKIT_LLM_MAX_TOKENS says otherwise
# The most vectors the embedding cache keeps unless MEMKIT_EMBED_CACHE_ITEMS says otherwise: about 0.8 GB of
# 384-d vectors. BEAM 500K alone needs 331,538, with BEAM 100K and REALTALK about 420,000 (docs/decisions.md).
CACHE_ITEMS = 500_000


def offline_embedder(env: Mapping[str, str] | None = None) -> str:
    """The offline embedder's registered name: ``MEMKIT_EMBEDDER``, else the default (``minilm``). What
    ``Memory()``, every ``FactStore`` constructor and ``memkit bench --embedder`` use unless given one."""
    return (os.environ if env is None else env).get("MEMKIT_EMBEDDER") or DEFAULT_EMBEDDER


def cache_dir(env: Mapping[str, str] | None = None) -> Path:
    """memkit's cache folder: ``$MEMKIT_CACHE_DIR``, else ``$XDG_CACHE_HOME/memkit`` (``~/.cache/memkit``)."""
    env = os.environ if env is None else env
    return Path(env.get("MEMKIT_CACHE_DIR") or Path(env.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "memkit")


def cache_items(env: Mapping[str, str] | None = None) -> int:
    """The most vectors the embedding cache keeps: ``$MEMKIT_EMBED_CACHE_ITEMS``, else ``CACHE_ITEMS``."""
    env = os.environ if env is None else env
    n = int(_number(env, "MEMKIT_EMBED_CACHE_ITEMS", CACHE_ITEMS, int))
    if n < 1:
        raise ConfigError(f"MEMKIT_EMBED_CACHE_ITEMS={env['MEMKIT_EMBED_CACHE_ITEMS']!r}: the cache keeps 1 vector or more")
    return n


def api_key(*names: str) -> str | None:
    """The first of the environment variables ``names`` that is set (a key is read when used, never stored)."""
    return next((os.environ[n] for n in names if os.environ.get(n)), None)


def store_url() -> str | None:
    """``MEMKIT_STORE``: the store a long-running command serves (``memkit mcp``), a URL or a folder."""
    return os.environ.get("MEMKIT_STORE") or None


def environment() -> dict[str, str]:
    """A copy of this process's environment (what a server memkit starts inherits)."""
    return dict(os.environ)


@contextmanager
def environ_set(name: str, value: str) -> Iterator[None]:
    """``name`` set to ``value`` while the block runs, then as it was (a library that reads only the environment:
    tiktoken's cache folder)."""
    previous = os.environ.get(name)
    os.environ[name] = value
    try:
        yield
    finally:
        if previous is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = previous


@dataclass(frozen=True)
class Endpoint:
    """An OpenAI-compatible endpoint: base URL, model, and the key (never stored in a config file)."""

    base_url: str | None
    model: str
    api_key: str
    api_key_env: str


@dataclass(frozen=True)
class Settings:
    """Where the chat model and the embedder come from; ``None`` means the offline backend."""

    llm: Endpoint | None = None
    embed: Endpoint | None = None
    embed_dimension: int | None = None
    timeout: float = 20.0      # MEMKIT_LLM_TIMEOUT, seconds per request
    max_retries: int = 1       # MEMKIT_LLM_MAX_RETRIES
    max_tokens: int = DEFAULT_MAX_TOKENS  # MEMKIT_LLM_MAX_TOKENS, the longest reply a request allows
    stream: bool = True        # MEMKIT_LLM_STREAM=0: whole replies, for a server that cannot stream
    embed_cache: str | None = None  # MEMKIT_EMBED_CACHE: an embedding-cache file (memkit/store/embed_cache.py); unset: none
    offline_embedder: str = DEFAULT_EMBEDDER  # MEMKIT_EMBEDDER: the offline embedder's registered name (minilm, e5)

    @property
    def offline(self) -> bool:
        return self.llm is None and self.embed is None

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> "Settings":
        """Read ``MEMKIT_LLM_*`` and ``MEMKIT_EMBED_*`` (falling back to ``OPENAI_BASE_URL``/``OPENAI_API_KEY``)."""
        env = os.environ if env is None else env
        dim = env.get("MEMKIT_EMBED_DIMENSION")
        return cls(
            llm=_endpoint(env, "LLM"),
            embed=_endpoint(env, "EMBED"),
            embed_dimension=int(dim) if dim else None,
            timeout=_number(env, "MEMKIT_LLM_TIMEOUT", 20.0, float),
            max_retries=int(_number(env, "MEMKIT_LLM_MAX_RETRIES", 1, int)),
            max_tokens=int(_number(env, "MEMKIT_LLM_MAX_TOKENS", DEFAULT_MAX_TOKENS, int)),
            stream=_flag(env, "MEMKIT_LLM_STREAM", True),
            embed_cache=env.get("MEMKIT_EMBED_CACHE") or None,
            offline_embedder=offline_embedder(env),
        )

    def chat_model(self) -> Any:
        """An ``OpenAIChat`` for the configured endpoint, or None when offline."""
        if self.llm is None:
            return None
        return registry.build("chat", "openai", model=self.llm.model, base_url=self.llm.base_url,
                              api_key=self.llm.api_key, timeout=self.timeout, max_retries=self.max_retries,
                              max_tokens=self.max_tokens, stream=self.stream)

    def required_chat_model(self, what: str) -> Any:
        """``chat_model()``, which ``what`` needs: ``ConfigError`` when no endpoint is configured."""
        model = self.chat_model()
        if model is None:
            raise ConfigError(f"{what} {'needs' if what == '--judge' else 'need'} a chat model: set "
                              "MEMKIT_LLM_BASE_URL and MEMKIT_LLM_MODEL")
        return model

    def components(self, strategies: list[str], extractor: str = "rules",
                   summarizer: str = "extractive") -> dict[str, Any]:
        """The memory options of a bench run for ``extractor`` and ``summarizer`` by name (none for the rules
        and the extractive summarizer), and the chat model when they or a strategy need it."""
        options: dict[str, Any] = {}
        # what runs on the configured model: the llm policy, and the extractor and summarizer when named so
        on_model = [s for s in strategies if registry.needs_model("strategy", s)] + \
            [f"--{kind} {name}" for kind, name in (("extractor", extractor), ("summarizer", summarizer))
             if registry.needs_model(kind, name)]
        model = None
        if on_model:
            model = options["chat_model"] = self.required_chat_model(" and ".join(on_model))
        if extractor != "rules" or summarizer != "extractive":
            # one registry builds both: a name another package registered works too
            for kind, name in (("extractor", extractor), ("summarizer", summarizer)):
                options[kind] = registry.build(kind, name, **({"model": model} if registry.needs_model(kind, name)
                                                              else {}))
        return options

    def embedder(self) -> Any:
        """The configured embedder: an OpenAI-compatible one, or the process's one offline embedder
        (``registry.shared``, MiniLM unless ``MEMKIT_EMBEDDER`` names another); behind the embedding
        cache when ``MEMKIT_EMBED_CACHE`` names a file."""
        if self.embed is None:
            embedder: Any = registry.shared("embedder", self.offline_embedder)
        else:
            embedder = registry.build("api-embedder", "openai", model=self.embed.model, base_url=self.embed.base_url,
                                      api_key_env=self.embed.api_key_env, dimension=self.embed_dimension,
                                      api_key=self.embed.api_key)
        if self.embed_cache:
            return registry.build("cache", "sqlite", embedder=embedder, path=self.embed_cache)
        return embedder


def _number(env: Mapping[str, str], name: str, default: float, kind: type) -> float:
    raw = env.get(name)
    if raw is None or raw == "":
        return default
    try:
        value = kind(raw)
    except ValueError:
        raise ConfigError(f"{name}={raw!r} is not a {kind.__name__}; set a number such as {default}") from None
    if value < 0:
        raise ConfigError(f"{name}={raw!r} must not be negative")
    return value


def _flag(env: Mapping[str, str], name: str, default: bool) -> bool:
    raw = (env.get(name) or "").strip().lower()
    if not raw:
        return default
    if raw in ("1", "true", "yes", "on"):
        return True
    if raw in ("0", "false", "no", "off"):
        return False
    raise ConfigError(f"{name}={env[name]!r} is not a switch; set 1 or 0")


def _endpoint(env: Mapping[str, str], part: str) -> Endpoint | None:
    model = env.get(f"MEMKIT_{part}_MODEL")
    base_url = env.get(f"MEMKIT_{part}_BASE_URL") or env.get("OPENAI_BASE_URL")
    key_env = f"MEMKIT_{part}_API_KEY" if env.get(f"MEMKIT_{part}_API_KEY") else "OPENAI_API_KEY"
    key = env.get(key_env)
    if not model:
        if env.get(f"MEMKIT_{part}_BASE_URL"):
            raise ConfigError(f"MEMKIT_{part}_BASE_URL is set but MEMKIT_{part}_MODEL is not: set the model name")
        return None
    if not base_url and not key:
        raise ConfigError(
            f"MEMKIT_{part}_MODEL={model!r} needs MEMKIT_{part}_BASE_URL (or OPENAI_BASE_URL) "
            f"or MEMKIT_{part}_API_KEY (or OPENAI_API_KEY)"
        )
    # Local servers (Ollama, llama.cpp, vLLM) accept any key; the openai client insists on one.
    return Endpoint(base_url=base_url, model=model, api_key=key or "not-needed", api_key_env=key_env)
