"""Benchmark conversations: their types, the memkit JSONL format (docs/architecture.md §5) and the built-in suites.

The converters from public datasets (LoCoMo, LongMemEval, REALTALK, BEAM) are in ``datasets.py``."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, Sequence

from ..errors import DatasetError
from ..validate import epoch



@dataclass(frozen=True)
class DTurn:
    id: str
    role: str
    content: str
    speaker: str | None = None


@dataclass(frozen=True)
class DSession:
    id: str
    time: str | None
    turns: tuple[DTurn, ...]


@dataclass(frozen=True)
class Probe:
    id: str
    after_session: str
    question: str
    answer: str
    evidence: tuple[str, ...]
    type: str
    old_answer: str | None = None
    time: float | None = None  # when the question is asked (seconds since the epoch), if the data says
    sessions: tuple[str, ...] = ()  # the sessions that hold the answer (LongMemEval's answer_session_ids)
    superseded: tuple[str, ...] = ()  # evidence turns that said the value the others replaced (BEAM's original_info)


@dataclass(frozen=True)
class Conversation:
    id: str
    user_id: str
    sessions: tuple[DSession, ...]
    ops: tuple[dict[str, Any], ...] = ()
    probes: tuple[Probe, ...] = ()
    notes: dict[str, Any] = field(default_factory=dict)

    def turn(self, turn_id: str) -> DTurn | None:
        for s in self.sessions:
            for t in s.turns:
                if t.id == turn_id:
                    return t
        return None


def _path(path: str | Path) -> Path:
    p = Path(path)
    if not p.is_file():
        raise DatasetError(f"no such file: {p}; the built-in suites are {', '.join(SUITES)}: write one with "
                           f"`memkit generate --suite {'|'.join(SUITES)} --out FILE` (in a clone: data/*.jsonl)")
    return p


def text_of(path: str | Path) -> str:
    """A benchmark file's text; ``DatasetError`` naming it when it is missing or not UTF-8 text (a binary file)."""
    p = _path(path)
    try:
        return p.read_text("utf-8")
    except UnicodeDecodeError as e:
        raise DatasetError(f"{p} is not UTF-8 text (byte {e.start}: a binary or compressed file?)") from None


def _evidence(p: dict[str, Any]) -> tuple[str, ...]:
    """A probe's evidence: a list of turn ids; anything else (a string, a number, a nested list) is named, never
    read as a string's characters or as no evidence (which would score 0.000 with exit 0)."""
    evidence = p.get("evidence", [])
    if not isinstance(evidence, list) or not all(isinstance(e, str) for e in evidence):
        raise DatasetError(f"probe {p.get('id')!r}: evidence must be a list of turn ids (strings), got {evidence!r}")
    return tuple(evidence)


def conversation(d: dict[str, Any]) -> Conversation:
    """One memkit JSONL record (docs/architecture.md §5) as a ``Conversation``."""
    sessions = in_time_order([DSession(s["id"], s.get("time"), tuple(
        DTurn(t["id"], t["role"], t["content"], t.get("speaker")) for t in s["turns"])) for s in d["sessions"]])
    session_time = {s.id: timestamp(s.time) for s in sessions}
    # a probe without its own time is asked at the time of the session it follows
    probes = tuple(Probe(p["id"], p["after_session"], p["question"], str(p["answer"]),
                         _evidence(p), p.get("type", "unknown"), p.get("old_answer"),
                         timestamp(p.get("time")) or session_time.get(p["after_session"]))
                   for p in d.get("probes", ()))
    return Conversation(d["id"], d["user_id"], sessions, tuple(d.get("ops", ())), probes)


def load_memkit(path: str | Path) -> list[Conversation]:
    """One conversation per line (docs/architecture.md §5)."""
    out = []
    for n, line in enumerate(text_of(path).splitlines(), 1):
        if not line.strip():
            continue
        try:
            out.append(conversation(json.loads(line)))
        except DatasetError as e:
            raise DatasetError(f"{path}:{n}: {e}") from None
        except (json.JSONDecodeError, KeyError, TypeError, AttributeError) as e:
            raise DatasetError(f"{path}:{n} is not a memkit conversation ({type(e).__name__}: {e}); "
                               "is it another dataset? pass --format (memkit.eval.datasets.FORMATS)") from None
    return out


SUITES = ("first", "chats", "assistant")


def generate(suite: str = "first", seed: int | None = None, conversations: int | None = None) -> list[dict[str, Any]]:
    """A built-in suite as memkit JSONL records: ``first`` (persona facts among small talk; seed 7 and 60
    conversations are data/suite.jsonl), ``chats`` (two named friends; seed 0 and 10 are data/chats.jsonl) or
    ``assistant`` (a user and an assistant's long answers; seed 0 and 10 are data/assistant.jsonl)."""
    from .assistant import generate_assistant
    from .chats import generate_chats
    from .persona import generate_first

    if suite == "first":
        return generate_first(7 if seed is None else seed, 60 if conversations is None else conversations)
    if suite == "chats":
        return generate_chats(0 if seed is None else seed, 10 if conversations is None else conversations)
    if suite == "assistant":
        return generate_assistant(0 if seed is None else seed, 10 if conversations is None else conversations)
    raise DatasetError(f"unknown suite {suite!r}; choose from {SUITES}")


def builtin_suite(suite: str = "first", seed: int | None = None, conversations: int | None = None) -> list[Conversation]:
    """A built-in suite, generated in memory (no file, no repo path): what the notebooks use."""
    return [conversation(d) for d in generate(suite, seed, conversations)]


def write_suite(path: str | Path, suite: str = "first", seed: int | None = None,
                conversations: int | None = None) -> Path:
    """Write a built-in suite as memkit JSONL; the same seed writes the same bytes."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    records = generate(suite, seed, conversations)
    path.write_text("".join(json.dumps(c, ensure_ascii=False) + "\n" for c in records), "utf-8")
    return path


def in_time_order(sessions: Sequence[DSession]) -> tuple[DSession, ...]:
    """Sessions by their time, as they are replayed (undated ones last, in the order given)."""
    return tuple(sorted(sessions, key=lambda s: (timestamp(s.time) is None, timestamp(s.time) or 0.0)))


def timestamp(value: str | None) -> float | None:
    """Seconds since the epoch for ISO times, LoCoMo's ``"1:56 pm on 8 May, 2023"``, LongMemEval's
    ``"2023/05/20 (Sat) 02:21"``, REALTALK's ``"29.12.2023, 22:42:04"`` and BEAM's ``"March-15-2024"``;
    None if unparsable."""
    if not value:
        return None
    for fmt in (None, "%I:%M %p on %d %B, %Y", "%Y/%m/%d (%a) %H:%M", "%d.%m.%Y, %H:%M:%S", "%B-%d-%Y"):
        try:
            return epoch(datetime.fromisoformat(value) if fmt is None else datetime.strptime(value, fmt))
        except ValueError:
            continue
    return None


def feed(memory: Any, conv: Conversation) -> int:
    """Observe every turn of ``conv`` in order (each with its speaker and session time) and end each session,
    as an agent would have lived it; returns the number of turns."""
    n = 0
    for session in conv.sessions:
        t0 = timestamp(session.time)
        for i, turn in enumerate(session.turns):
            memory.observe(conv.user_id, session.id, turn.role, turn.content, turn.id,
                           None if t0 is None else t0 + i, turn.speaker)
            n += 1
        memory.end_session(conv.user_id, session.id)
    return n
