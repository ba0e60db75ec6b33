"""Converters from public datasets of long conversations into ``Conversation`` objects.

The files are the user's own download (their licences do not let memkit ship them); tests use small fixtures
written in the same shapes. Each loader counts what it could not use (``Conversation.notes``) instead of
failing on it or dropping it silently; ``describe`` says it in one line.

- LoCoMo (``locomo10.json``) and LongMemEval (``longmemeval_*.json``): docs/architecture.md §5.
- REALTALK (``Chat_<n>_<names>.json``, a file or a folder of them): real two-person messaging chats.
- BEAM (a folder holding ``chat.json`` and ``probing_questions.json``, or a folder of such folders):
  user–assistant chats with message-id evidence over ten question types.
"""

from __future__ import annotations

import ast
import glob
import json
import re
from pathlib import Path
from typing import Any, Iterable

from ..errors import DatasetError
from .data import Conversation, DSession, DTurn, Probe, in_time_order, load_memkit, text_of, timestamp

FORMATS = ("memkit", "locomo", "longmemeval", "realtalk", "beam")
LOCOMO_CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop", 5: "adversarial"}
REALTALK_CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "commonsense"}


def _json_list(path: str | Path, what: str, needed: str) -> list[dict[str, Any]]:
    try:
        data = json.loads(text_of(path))
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


def load_realtalk(path: str | Path) -> list[Conversation]:
    """REALTALK chats: one file, or every ``*.json`` of a folder in the order of their chat number. Each file
    is one memory space (``user_id`` = the file's stem); speaker 1's turns are ``user``, speaker 2's
    ``assistant``, both keep their names. Evidence strings are normalised (``"D5:3."``, ``"D5:12;D5:16"``,
    ranges ``"D12:3-D12:5"``); ids that name no turn (dropped before release) and questions left with no
    evidence are counted in ``notes`` and left out of evidence recall."""
    files = _files(path, "*.json", "REALTALK")
    return [_realtalk(f) for f in files]


def _realtalk(file: Path) -> Conversation:
    data = _json(file)
    if not isinstance(data, dict) or "name" not in data or "session_1" not in data:
        raise DatasetError(f"{file} is not a REALTALK chat (expected an object with 'name' and 'session_1')")
    first = data["name"].get("speaker_1")
    sessions = []
    for n in sorted(int(m.group(1)) for k in data if (m := re.fullmatch(r"session_(\d+)", k))):
        turns = tuple(DTurn(t["dia_id"], "user" if t["speaker"] == first else "assistant",
                            t["clean_text"] + (f" [image: {t['blip_caption']}]" if t.get("blip_caption") else ""),
                            t["speaker"])
                      for t in data[f"session_{n}"] if str(t.get("clean_text", "")).strip())
        if turns:
            sessions.append(DSession(f"session_{n}", data.get(f"session_{n}_date_time"), turns))
    sessions = list(in_time_order(sessions))
    known = {t.id for s in sessions for t in s.turns}
    notes = {"questions": 0, "malformed_evidence": 0, "missing_evidence": 0, "without_evidence": 0}
    probes = []
    for i, qa in enumerate(data.get("qa", [])):
        ids, bad = evidence_ids(qa.get("evidence", []))
        kept = tuple(dict.fromkeys(e for e in ids if e in known))
        notes["questions"] += 1
        notes["malformed_evidence"] += bad
        notes["missing_evidence"] += len(set(ids)) - len(kept)
        notes["without_evidence"] += not kept
        probes.append(Probe(f"{file.stem}:q{i}", sessions[-1].id, qa["question"], str(qa.get("answer", "")), kept,
                            REALTALK_CATEGORIES.get(qa.get("category"), "unknown"), time=_last_time(sessions)))
    notes["speakers"] = [first, data["name"].get("speaker_2")]
    return Conversation(file.stem, file.stem, tuple(sessions), (), tuple(probes), notes)


_TURN_ID = re.compile(r"D(\d+):(\d+)")


def evidence_ids(values: Iterable[Any]) -> tuple[list[str], int]:
    """Turn ids (``"D5:3"``) in evidence strings as the datasets write them: several per string (any
    separator), trailing dots, ranges within a day (``"D12:3-D12:5"``). Returns the ids and how many strings
    held none (``""``, ``"D:56"``)."""
    ids: list[str] = []
    bad = 0
    for value in values:
        text = str(value)
        found = False
        for m in re.finditer(r"D(\d+):(\d+)(?:\s*-\s*D(\d+):(\d+))?", text):
            found = True
            day, a = int(m.group(1)), int(m.group(2))
            b = int(m.group(4)) if m.group(3) and int(m.group(3)) == day else a
            ids += [f"D{day}:{j}" for j in range(a, max(a, b) + 1)]
        bad += not found
    return ids, bad


