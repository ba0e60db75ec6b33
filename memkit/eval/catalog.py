"""The benchmark data memkit loads and where a user gets it (``memkit data list``), and a check of a download
(``memkit data check PATH --format F``): its layout, through the loader itself, and its counts against the
published releases. memkit ships none of these files (their licences do not let it) and downloads nothing.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

from ..errors import DatasetError
from .data import Conversation
from .datasets import FORMATS, describe, guess_format, load


@dataclass(frozen=True)
class Release:
    """One published release: its conversations and questions, as its files hold them."""

    name: str
    conversations: int
    questions: int


@dataclass(frozen=True)
class Dataset:
    """A benchmark memkit reads: what it is, where it is published, under which licence, the layout
    ``memkit bench --data`` expects, and its releases."""

    format: str
    name: str
    what: str
    source: str
    licence: str
    layout: str
    size: str
    releases: tuple[Release, ...] = ()


DATASETS = (
    Dataset("locomo", "LoCoMo", "long two-person chats (about 19 sessions each) with questions and evidence turn ids",
            "https://github.com/snap-research/locomo (data/locomo10.json); paper arXiv 2402.17753",
            "CC BY-NC 4.0 (non-commercial)", "one file: locomo10.json, a JSON list of 10 samples",
            "about 3 MB", (Release("locomo10", 10, 1986),)),
    Dataset("longmemeval", "LongMemEval", "user-assistant chat histories, one per question, with evidence turns "
            "(has_answer) and answer sessions", "https://huggingface.co/datasets/xiaowu0162/longmemeval; "
            "paper arXiv 2410.10813", "MIT", "one file: longmemeval_s.json, longmemeval_m.json or "
            "longmemeval_oracle.json, a JSON list of 500 questions (each one conversation)",
            "about 15 MB (oracle), 280 MB (s), 2.7 GB (m)", (Release("s, m or oracle", 500, 500),)),
    Dataset("realtalk", "REALTALK", "real messaging-app chats between two people over 21 days",
            "https://github.com/danny911kr/REALTALK (data/Chat_*.json); paper arXiv 2502.13270",
            "no licence file: a research release (cite the paper)",
            "a folder of Chat_<n>_<names>.json files (or one of them)", "3.2 MB",
            (Release("all 10 chats", 10, 728),)),
    Dataset("beam", "BEAM", "user-assistant chats written from a persona and a plan, ten question types",
            "https://github.com/mohammadtavakoli78/BEAM (chats/100K, chats/500K); paper arXiv 2510.27246",
            "CC BY-SA 4.0", "a folder of numbered folders (100K/1 ...), each holding chat.json and "
            "probing_questions.json", "100K: 20 conversations; 500K: 35",
            (Release("100K", 20, 400), Release("500K", 35, 700))),
    Dataset("memkit", "memkit JSONL", "memkit's own format: the generated suites (memkit generate) or your own",
            "this repository (data/*.jsonl; docs/architecture.md, the JSONL format)", "as the repository",
            "one JSONL file, a conversation per line", "-"),
)
BY_FORMAT = {d.format: d for d in DATASETS}  # every loader format has its entry (tests/test_cli.py)


@dataclass(frozen=True)
class Check:
    """What ``check`` found: the counts, what the loader left out, and the problems (none: the download is a
    published release as memkit reads it)."""

    format: str
    conversations: int
    sessions: int
    turns: int
    questions: int
    notes: str  # what the loader counted and left out (datasets.describe)
    problems: tuple[str, ...]

    @property
    def ok(self) -> bool:
        return not self.problems


def check(path: str | Path, format: str | None = None) -> Check:
    """Load ``path`` as ``format`` (guessed from the path when None) and compare its counts with the published
    releases. A layout the loader cannot read is ``DatasetError`` (naming the file and what it expected); a
    readable download whose counts match no release, or holds no question, comes back with its problems."""
    format = format or guess_format(path)
    if format not in BY_FORMAT:
        raise DatasetError(f"unknown format {format!r}; choose one of {FORMATS} (memkit data list)")
    convs = load(path, format)
    problems = list(_problems(BY_FORMAT[format], convs))
    return Check(format, len(convs), sum(len(c.sessions) for c in convs),
                 sum(len(s.turns) for c in convs for s in c.sessions), sum(len(c.probes) for c in convs),
                 describe(convs), tuple(problems))


def _problems(data: Dataset, convs: Sequence[Conversation]) -> list[str]:
    found = (len(convs), sum(len(c.probes) for c in convs))
    out = []
    if not found[1]:
        out.append("no question in it: nothing to measure recall on")
    if data.releases and found not in {(r.conversations, r.questions) for r in data.releases}:
        published = "; ".join(f"{r.name}: {r.conversations} conversations, {r.questions} questions"
                              for r in data.releases)
        out.append(f"{_n(found[0], 'conversation')} and {_n(found[1], 'question')} match no published release of "
                   f"{data.name} ({published}): a part of one, or files missing or added")
    empty = [c.id for c in convs if not any(s.turns for s in c.sessions)]
    if empty:
        out.append(f"{_n(len(empty), 'conversation')} without a turn: {', '.join(empty[:5])}")
    return out


def _n(count: int, noun: str) -> str:
    return f"{count} {noun}{'' if count == 1 else 's'}"


def listing() -> str:
    """``memkit data list``: every format, what it is, where to get it, its licence, layout and size."""
    blocks = []
    for d in DATASETS:
        releases = "; ".join(f"{r.name}: {r.conversations} conversations, {r.questions} questions" for r in d.releases)
        blocks.append("\n".join([f"{d.name} (--format {d.format}): {d.what}", f"  get it:   {d.source}",
                                 f"  licence:  {d.licence}", f"  layout:   {d.layout}", f"  size:     {d.size}"]
                                + ([f"  releases: {releases}"] if releases else [])))
    return "\n\n".join(blocks)
