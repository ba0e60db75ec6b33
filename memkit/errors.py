"""Every error memkit raises, in one place, under one base class."""

from __future__ import annotations


class MemkitError(Exception):
    """Base class of every memkit error."""


class MissingUserId(MemkitError, ValueError):
    """A read or write was asked without a non-empty ``user_id``."""


class MissingSessionId(MemkitError, ValueError):
    """An episodic read or write was asked without a non-empty ``session_id``."""


class InvalidContent(MemkitError, ValueError):
    """A turn's content is empty, too large, or not text."""


class InvalidArgument(MemkitError, ValueError, TypeError):
    """A parameter (``k``, ``budget``, ``query``, ``time``, ``speaker`` ...) has the wrong type or value."""


class IsolationError(MemkitError, PermissionError):
    """A call tried to reach facts of a user other than the one it names."""


class DimensionMismatch(MemkitError):
    """The embedder's dimension differs from the one an existing collection was built with."""


class EmbedderMismatch(DimensionMismatch):
    """The embedder differs from the one an existing collection or index was built with (its model, or its
    window), whatever the dimension: their vectors cannot be compared."""


class StoreClosed(MemkitError, RuntimeError):
    """The fact store was closed; open a new one."""


class StoreLocked(MemkitError, RuntimeError):
    """An on-disk store is open in another process (use a `chroma run` server for several processes)."""


class StoreCorrupt(MemkitError, RuntimeError):
    """An on-disk store's parts disagree or one of them is damaged (records missing, emptied, truncated or not a
    database while vectors remain): never read as an empty store. The message names the path, what disagrees and
    what to do (``memkit store check PATH`` / ``memkit store repair PATH``); ``part`` is the damaged part
    (``"records"``, ``"vectors"``)."""

    def __init__(self, message: str, part: str = "records") -> None:
        super().__init__(message)
        self.part = part


class StoreFull(MemkitError, OSError):
    """The disk holding a store's file is full: the write was refused whole, and what was written before stays
    readable and consistent. Free space and write again."""


class StoreURLError(MemkitError, ValueError):
    """A store URL of no known kind (``FactStore.from_url``), or with an option its store does not take."""


class StorePathError(MemkitError, ValueError):
    """The path given for an on-disk store is a file or cannot be written."""


class StoreUnavailable(MemkitError, ConnectionError):
    """The store could not be reached. What waited to be written stays in the store's records for
    ``Memory.flush()``."""


class ModelUnavailable(MemkitError, ConnectionError):
    """The chat or embedding endpoint did not answer usefully: unreachable, timed out, 5xx, 429 after retries,
    an empty body, or a refused request. The work that needed it is kept for ``Memory.flush()``."""


class ExtractionError(MemkitError):
    """A model reply could not be turned into the expected JSON; ``received`` holds the reply."""

    def __init__(self, message: str, received: str = "") -> None:
        super().__init__(f"{message}; received: {received[:300]!r}")
        self.received = received


class ConfigError(MemkitError, ValueError):
    """The environment names an incomplete or contradictory configuration."""


class DatasetError(MemkitError, ValueError):
    """A benchmark file is missing or not in the format it was read as."""


class CacheUnavailable(MemkitError, RuntimeWarning):
    """The embedding cache could not be read or written; issued as a warning, and the call embeds without it."""


class CacheTooSmall(MemkitError, RuntimeWarning):
    """A run needs more vectors than the embedding cache keeps (``MEMKIT_EMBED_CACHE_ITEMS``); issued as a
    warning: the run's rows are the same, but it evicts vectors it embedded and embeds them again."""
