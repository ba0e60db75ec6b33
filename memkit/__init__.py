"""memkit: two-layer memory for agents (episodic window + summary, semantic facts and episodes in Chroma),
offline by default. See docs/architecture.md."""

from .config import Settings
from .episodic import EpisodicBuffer, SessionStore
from .embed_cache import CachedEmbedder, EmbeddingCache
from .errors import (CacheUnavailable, ConfigError, DatasetError, DimensionMismatch, ExtractionError, InvalidArgument, InvalidContent,
                     IsolationError, MemkitError, MissingSessionId, MissingUserId, ModelUnavailable, StoreClosed,
                     StoreLocked, StorePathError, StoreUnavailable)
from .extract import EXTRACTION_PROMPT, Extractor, LLMExtractor
from .store import FactStore
from .llm import ChatModel, OpenAIChat, parse_json
from .memory import Memory
from .recall import RecallOptions
from .reconcile import POLICIES, AppendPolicy, KeyedPolicy, LLMPolicy, Policy, SimilarityPolicy, TemporalPolicy
from .registry import as_policy
from .rules import RuleExtractor
from .summarize import ExtractiveSummarizer, LLMSummarizer, Summarizer, Summary
from .types import Candidate, Context, Episode, Event, EventKind, Fact, Hit, Part, Recalled, Turn

__version__ = "0.2.0"
__all__ = [
    "AppendPolicy", "CacheUnavailable", "CachedEmbedder", "Candidate", "ChatModel", "ConfigError", "Context", "DatasetError", "DimensionMismatch",
    "EXTRACTION_PROMPT", "EmbeddingCache", "Episode", "EpisodicBuffer", "Event", "EventKind", "ExtractionError", "ExtractiveSummarizer",
    "Extractor", "Fact", "FactStore", "Hit", "InvalidArgument", "InvalidContent", "IsolationError", "KeyedPolicy",
    "LLMExtractor", "LLMPolicy", "LLMSummarizer", "MemkitError", "Memory", "MissingSessionId", "MissingUserId",
    "ModelUnavailable", "OpenAIChat", "POLICIES", "Part", "Policy", "RecallOptions", "Recalled", "RuleExtractor",
    "SessionStore", "Settings", "SimilarityPolicy", "StoreClosed", "StoreLocked", "StorePathError",
    "StoreUnavailable", "Summarizer", "Summary", "TemporalPolicy", "Turn", "as_policy", "parse_json", "__version__",
]
