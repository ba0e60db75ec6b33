"""Who a question is about (docs/architecture.md §5): when it names exactly one of the people whose turns
the read found, by a word of their name or by a name they gave themselves (a ``<person>.name`` fact, "I'm
Kate"), that person's turns rank up (``recall.recall_episodes``): in real two-person chats nearly every
evidence turn of a question about one person is that person's own. A question in the first person ("my
app", "what did I say") put to a user–assistant memory is about the user: the user's turns rank up
(docs/decisions.md). Pure functions of the question, the speakers and their aliases.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Iterable, Mapping

ROLES = frozenset({"user", "assistant", "system", "tool"})  # speakers that are roles, not people: never named
USER = "user"  # the speaker of a user's own turns when they are not named (Memory.observe without speaker=)
_WORD = re.compile(r"\w+", re.UNICODE)
_FIRST_PERSON = re.compile(r"\b(i|i'm|i've|i'd|i'll|me|my|mine|myself)\b|我", re.IGNORECASE)


@dataclass(frozen=True)
class Subject:
    """The person a question names, and the word that named them."""

    speaker: str
    word: str

    def describe(self) -> str:
        """How the read used it, for the context's account."""
        if self.speaker == USER:
            return f'the question is in the first person ("{self.word}"): the user\'s turns ranked up'
        via = "" if self.word.lower() in name_words(self.speaker) else f' (as "{self.word}")'
        return f"the question names {self.speaker}{via}: their turns ranked up"


def name_words(speaker: str) -> set[str]:
    """The words of a person's name that name them in a question (lowercased, two letters or more)."""
    return {w.lower() for w in _WORD.findall(speaker) if len(w) > 1}


def without_words(query: str, words: set[str]) -> str:
    """``query`` without ``words`` (lowercase), and without the possessive ending they leave ("Kate's")."""
    return " ".join(re.sub(r"\b(\w+)(?:'s|’s)?", lambda m: "" if m.group(1).lower() in words else m.group(0),
                           query).split())


def named(query: str, speakers: Iterable[str], aliases: Mapping[str, str] | None = None) -> Subject | None:
    """The one person of ``speakers`` that ``query`` names, by a word of their name or by an alias
    (``{alias: speaker}``); else, when ``speakers`` holds the unnamed user and the question is in the first
    person, the user; None when it names none, several, or only roles."""
    found = named_all(query, speakers, aliases)
    if not found and USER in speakers:
        first = _FIRST_PERSON.search(query)
        return Subject(USER, first.group(0)) if first else None
    if len(found) != 1:
        return None
    ((speaker, word),) = found.items()
    return Subject(speaker, word)


def named_all(query: str, speakers: Iterable[str], aliases: Mapping[str, str] | None = None) -> dict[str, str]:
    """Every person of ``speakers`` (roles excepted) that ``query`` names, by a word of their name or by an
    alias (``{alias: speaker}``): ``{speaker: the word that named them}``."""
    words = {w.lower(): w for w in _WORD.findall(query)}
    found: dict[str, str] = {}
    for speaker in speakers:
        if speaker.lower() in ROLES:
            continue
        hit = next((words[w] for w in sorted(name_words(speaker)) if w in words), None)
        if hit is not None:
            found[speaker] = hit
    for alias, speaker in (aliases or {}).items():
        for w in name_words(alias):
            if w in words and speaker not in found and speaker.lower() not in ROLES:
                found[speaker] = words[w]
    return found
