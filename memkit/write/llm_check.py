"""``memkit llm check``: what a configured chat endpoint can do for memkit, asked of it directly. Reachable,
structured output (a JSON schema), JSON mode, and one sample extraction against what it should find, each
timed; then which paths will work. The fake server of the tests and any real one answer the same requests."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, Callable

from ..errors import ExtractionError, ModelUnavailable
from .extract import FACTS_SCHEMA, LLMExtractor
from ..models.llm import LEVELS, OpenAIChat

# the sample turn and the values a usable extractor finds in it (the rule extractor finds both)
SAMPLE = "I prefer metric units, and I live in Oslo."
SAMPLE_VALUES = ("metric", "oslo")


@dataclass(frozen=True)
class Probe:
    """One question put to the endpoint: what, whether it worked, in how many seconds, and what was seen."""

    what: str
    ok: bool
    seconds: float
    said: str


def _timed(what: str, fn: Callable[[], str]) -> Probe:
    start = time.perf_counter()
    try:
        said, ok = fn(), True
    except (ModelUnavailable, ExtractionError) as e:
        said, ok = f"{type(e).__name__}: {e}", False
    return Probe(what, ok, time.perf_counter() - start, said)


def _at_level(chat: OpenAIChat, level: str) -> OpenAIChat:
    """A copy of ``chat`` that starts at output ``level`` (a refusal lowers the copy's, not ``chat``'s)."""
    import copy

    probe = copy.copy(chat)
    probe.level = level
    probe.breaker_after = 0  # every probe is asked, whatever the ones before met
    return probe


def check(chat: OpenAIChat) -> list[Probe]:
    """Ask the endpoint behind ``chat`` each probe, in order; a probe that fails does not stop the others."""

    def structured(level: str, json_mode: Any) -> Callable[[], str]:
        def ask() -> str:
            probe = _at_level(chat, level)
            reply = probe.complete([{"role": "user", "content": 'Answer with the JSON object {"facts": []}.'}],
                                   json_mode=json_mode)
            if probe.level != level:
                raise ModelUnavailable(f"the endpoint refused it (memkit would fall back to {probe.level})")
            return reply

        return ask

    def extraction() -> str:
        found = LLMExtractor(_at_level(chat, LEVELS[0])).extract(SAMPLE)
        text = " ".join(f"{c.text} {c.value or ''}" for c in found).lower()
        hit = [v for v in SAMPLE_VALUES if v in text]
        if len(hit) < len(SAMPLE_VALUES):
            raise ExtractionError(f"found {len(hit)} of {len(SAMPLE_VALUES)} facts of the sample ({', '.join(hit) or 'none'})",
                                  text)
        return f"{len(found)} facts, both of the sample's ({', '.join(hit)})"

    return [_timed("reachable (plain text)", lambda: _at_level(chat, "text").complete(
                [{"role": "user", "content": "Reply with the word ok."}])),
            _timed("structured output (json_schema)", structured("schema", FACTS_SCHEMA)),
            _timed("the schema in JSON mode (json_object + schema, llama.cpp's form)",
                   structured("json+schema", FACTS_SCHEMA)),
            _timed("JSON mode (json_object)", structured("json", True)),
            _timed(f"sample extraction: {SAMPLE!r}", extraction)]


def verdict(probes: list[Probe]) -> str:
    """What will work, and what to set, from the probes."""
    reach, schema, in_json_mode, json_mode, sample = (p.ok for p in probes)
    if not reach:
        return "; ".join(["the endpoint does not answer usefully: check MEMKIT_LLM_BASE_URL and MEMKIT_LLM_MODEL (and "
                          "the server); offline memkit needs none of them", *settings(probes)])
    slow = max(p.seconds for p in probes)
    asks = "structured output" if schema else "the schema in JSON mode" if in_json_mode else \
        "JSON mode" if json_mode else "plain text"
    lines = [f"extraction will ask for {asks}"]
    if not sample:
        lines.append("this model did not extract the sample's two facts: keep the rule extractor "
                     "(Memory() without an extractor) and use the model for summaries or answers only")
    else:
        lines.append("the model can extract facts: Memory.from_settings() uses it for extraction and summaries")
    if slow > 10:
        lines.append(f"its slowest probe took {slow:.0f} s: raise MEMKIT_LLM_TIMEOUT above that")
    return "; ".join(lines + settings(probes))


def settings(probes: list[Probe]) -> list[str]:
    """The setting that would make a failing probe work, named from what it met: a stream the endpoint does not
    send whole (MEMKIT_LLM_STREAM=0), a reply that took longer than allowed (MEMKIT_LLM_TIMEOUT), a reply cut at
    its token limit (MEMKIT_LLM_MAX_TOKENS)."""
    said = " ".join(p.said for p in probes if not p.ok).lower()
    hints = []
    if "stream" in said:
        hints.append("its streamed replies failed: set MEMKIT_LLM_STREAM=0 to ask without streaming")
    if any(w in said for w in ("timed out", "timeout", "still coming", "stalled")):
        hints.append("a probe timed out (not a refusal): raise MEMKIT_LLM_TIMEOUT")
    if "truncated" in said or "cut short" in said:
        hints.append("a reply was cut at its token limit: raise MEMKIT_LLM_MAX_TOKENS")
    return hints


def report(probes: list[Probe], where: str) -> str:
    rows = [f"{'ok' if p.ok else 'NO':>3}  {p.seconds:6.2f} s  {p.what}" + ("" if p.ok else f"\n{'':15}{p.said[:200]}")
            for p in probes]
    return "\n".join([f"endpoint: {where}", *rows, "", f"verdict: {verdict(probes)}"])
