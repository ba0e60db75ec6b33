"""The extractor seam: turn text -> candidate facts; an LLM extractor whose replies are validated, never trusted."""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

from .errors import ExtractionError
from .llm import ChatModel, parse_json
from .rules import RuleExtractor
from .types import Candidate

EXTRACTION_PROMPT = """You extract durable facts about the user from one message they wrote.
Durable means still true next week: identity, role, preferences and dislikes, tools and stack,
constraints, relationships, long-term plans. Ignore greetings, small talk, questions, the weather,
and anything only about today. Never invent a fact that the message does not state.
Write each fact in the third person ("User prefers metric units."). Give each a stable `key`
naming its slot, like user.name, user.units, user.language, user.uses.docker, user.family.sister,
so that a later change of mind can replace it; set `value` to the slot's value.
Answer with JSON only: {"facts": [{"text": str, "kind": "semantic"|"episodic"|"procedural",
"key": str|null, "value": str|null, "importance": number between 0 and 1}]}. If there is nothing
durable, answer {"facts": []}."""

KINDS = {"semantic", "episodic", "procedural"}


@runtime_checkable
class Extractor(Protocol):
    """Anything that turns a user's message into candidate facts."""

    def extract(self, text: str, source: tuple[str, ...] = ()) -> list[Candidate]: ...


def candidates_from_json(data: Any, received: str, source: tuple[str, ...] = ()) -> list[Candidate]:
    """Validate a ``{"facts": [...]}`` reply; ``ExtractionError`` names what was wrong."""
    facts = data.get("facts") if isinstance(data, dict) else data if isinstance(data, list) else None
    if not isinstance(facts, list):
        raise ExtractionError('expected {"facts": [...]}', received)
    out = []
    for i, f in enumerate(facts):
        if not isinstance(f, dict) or not isinstance(f.get("text"), str) or not f["text"].strip():
            raise ExtractionError(f"fact {i} has no text", received)
        kind = f.get("kind") or "semantic"
        if kind not in KINDS:
            raise ExtractionError(f"fact {i} has unknown kind {kind!r}", received)
        try:
            importance = min(max(float(f.get("importance", 0.5)), 0.0), 1.0)
        except (TypeError, ValueError):
            raise ExtractionError(f"fact {i} has a non-numeric importance", received) from None
        key = f.get("key") or None
        value = f.get("value")
        out.append(Candidate(text=f["text"].strip(), kind=kind, key=str(key) if key else None,
                             value=None if value is None else str(value), importance=importance,
                             source=tuple(source)))
    return out


class LLMExtractor:
    """Extraction by a chat model with ``EXTRACTION_PROMPT``; malformed replies raise ``ExtractionError``."""

    def __init__(self, model: ChatModel, prompt: str = EXTRACTION_PROMPT) -> None:
        self.model = model
        self.prompt = prompt

    def extract(self, text: str, source: tuple[str, ...] = ()) -> list[Candidate]:
        reply = self.model.complete(
            [{"role": "system", "content": self.prompt}, {"role": "user", "content": text}], json_mode=True
        )
        return candidates_from_json(parse_json(reply), reply, source)


__all__ = ["EXTRACTION_PROMPT", "Extractor", "LLMExtractor", "RuleExtractor", "candidates_from_json"]
