"""Benchmark conversations: the memkit JSONL format (docs/architecture.md §5) and converters from LoCoMo and LongMemEval files."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, Sequence

from ..errors import DatasetError

FORMATS = ("memkit", "locomo", "longmemeval")
LOCOMO_CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop", 5: "adversarial"}


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
        raise DatasetError(f"no such file: {p}")
    return p


def conversation(d: dict[str, Any]) -> Conversation:
    """One memkit JSONL record (docs/architecture.md §5) as a ``Conversation``."""
    sessions = in_time_order([DSession(s["id"], s.get("time"), tuple(
        DTurn(t["id"], t["role"], t["content"], t.get("speaker")) for t in s["turns"])) for s in d["sessions"]])
    session_time = {s.id: timestamp(s.time) for s in sessions}
    # a probe without its own time is asked at the time of the session it follows
    probes = tuple(Probe(p["id"], p["after_session"], p["question"], str(p["answer"]),
                         tuple(p.get("evidence", ())), p.get("type", "unknown"), p.get("old_answer"),
                         timestamp(p.get("time")) or session_time.get(p["after_session"]))
                   for p in d.get("probes", ()))
    return Conversation(d["id"], d["user_id"], sessions, tuple(d.get("ops", ())), probes)


def load_memkit(path: str | Path) -> list[Conversation]:
    """One conversation per line (docs/architecture.md §5)."""
    out = []
    for n, line in enumerate(_path(path).read_text("utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            out.append(conversation(json.loads(line)))
        except (json.JSONDecodeError, KeyError, TypeError) as e:
            raise DatasetError(f"{path}:{n} is not a memkit conversation ({type(e).__name__}: {e}); "
                               "is it LoCoMo or LongMemEval? pass --format") from None
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


def _json_list(path: str | Path, what: str, needed: str) -> list[dict[str, Any]]:
    try:
        data = json.loads(_path(path).read_text("utf-8"))
    except json.JSONDecodeError as e:
        raise DatasetError(f"{path} is not JSON ({e}); a memkit JSONL file needs --format memkit") from None
    if not isinstance(data, list) or not data or not isinstance(data[0], dict) or needed not in data[0]:
        raise DatasetError(f"{path} is not a {what} file (expected a JSON list of objects with {needed!r})")
    return data


def load_locomo(path: str | Path) -> list[Conversation]:
    """``locomo10.json``: both speakers are people; a sample is one memory space (``user_id`` = ``sample_id``)."""
    out = []
    for sample in _json_list(path, "LoCoMo", "conversation"):
        conv = sample["conversation"]
        a = conv.get("speaker_a")
        sessions = []
        n = 1
        while f"session_{n}_date_time" in conv or f"session_{n}" in conv:
            turns = conv.get(f"session_{n}") or []
            if turns:
                sessions.append(DSession(f"session_{n}", conv.get(f"session_{n}_date_time"), tuple(
                    DTurn(t["dia_id"], "user" if t["speaker"] == a else "assistant",
                          t["text"] + (f" [image: {t['blip_caption']}]" if t.get("blip_caption") else ""), t["speaker"])
                    for t in turns)))
            n += 1
        probes, bad = [], 0
        for i, qa in enumerate(sample.get("qa", [])):
            evidence = []
            for ev in qa.get("evidence", []):
                found = re.findall(r"D\d+:\d+", str(ev))
                if not found:
                    bad += 1
                evidence += found
            answer = qa.get("answer", qa.get("adversarial_answer", ""))
            # asked after the last session, at its time
            probes.append(Probe(f"{sample['sample_id']}:q{i}", sessions[-1].id if sessions else "", qa["question"],
                                str(answer), tuple(evidence), LOCOMO_CATEGORIES.get(qa.get("category"), "unknown"),
                                time=timestamp(sessions[-1].time) if sessions else None))
        out.append(Conversation(sample["sample_id"], sample["sample_id"], in_time_order(sessions), (), tuple(probes),
                                {"malformed_evidence": bad, "speakers": [a, conv.get("speaker_b")]}))
    return out


def load_longmemeval(path: str | Path) -> list[Conversation]:
    """``longmemeval_*.json``: one question per item over its haystack sessions; ``_abs`` ids are abstention."""
    out = []
    for item in _json_list(path, "LongMemEval", "haystack_sessions"):
        qid = item["question_id"]
        sessions, evidence = [], []
        ids = item.get("haystack_session_ids") or [f"s{i}" for i in range(len(item["haystack_sessions"]))]
        dates = item.get("haystack_dates") or [None] * len(ids)
        for sid, date, turns in zip(ids, dates, item["haystack_sessions"]):
            dturns = []
            for j, t in enumerate(turns):
                tid = f"{sid}:{j}"
                dturns.append(DTurn(tid, t["role"], t["content"]))
                if t.get("has_answer"):
                    evidence.append(tid)
            sessions.append(DSession(str(sid), date, tuple(dturns)))
        sessions = list(in_time_order(sessions))  # the haystack is not always in date order
        qtype = "abstention" if qid.endswith("_abs") else item.get("question_type", "unknown")
        probe = Probe(qid, sessions[-1].id if sessions else "", item["question"], str(item["answer"]),
                      tuple(evidence), qtype, time=timestamp(item.get("question_date")),
                      sessions=tuple(str(s) for s in item.get("answer_session_ids", [])))
        out.append(Conversation(qid, qid, tuple(sessions), (), (probe,),
                                {"answer_session_ids": item.get("answer_session_ids", [])}))
    return out


def guess_format(path: str | Path) -> str:
    """The format a benchmark file's name says: ``locomo``, ``longmemeval``, else ``memkit``."""
    name = Path(path).name.lower()
    return "locomo" if "locomo" in name else "longmemeval" if "longmemeval" in name else "memkit"


def load(path: str | Path, format: str | None = None) -> list[Conversation]:
    """Read ``path`` as ``format`` (guessed from the name when None)."""
    format = format or guess_format(path)
    if format not in FORMATS:
        raise DatasetError(f"unknown format {format!r}; choose one of {FORMATS}")
    return {"memkit": load_memkit, "locomo": load_locomo, "longmemeval": load_longmemeval}[format](path)


def in_time_order(sessions: Sequence[DSession]) -> tuple[DSession, ...]:
    """Sessions by their time, as they are replayed (undated ones last, in the order given)."""
    return tuple(sorted(sessions, key=lambda s: (timestamp(s.time) is None, timestamp(s.time) or 0.0)))


def timestamp(value: str | None) -> float | None:
    """Seconds since the epoch for ISO times and LoCoMo's ``"1:56 pm on 8 May, 2023"``; None if unparsable."""
    if not value:
        return None
    for fmt in (None, "%I:%M %p on %d %B, %Y", "%Y/%m/%d (%a) %H:%M"):
        try:
            return (datetime.fromisoformat(value) if fmt is None else datetime.strptime(value, fmt)).timestamp()
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