def load_beam(path: str | Path) -> list[Conversation]:
    """BEAM chats: a folder with ``chat.json`` and ``probing_questions.json`` is one conversation (one user);
    a folder of such folders is all of them, in the order of their number. Message ids are the turn ids; the
    generator's ``->-> 1,5`` marker is cut from user messages; a session's time is the ``time_anchor`` of its
    first user message that has one. Every question is asked after the last session; its evidence is
    ``source_chat_ids`` (a list, or a dict of lists, maybe as a string). Questions without evidence
    (abstention by design, and a few others) are counted in ``notes`` and left out of evidence recall."""
    root = Path(path)
    if root.is_file() and root.name == "chat.json":
        root = root.parent
    if not root.is_dir():
        raise DatasetError(f"no such BEAM folder: {root} (a folder holding chat.json, or a folder of them)")
    if (root / "chat.json").is_file():
        folders = [root]
    else:
        folders = sorted((d for d in root.iterdir() if (d / "chat.json").is_file()),
                         key=lambda d: (not d.name.isdigit(), int(d.name) if d.name.isdigit() else 0, d.name))
    if not folders:
        raise DatasetError(f"{root} holds no BEAM chat (a folder with chat.json and probing_questions.json)")
    return [_beam(d, f"beam-{d.parent.name}-{d.name}" if len(folders) > 1 or d != root else f"beam-{d.name}")
            for d in folders]


_MARKER = re.compile(r"\s*->->\s*\d+(?:\s*,\s*\d+)*\)?")
_ANSWER_FIELDS = ("answer", "ideal_answer", "ideal_response", "ideal_summary")


def _beam(folder: Path, conv_id: str) -> Conversation:
    chat = _json(folder / "chat.json")
    if not isinstance(chat, list) or not all(isinstance(s, dict) and "turns" in s for s in chat):
        raise DatasetError(f"{folder / 'chat.json'} is not a BEAM chat (expected a list of sessions with 'turns')")
    sessions = []
    for n, s in enumerate(chat, 1):
        messages = [m for exchange in s["turns"] for m in (exchange if isinstance(exchange, list) else [exchange])]
        turns = tuple(DTurn(str(m["id"]), m["role"], _MARKER.sub("", m["content"]).strip())
                      for m in messages if str(m.get("content", "")).strip())
        anchor = next((m["time_anchor"] for m in messages if m["role"] == "user" and m.get("time_anchor")), None)
        if turns:
            sessions.append(DSession(f"s{s.get('batch_number', n)}", anchor or s.get("time_anchor"), turns))
    sessions = list(in_time_order(sessions))
    known = {t.id for s in sessions for t in s.turns}
    questions = _json(folder / "probing_questions.json") if (folder / "probing_questions.json").is_file() else {}
    notes = {"questions": 0, "missing_evidence": 0, "without_evidence": 0}
    probes = []
    for qtype, items in questions.items():
        for i, q in enumerate(items):
            ids = [str(x) for x in _flat(_literal(q.get("source_chat_ids")))]
            kept = tuple(dict.fromkeys(e for e in ids if e in known))
            notes["questions"] += 1
            notes["missing_evidence"] += len(set(ids)) - len(kept)
            notes["without_evidence"] += not kept
            answer = next((str(q[f]) for f in _ANSWER_FIELDS if q.get(f)), "")
            probes.append(Probe(f"{conv_id}:{qtype}:{i}", sessions[-1].id, q["question"],
                                answer if qtype != "abstention" else "", kept, qtype, time=_last_time(sessions),
                                superseded=_superseded(_literal(q.get("source_chat_ids")), kept)))
    return Conversation(conv_id, conv_id, tuple(sessions), (), tuple(probes), notes)


def _superseded(ids: Any, kept: tuple[str, ...]) -> tuple[str, ...]:
    """The evidence turns of a knowledge update that said the old value (``original_info``), when the turns
    that replaced it (``updated_info``) are evidence too: what a stale context shows without its replacement."""
    if not isinstance(ids, dict):
        return ()
    old = {str(x) for x in _flat(ids.get("original_info"))}
    new = {str(x) for x in _flat(ids.get("updated_info"))} - old
    return tuple(e for e in kept if e in old) if any(e in new for e in kept) else ()


