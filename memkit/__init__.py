"""memkit: two-layer memory for agents (episodic window + summary, semantic facts in Chroma), offline by default."""

from .config import Settings
from .episodic import EpisodicBuffer, SessionStore
from .errors import (ConfigError, DatasetError, DimensionMismatch, ExtractionError, InvalidContent, IsolationError,
                     MemkitError, MissingSessionId, MissingUserId, StoreClosed, StoreUnavailable)
from .extract import EXTRACTION_PROMPT, Extractor, LLMExtractor
from .facts import FactStore
from .llm import ChatModel, OpenAIChat, parse_json
from .memory import Memory
from .reconcile import POLICIES
from .rules import RuleExtractor
from .summarize import ExtractiveSummarizer, LLMSummarizer, Summarizer, Summary
from .types import Candidate, Context, Event, EventKind, Fact, Hit, Part, Turn

__version__ = "0.1.0"
__all__ = [
    "Candidate", "ChatModel", "ConfigError", "Context", "DatasetError", "DimensionMismatch", "EXTRACTION_PROMPT",
    "EpisodicBuffer", "Event", "EventKind", "ExtractionError", "ExtractiveSummarizer", "Extractor", "Fact",
    "FactStore", "Hit", "InvalidContent", "IsolationError", "LLMExtractor", "LLMSummarizer", "MemkitError", "Memory",
    "MissingSessionId", "MissingUserId", "OpenAIChat", "POLICIES", "Part", "RuleExtractor", "SessionStore",
    "Settings", "StoreClosed", "StoreUnavailable", "Summarizer", "Summary", "Turn", "parse_json", "__version__",
]
