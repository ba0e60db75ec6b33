"""The extractor seam: turn text -> candidate facts; an LLM extractor whose replies are validated, never trusted."""

from __future__ import annotations

import json
import re
from typing import Any, Protocol, runtime_checkable

from .. import registry
from ..errors import ExtractionError
from ..models.llm import ChatModel, parse_json
from .rules import RuleExtractor
from .support import unsupported
from ..types import Candidate

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

# After a reply that could not be read: the model sees its reply, then this (``LLMExtractor.retries``)
FAILED_KEPT = 256  # texts whose last unusable reply an extractor keeps, to ask again from it (LLMExtractor.extract)
REPLY_SHOWN = 600  # characters of an unusable reply shown back to the model when it is asked again
RETRY_PROMPT = """That reply could not be used: {error}. Answer again with JSON only, exactly in the shape
{{"facts": [...]}} described above, with the facts the message states."""

KINDS = {"semantic", "episodic", "procedural"}
# The reply's shape, sent as structured output where the server takes it (llm.OpenAIChat); validated anyway
FACTS_SCHEMA = {"type": "object", "required": ["facts"], "additionalProperties": False, "properties": {"facts": {
    "type": "array", "maxItems": 8, "items": {
        "type": "object", "required": ["text", "kind", "key", "value", "importance"], "additionalProperties": False,
        "properties": {"text": {"type": "string", "minLength": 1, "maxLength": 300},
                       "kind": {"type": "string", "enum": sorted(KINDS)},
                       "key": {"type": ["string", "null"], "pattern": r"^[a-z0-9_]+(\.[a-z0-9_]+)+$"},
                       "value": {"type": ["string", "null"], "maxLength": 200},
                       "importance": {"type": "number", "minimum": 0, "maximum": 1}}}}}}


class Candidates(list):
    """An extractor's candidates (a list of ``Candidate``), with ``refused``: what it left out of a partly good
    reply and why (``fact 2 has no text``, ``'User lives in Oslo.' names 'Oslo', which the turn does not say``),
    so the turn's events can name it."""

    def __init__(self, items: Any = (), refused: Any = ()) -> None:
        super().__init__(items)
        self.refused: tuple[str, ...] = tuple(refused)


@runtime_checkable
class Extractor(Protocol):
    """Anything that turns a user's message into candidate facts: a list of ``Candidate``, or ``Candidates``
    to name what it left out of its model's reply (``refused_of``)."""

    def extract(self, text: str, source: tuple[str, ...] = ()) -> list[Candidate]: ...


def refused_of(cands: list[Candidate]) -> tuple[str, ...]:
    """What an extractor left out of its reply and why: ``Candidates.refused``, nothing for a plain list."""
    return cands.refused if isinstance(cands, Candidates) else ()


def candidates_from_json(data: Any, received: str, source: tuple[str, ...] = ()) -> Candidates:
    """Validate a ``{"facts": [...]}`` reply item by item and keep the good items, naming the bad ones in
    ``refused``; ``ExtractionError`` names what was wrong when the reply has no list of facts, or when every
    item of it is bad (one bad item of a reply does not discard the others)."""
    facts = data.get("facts") if isinstance(data, dict) else data if isinstance(data, list) else None
    if not isinstance(facts, list):
        facts = _complete_items(received)  # a reply cut at its max_tokens: the facts before the cut
    if facts is None:
        raise ExtractionError('expected {"facts": [...]}', received)
    out, wrong, seen = [], [], set()
    for i, f in enumerate(facts):
        try:
            c = _candidate(i, f, source, wrong)
        except ValueError as e:
            wrong.append(str(e))
            continue
        if c.text.casefold() not in seen:  # a reply that says one fact twice writes it once
            seen.add(c.text.casefold())
            out.append(c)
    if wrong and not out:  # (a dropped key keeps its fact: out is not empty then)
        raise ExtractionError("; ".join(wrong), received)
    return Candidates(out, wrong)


def _complete_items(received: str) -> list[Any] | None:
    """The complete items of the ``"facts"`` list of a reply cut short (it ran to its max_tokens), or None
    when the reply has no such list or no item of it is complete."""
    start = received.find('"facts"')
    at = received.find("[", start) + 1 if start >= 0 else 0
    if not at:
        return None
    decoder, items = json.JSONDecoder(strict=False), []
    while True:
        while at < len(received) and received[at] in " \t\r\n,":
            at += 1
        try:
            item, at = decoder.raw_decode(received, at)
        except json.JSONDecodeError:
            return items or None
        items.append(item)