def _literal(value: Any) -> Any:
    """``source_chat_ids`` as data: BEAM writes some as the text of a Python literal (``"[28]"``)."""
    if isinstance(value, str):
        try:
            return ast.literal_eval(value)
        except (ValueError, SyntaxError):
            return re.findall(r"\d+", value)
    return value


def _flat(value: Any) -> list[Any]:
    if value is None:
        return []
    if isinstance(value, dict):
        return [x for v in value.values() for x in _flat(v)]
    if isinstance(value, (list, tuple)):
        return [x for v in value for x in _flat(v)]
    return [value]


def _last_time(sessions: list[DSession]) -> float | None:
    return timestamp(sessions[-1].time) if sessions else None


def _files(path: str | Path, pattern: str, what: str) -> list[Path]:
    """One file, or the files of a folder matching ``pattern`` in natural order (``Chat_2`` before ``Chat_10``)."""
    p = Path(path)
    if p.is_file():
        return [p]
    if not p.is_dir():
        raise DatasetError(f"no such file or folder: {p}")
    files = [Path(f) for f in expand([str(p / pattern)])] if list(p.glob(pattern)) else []
    if not files:
        raise DatasetError(f"{p} holds no {what} file ({pattern})")
    return files


def _json(file: Path) -> Any:
    try:
        return json.loads(text_of(file))
    except json.JSONDecodeError as e:
        raise DatasetError(f"{file} is not JSON ({e})") from None


def expand(paths: Iterable[str | Path]) -> list[str]:
    """Paths with their wildcards expanded (``'Chat_[1-5]_*.json'``, quoted so the shell leaves it to memkit and
    a command keeps its pattern), in natural order; a pattern that matches nothing is a ``DatasetError``."""
    out = []
    for p in map(str, paths):
        if not glob.has_magic(p):
            out.append(p)
            continue
        found = sorted(glob.glob(p), key=lambda f: [int(x) if x.isdigit() else x for x in re.split(r"(\d+)", f)])
        if not found:
            raise DatasetError(f"{p!r} matches no file")
        out += found
    return out


def describe(conversations: Iterable[Conversation]) -> str:
    """One line of what the loaders counted and left out over ``conversations`` (empty when nothing)."""
    totals: dict[str, int] = {}
    for c in conversations:
        for key, value in c.notes.items():
            if isinstance(value, int):
                totals[key] = totals.get(key, 0) + value
    said = {"questions": "questions", "without_evidence": "without evidence (left out of evidence recall)",
            "missing_evidence": "evidence ids that name no turn (left out)",
            "malformed_evidence": "evidence strings without a turn id"}
    return ", ".join(f"{totals[k]} {v}" for k, v in said.items() if totals.get(k))


def guess_format(path: str | Path) -> str:
    """The format a benchmark path says: ``locomo``, ``longmemeval``, ``realtalk`` (a ``Chat_*.json`` file or a
    folder of them), ``beam`` (a folder with ``chat.json`` or of such folders), else ``memkit``."""
    p = Path(path)
    name = p.name.lower()
    if "locomo" in name:
        return "locomo"
    if "longmemeval" in name:
        return "longmemeval"
    if "realtalk" in name or name.startswith("chat_") or (p.is_dir() and any(p.glob("Chat_*.json"))):
        return "realtalk"
    if "beam" in str(p).lower() or name == "chat.json" or (p.is_dir() and (any(p.glob("chat.json")) or any(p.glob("*/chat.json")))):
        return "beam"
    return "memkit"


def load(path: str | Path, format: str | None = None) -> list[Conversation]:
    """Read ``path`` as ``format`` (guessed from the path when None)."""
    format = format or guess_format(path)
    if format not in FORMATS:
        raise DatasetError(f"unknown format {format!r}; choose one of {FORMATS}")
    loaders = {"memkit": load_memkit, "locomo": load_locomo, "longmemeval": load_longmemeval,
               "realtalk": load_realtalk, "beam": load_beam}
    return loaders[format](path)


def chosen(data: str = "", format: str = "", suite: str = "chats", size: int | None = None) -> tuple[list[Conversation], str]:
    """The conversations a notebook or a sweep runs on, and a line saying which: the first ``size`` of a data
    set the user downloaded (``data``, read as ``format`` or as its path says), else of a generated suite."""
    from .data import builtin_suite

    if data:
        convs = load(data, format or None)[:size]
        return convs, f"ran on {data} ({len(convs)} conversations)"
    convs = builtin_suite(suite, conversations=size)
    return convs, f"ran on the generated {suite} suite ({len(convs)} conversations; no data given)"
