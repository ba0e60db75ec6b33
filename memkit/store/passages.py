"""Long turns as passages (docs/architecture.md §5): a turn longer than a passage is indexed as sentence windows
of at most ``max_tokens`` tokens, each searchable on its own and tied to its turn by its id
(``<episode id>:<start>-<end>``, character offsets into the turn), so a read can show the passage that answers
instead of the whole turn or nothing. Pure functions: the store indexes with them, the read cuts with them.
"""

from __future__ import annotations

import re

from ..models import tokens

PASSAGE_TOKENS = 64  # Memory's default passage size (tokens), chosen on the dev splits (docs/decisions.md, "Long turns as passages")

# Sentence ends (Latin and CJK punctuation) and line breaks: where a passage may end.
_BREAK = re.compile(r"(?<=[.!?。！？])\s+|\n+")


def spans(text: str, max_tokens: int) -> list[tuple[int, int]]:
    """``(start, end)`` character ranges covering ``text`` in order: whole sentences packed greedily up to
    ``max_tokens`` tokens each; a sentence longer than that is cut at word boundaries. One range, the whole
    text, when it fits (or when ``max_tokens`` is 0: passages off)."""
    if max_tokens <= 0 or tokens.count(text) <= max_tokens:
        return [(0, len(text))]
    out: list[tuple[int, int]] = []
    start = end = 0
    for piece_start, piece_end in _pieces(text, max_tokens):
        if end > start and tokens.count(text[start:piece_end]) > max_tokens:
            out.append((start, end))
            start = piece_start
        end = piece_end
    if end > start:
        out.append((start, end))
    return out


def _pieces(text: str, max_tokens: int) -> list[tuple[int, int]]:
    """The sentences of ``text`` as ranges (without the whitespace between), each cut to ``max_tokens``."""
    out, at = [], 0
    for m in [*_BREAK.finditer(text), None]:
        end = m.start() if m else len(text)
        if text[at:end].strip():
            out += _cut(text, at, end, max_tokens)
        at = m.end() if m else at
    return out


def _cut(text: str, start: int, end: int, max_tokens: int) -> list[tuple[int, int]]:
    """One sentence's range, cut at spaces into ranges of at most ``max_tokens`` tokens (a word longer than
    that stays whole)."""
    if tokens.count(text[start:end]) <= max_tokens:
        return [(start, end)]
    words = [(m.start() + start, m.end() + start) for m in re.finditer(r"\S+", text[start:end])]
    out, first = [], words[0][0]
    for i, (ws, we) in enumerate(words):
        if ws > first and tokens.count(text[first:we]) > max_tokens:
            out.append((first, words[i - 1][1]))
            first = ws
    out.append((first, words[-1][1]))
    return out


def parse(item_id: str) -> tuple[str, tuple[int, int] | None]:
    """``(episode id, span or None)`` of an index id (``Episode.ref``)."""
    episode_id, _, rest = item_id.partition(":")
    if not rest:
        return episode_id, None
    start, _, end = rest.partition("-")
    return episode_id, (int(start), int(end))