KEY = re.compile(FACTS_SCHEMA["properties"]["facts"]["items"]["properties"]["key"]["pattern"])  # type: ignore[index]
KEY_CHARS = 100  # a slot name longer than this is not one


def _candidate(i: int, f: Any, source: tuple[str, ...], dropped: list[str] | None = None) -> Candidate:
    """One item of a reply as a candidate; ``ValueError`` says what is wrong with it. A key that is not a slot
    name (the schema's pattern, which some servers do not enforce: ``episodic``, ``User.Name``) is dropped and
    said in ``dropped``: under a junk key, unrelated facts would replace each other."""
    if not isinstance(f, dict) or not isinstance(f.get("text"), str) or not f["text"].strip():
        raise ValueError(f"fact {i} has no text")
    kind = f.get("kind") or "semantic"
    if kind not in KINDS:
        raise ValueError(f"fact {i} has unknown kind {kind!r}")
    try:
        importance = min(max(float(f.get("importance", 0.5)), 0.0), 1.0)
    except (TypeError, ValueError):
        raise ValueError(f"fact {i} has a non-numeric importance") from None
    key, value = f.get("key") or None, f.get("value")
    if key is not None and (not isinstance(key, str) or len(key) > KEY_CHARS or not KEY.fullmatch(key)):
        if dropped is not None:
            dropped.append(f"fact {i}'s key {str(key)[:40]!r} is not a slot name like user.city: kept without it")
        key = None
    return Candidate(text=f["text"].strip(), kind=kind, key=str(key) if key else None,
                     value=None if value is None else str(value), importance=importance, source=tuple(source))


class LLMExtractor:
    """Extraction by a chat model with ``EXTRACTION_PROMPT``. A reply that cannot be read (no JSON, no list of
    facts, every item bad) is asked for again ``retries`` times, the model seeing its reply and what was wrong
    with it; then ``ExtractionError``."""

    needs_model = True  # built with the configured chat model (registry.needs_model)

    def __init__(self, model: ChatModel, prompt: str = EXTRACTION_PROMPT, retries: int = 1,
                 check_support: bool = True) -> None:
        self.model = model
        self.prompt = prompt
        self.retries = retries
        self.check_support = check_support  # refuse a fact the turn does not support (memkit/write/support.py)
        self._failed: dict[str, list[dict[str, str]]] = {}  # text -> its last unusable reply and why (``extract``)

    def extract(self, text: str, source: tuple[str, ...] = ()) -> Candidates:
        """The facts of ``text``. A text whose last extraction here ended unusable (``flush()`` tries it again)
        starts from that reply and what was wrong with it: a deterministic model asked the same request again
        would answer the same."""
        messages = [{"role": "system", "content": self.prompt}, {"role": "user", "content": text},
                    *self._failed.get(text, ())]
        for attempt in range(self.retries + 1):
            reply = self.model.complete(messages, json_mode=FACTS_SCHEMA)
            try:
                found = self._supported(candidates_from_json(parse_json(reply), reply, source), text, reply)
                self._failed.pop(text, None)
                return found
            except ExtractionError as e:
                # the reply cut short: a long one would double the next prompt (and its time) on a small server
                told = [{"role": "assistant", "content": reply[:REPLY_SHOWN]},
                        {"role": "user", "content": RETRY_PROMPT.format(error=str(e).split("; received:")[0])}]
                if attempt == self.retries:
                    if len(self._failed) >= FAILED_KEPT:
                        self._failed.clear()
                    self._failed[text] = told
                    raise
                messages = [*messages, *told]
        raise AssertionError("unreachable")  # the loop returns or raises

    def _supported(self, cands: Candidates, text: str, reply: str) -> Candidates:
        """The candidates ``text`` supports, the others named in ``refused``; ``ExtractionError`` naming why
        when it supports none of them."""
        if not self.check_support:
            return cands
        refused = {id(c): why for c in cands if (why := unsupported(c, text))}
        if cands and len(refused) == len(cands):
            raise ExtractionError("; ".join(f"{c.text!r} {refused[id(c)]}" for c in cands), reply)
        return Candidates([c for c in cands if id(c) not in refused],
                          [*cands.refused, *(f"{c.text!r} {refused[id(c)]}" for c in cands if id(c) in refused)])


registry.register("extractor", "llm", LLMExtractor)

__all__ = ["EXTRACTION_PROMPT", "RETRY_PROMPT", "Candidates", "Extractor", "LLMExtractor", "RuleExtractor", "candidates_from_json"]
