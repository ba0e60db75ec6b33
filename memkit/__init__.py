"""memkit: two-layer memory for agents (episodic window + summary, semantic facts and episodes in Chroma),
offline by default. See docs/architecture.md."""

from typing import TYPE_CHECKING

from .lazy import exports, moved

_EXPORTS = {  # name -> the module that defines it, imported on first use (PEP 562): `import memkit` and the
    # command line start at once, and `import chromadb` (seconds) waits for what needs it
    **dict.fromkeys(('Settings',), "config"),
    **dict.fromkeys(('EpisodicBuffer', 'SessionStore'), "write.episodic"),
    **dict.fromkeys(('CachedEmbedder', 'EmbeddingCache'), "store.embed_cache"),
    **dict.fromkeys(('CacheTooSmall', 'CacheUnavailable', 'ConfigError', 'DatasetError', 'DimensionMismatch', 'EmbedderMismatch', 'ExtractionError', 'InvalidArgument', 'InvalidContent', 'IsolationError', 'MemkitError', 'MissingSessionId', 'MissingUserId', 'ModelUnavailable', 'StoreClosed', 'StoreCorrupt', 'StoreFull', 'StoreLocked', 'StorePathError', 'StoreUnavailable'), "errors"),
    **dict.fromkeys(('EXTRACTION_PROMPT', 'Extractor', 'LLMExtractor'), "write.extract"),
    **dict.fromkeys(('FactStore',), "store"),
    **dict.fromkeys(('ChatModel', 'OpenAIChat', 'parse_json'), "models.llm"),
    **dict.fromkeys(('Embedder',), "models.embed"),
    **dict.fromkeys(('Memory',), "memory"),
    **dict.fromkeys(('AsyncMemory',), "aio"),
    **dict.fromkeys(('ReadOptions',), "read.pipeline"),
    **dict.fromkeys(('RecallOptions',), "read.recall"),
    **dict.fromkeys(('AppendPolicy', 'KeyedPolicy', 'LLMPolicy', 'POLICIES', 'Policy', 'SimilarityPolicy', 'TemporalPolicy'), "write.reconcile"),
    **dict.fromkeys(('as_policy',), "registry"),
    **dict.fromkeys(('RuleExtractor',), "write.rules"),
    **dict.fromkeys(('ExtractiveSummarizer', 'LLMSummarizer', 'Summarizer', 'Summary'), "write.summarize"),
    **dict.fromkeys(('Candidate', 'Context', 'Episode', 'Event', 'EventKind', 'Fact', 'Hit', 'Part', 'Recalled', 'Turn', 'Why'), "types"),
}


__getattr__, __dir__ = exports(__name__, _EXPORTS)

# The modules that moved into rooms (docs/architecture.md §7) answer at their old paths for one version: the top
# level's, and the room's for the four that changed rooms so that imports point one way
_ROOMS = {"read": ("assemble", "budget", "recall", "subject", "timeframe"),
          "write": ("episodic", "extract", "llm_check", "reconcile", "rules", "summarize", "support"),
          "models": ("embed", "llm", "server", "tokens"),
          "store": ("embed_cache", "lexicon", "log", "passages"),
          "eval": ("sweep",),
          "lab": ("demo", "notebooks_copy", "viz", "widgets")}
_CHANGED_ROOM = {"read.passages": "store.passages", "models.embed_cache": "store.embed_cache",
                 "models.llm_check": "write.llm_check", "lab.sweep": "eval.sweep", "store.episodes": "store.archive"}
moved({**{f"{__name__}.{m}": f"{__name__}.{room}.{m}" for room, ms in _ROOMS.items() for m in ms},
       **{f"{__name__}.{a}": f"{__name__}.{b}" for a, b in _CHANGED_ROOM.items()}})


if TYPE_CHECKING:  # what the names are, for type checkers and editors
    from .config import Settings
    from .write.episodic import EpisodicBuffer, SessionStore
    from .store.embed_cache import CachedEmbedder, EmbeddingCache
    from .errors import (CacheTooSmall, CacheUnavailable, ConfigError, DatasetError, DimensionMismatch, EmbedderMismatch, ExtractionError, InvalidArgument,
                         InvalidContent,
                         IsolationError, MemkitError, MissingSessionId, MissingUserId, ModelUnavailable, StoreClosed,
                         StoreCorrupt, StoreFull, StoreLocked, StorePathError, StoreUnavailable)
    from .write.extract import EXTRACTION_PROMPT, Extractor, LLMExtractor
    from .store import FactStore
    from .models.llm import ChatModel, OpenAIChat, parse_json
    from .models.embed import Embedder
    from .memory import Memory
    from .aio import AsyncMemory
    from .read.pipeline import ReadOptions
    from .read.recall import RecallOptions
    from .write.reconcile import POLICIES, AppendPolicy, KeyedPolicy, LLMPolicy, Policy, SimilarityPolicy, TemporalPolicy
    from .registry import as_policy
    from .write.rules import RuleExtractor
    from .write.summarize import ExtractiveSummarizer, LLMSummarizer, Summarizer, Summary
    from .types import Candidate, Context, Episode, Event, EventKind, Fact, Hit, Part, Recalled, Turn, Why

__version__ = "0.2.0"
__all__ = [
    "AppendPolicy", "AsyncMemory", "CacheTooSmall", "CacheUnavailable", "CachedEmbedder", "Candidate", "ChatModel", "ConfigError", "Context", "DatasetError", "DimensionMismatch",
    "EXTRACTION_PROMPT", "Embedder", "EmbedderMismatch", "EmbeddingCache", "Episode", "EpisodicBuffer", "Event", "EventKind", "ExtractionError", "ExtractiveSummarizer",
    "Extractor", "Fact", "FactStore", "Hit", "InvalidArgument", "InvalidContent", "IsolationError", "KeyedPolicy",
    "LLMExtractor", "LLMPolicy", "LLMSummarizer", "MemkitError", "Memory", "MissingSessionId", "MissingUserId",
    "ModelUnavailable", "OpenAIChat", "POLICIES", "Part", "Policy", "ReadOptions", "RecallOptions", "Recalled", "RuleExtractor",
    "SessionStore", "Settings", "SimilarityPolicy", "StoreClosed", "StoreCorrupt", "StoreFull", "StoreLocked", "StorePathError",
    "StoreUnavailable", "Summarizer", "Summary", "TemporalPolicy", "Turn", "Why", "as_policy", "parse_json", "__version__",
]
