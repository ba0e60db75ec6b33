"""How the episodes part of a context reads: a date line above each session's turns, a speaker's name
before what they said (once for a run of their lines: ``speaker_runs``), and what a line costs in tokens.
``assemble.EpisodePacker`` charges each line by these rules while it packs; ``render_episodes`` writes them.
"""

from __future__ import annotations

import functools
import re
from typing import Sequence

from ..models import tokens
from ..types import Episode
from ..validate import as_date


@functools.lru_cache(maxsize=4096)  # a read labels each candidate's date, and the same turns come back read after read
def date_label(t: float) -> str:
    """A session date as people write it: ``8 May 2023``; a stored time no calendar can write (one kept before
    times were checked at ``observe``) reads ``unknown date`` and never fails the read."""
    try:
        d = as_date(t)
    except (OverflowError, ValueError, OSError):
        return "unknown date"
    return f"{d.day} {d.strftime('%B %Y')}"


def said_line(e: Episode) -> str:
    """What an episode says, without its speaker; an excerpt of a long turn is marked ``…`` where the turn
    goes on."""
    if e.span is None:
        return e.content
    return f"{'…' if e.span[0] else ''}{e.content.strip()}{'…' if e.span[1] < e.span[2] else ''}"


def episode_line(e: Episode) -> str:
    """One episode as a context line: ``Caroline: ...`` (``said_line`` after the speaker's name)."""
    return f"{e.speaker}: {said_line(e)}"


# what reads as a speaker's name at the start of a line: one to three words and a colon ("Note: ...", "Mary Ann: ...")
NAME_LIKE = re.compile(r"\s*[^\W\d_][\w'’.-]*(?: [\w'’.-]+){0,2}:(?:\s|$)")


def unnamed(e: Episode, voice: str | None) -> bool:
    """Whether ``e``'s line goes without its speaker's name after a line of ``voice`` (``speaker_runs``): said by
    the same speaker, unless what it says starts like a name of its own ("Note: bring the tickets" would read as
    said by "Note")."""
    return e.speaker == voice and not NAME_LIKE.match(said_line(e))


def session_header(e: Episode, labelled: bool = False) -> str:
    """The line above a session's episodes: its date (``[8 May 2023]``), and its id when another shown session
    has the same date (``[8 May 2023, session s3]``)."""
    return f"[{date_label(e.time)}, session {e.session_id}]" if labelled else f"[{date_label(e.time)}]"


def said_order(e: Episode) -> tuple[int, int]:
    """Episodes in the order they were said; passages of one turn in the turn's order."""
    return int(e.id), e.span[0] if e.span else 0


def render_episodes(episodes: Sequence[Episode], dates: bool = True, speaker_runs: bool = True) -> str:
    """Episodes in the order given; with ``dates``, a header with the session date before each session's run
    (with the session's id where two shown sessions share a date). With ``speaker_runs``, a line said by the
    speaker of the line above it, under the same header, goes without the name (``unnamed``)."""
    sessions_on: dict[str, set[str]] = {}
    for e in episodes:
        sessions_on.setdefault(date_label(e.time), set()).add(e.session_id)
    lines: list[str] = []
    last, voice = None, None
    for e in episodes:
        if dates and e.session_id != last:
            lines.append(session_header(e, len(sessions_on[date_label(e.time)]) > 1))
            voice = None
        last = e.session_id
        lines.append(said_line(e) if speaker_runs and unnamed(e, voice) else episode_line(e))
        voice = e.speaker
    return "\n".join(lines)


def line_cost(line: str) -> int:
    """Tokens a line adds to a block (its own tokens and the newline before it): an upper bound."""
    return tokens.count(line) + 1


def name_cost(e: Episode) -> int:
    """What the speaker's name before ``e`` costs (``episode_line`` against ``said_line``)."""
    return line_cost(episode_line(e)) - line_cost(said_line(e))
