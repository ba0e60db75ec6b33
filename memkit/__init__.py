"""memkit: two-layer memory for agents (episodic window + summary, semantic facts and episodes in Chroma),
offline by default. See docs/architecture.md."""

from typing import TYPE_CHECKING

from .lazy import exports

_EXPORTS = {  # name -> the module that defines it, imported on first use (PEP 562): `import memkit` and the
    # command line start at once, and `import chromadb` (seconds) waits for what needs it
    **dict.fromkeys(('Settings',), "config"),
    **dict.fromkeys(('EpisodicBuffer', 'SessionStore'), "episodic"),
    **dict.fromkeys(('CachedEmbedder', 'EmbeddingCache'), "embed_cache"),
    **dict.fromkeys(('CacheUnavailable', 'ConfigError', 'DatasetError', 'DimensionMismatch', 'EmbedderMismatch', 'ExtractionError', 'InvalidArgument', 'InvalidContent', 'IsolationError', 'MemkitError', 'MissingSessionId', 'MissingUserId', 'ModelUnavailable', 'StoreClosed', 'StoreLocked', 'StorePathError', 'StoreUnavailable'), "errors"),
    **dict.fromkeys(('EXTRACTION_PROMPT', 'Extractor', 'LLMExtractor'), "extract"),
    **dict.fromkeys(('FactStore',), "store"),
    **dict.fromkeys(('ChatModel', 'OpenAIChat', 'parse_json'), "llm"),
    **dict.fromkeys(('Memory',), "memory"),
    **dict.fromkeys(('ReadOptions',), "read"),
    **dict.fromkeys(('RecallOptions',), "recall"),
    **dict.fromkeys(('AppendPolicy', 'KeyedPolicy', 'LLMPolicy', 'POLICIES', 'Policy', 'SimilarityPolicy', 'TemporalPolicy'), "reconcile"),
    **dict.fromkeys(('as_policy',), "registry"),
    **dict.fromkeys(('RuleExtractor',), "rules"),
    **dict.fromkeys(('ExtractiveSummarizer', 'LLMSummarizer', 'Summarizer', 'Summary'), "summarize"),
    **dict.fromkeys(('Candidate', 'Context', 'Episode', 'Event', 'EventKind', 'Fact', 'Hit', 'Part', 'Recalled', 'Turn'), "types"),
}


__getattr__, __dir__ = exports(__name__, _EXPORTS)


if TYPE_CHECKING:  # what the names are, for type checkers and editors
    from .config import Settings
    from .episodic import EpisodicBuffer, SessionStore
    from .embed_cache import CachedEmbedder, EmbeddingCache
    from .errors import (CacheUnavailable, ConfigError, DatasetError, DimensionMismatch, EmbedderMismatch, ExtractionError, InvalidArgument,
                         InvalidContent,
                         IsolationError, MemkitError, MissingSessionId, MissingUserId, ModelUnavailable, StoreClosed,
                         StoreLocked, StorePathError, StoreUnavailable)
    from .extract import EXTRACTION_PROMPT, Extractor, LLMExtractor
    from .store import FactStore
    from .llm import ChatModel, OpenAIChat, parse_json
    from .memory import Memory
    from .read import ReadOptions
    from .recall import RecallOptions
    from .reconcile import POLICIES, AppendPolicy, KeyedPolicy, LLMPolicy, Policy, SimilarityPolicy, TemporalPolicy
    from .registry import as_policy
    from .rules import RuleExtractor
    from .summarize import ExtractiveSummarizer, LLMSummarizer, Summarizer, Summary
    from .types import Candidate, Context, Episode, Event, EventKind, Fact, Hit, Part, Recalled, Turn

__version__ = "0.2.0"
__all__ = [
    "AppendPolicy", "CacheUnavailable", "CachedEmbedder", "Candidate", "ChatModel", "ConfigError", "Context", "DatasetError", "DimensionMismatch",
    "EXTRACTION_PROMPT", "EmbedderMismatch", "EmbeddingCache", "Episode", "EpisodicBuffer", "Event", "EventKind", "ExtractionError", "ExtractiveSummarizer",
    "Extractor", "Fact", "FactStore", "Hit", "InvalidArgument", "InvalidContent", "IsolationError", "KeyedPolicy",
    "LLMExtractor", "LLMPolicy", "LLMSummarizer", "MemkitError", "Memory", "MissingSessionId", "MissingUserId",
    "ModelUnavailable", "OpenAIChat", "POLICIES", "Part", "Policy", "ReadOptions", "RecallOptions", "Recalled", "RuleExtractor",
    "SessionStore", "Settings", "SimilarityPolicy", "StoreClosed", "StoreLocked", "StorePathError",
    "StoreUnavailable", "Summarizer", "Summary", "TemporalPolicy", "Turn", "as_policy", "parse_json", "__version__",
]
