"""Who a question is about (docs/architecture.md §5): when it names exactly one of the people whose turns
the read found, by a word of their name or by a name they gave themselves (a ``<person>.name`` fact, "I'm
Kate"), or by a spelling of their name that sounds and reads alike ("Muhammad" for Muhhamed:
``spelt_like``), that person's turns rank up (``recall.recall_episodes``): in real two-person chats nearly every
evidence turn of a question about one person is that person's own. A question put to a user–assistant
memory that names no one ("my app", "what did I say", "the dashboard's response time") is the user's: the
user's turns rank up; one about what the assistant said ("what did you recommend") ranks the assistant's up
(docs/decisions.md, "The user's own turns"). Pure functions of the question, the speakers and their aliases.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Iterable, Mapping

import jellyfish

from ..store.lexicon import STOPWORDS  # the words a question asks with: never a name

ROLES = frozenset({"user", "assistant", "system", "tool"})  # speakers that are roles, not people: never named
USER = "user"  # the speaker of a user's own turns when they are not named (Memory.observe without speaker=)
ASSISTANT = "assistant"  # the speaker of an assistant's turns when they are not named
SUBJECT = "subject"  # the ranking of a named person's turns (Subject.ranking; beside USER's)
_WORD = re.compile(r"\w+", re.UNICODE)
# a capitalised word of a question this alike to a word of a name (Jaro-Winkler, lowercased), with the same
# Soundex code, names that person (docs/decisions.md, "A name spelt another way")
NAME_LIKENESS = 0.85
_FIRST_PERSON = re.compile(r"\b(i|i'm|i've|i'd|i'll|me|my|mine|myself)\b|我", re.IGNORECASE)
# a question about what the assistant said ("What did you recommend for my resume?", "the plan you suggested"),
# not a request put to it ("Can you tell me ...", "What do you suggest now?"): the assistant's turns rank up
_ASSISTANT_SAID = re.compile(r"(?<!\bcan )(?<!\bcould )(?<!\bwould )(?<!\bwill )(?<!\bdo )(?<!\bshould )"
                             r"\byou\s+(?:\w+\s+)?"
                             r"(recommend|suggest|advise|say|said|tell|told|mention|propos|explain|gave|give|"
                             r"provid|list|shar|outlin|describ|walk)\w*", re.IGNORECASE)


@dataclass(frozen=True)
class Subject:
    """The person a question names, and the word that named them."""

    speaker: str
    word: str

    @property
    def ranking(self) -> str:
        """The name of the ranking of this person's turns in the fusion (``RecallOptions.weights``): ``user``
        or ``assistant`` for the unnamed roles of a user–assistant memory, ``subject`` for a named person."""
        return self.speaker if self.speaker in (USER, ASSISTANT) else SUBJECT

    def describe(self) -> str:
        """How the read used it, for the context's account."""
        if self.speaker == USER and not self.word:
            return ("the question names no one, and this memory is a user's with an assistant: "
                    "the user's turns ranked up")
        if self.speaker == USER:
            return f'the question is in the first person ("{self.word}"): the user\'s turns ranked up'
        if self.speaker == ASSISTANT:
            return f'the question asks what the assistant said ("{self.word}"): the assistant\'s turns ranked up'
        via = "" if self.word.lower() in name_words(self.speaker) else f' (as "{self.word}")'
        return f"the question names {self.speaker}{via}: their turns ranked up"


def name_words(speaker: str) -> set[str]:
    """The words of a person's name that name them in a question (lowercased, two letters or more)."""
    return {w.lower() for w in _WORD.findall(speaker) if len(w) > 1}


def spelt_like(word: str, name: str) -> bool:
    """Whether ``word`` of a question is ``name`` spelt another way ("Muhammad", "Muhhamed"; "Elisa",
    "Elise"): a capitalised word of four letters or more, not a query stopword, with the name's Soundex code
    and at least ``NAME_LIKENESS`` alike to it (Jaro-Winkler)."""
    low = word.lower()
    if len(low) < 4 or not word[:1].isupper() or low in STOPWORDS or low == name:
        return False
    return jellyfish.soundex(low) == jellyfish.soundex(name) and \
        jellyfish.jaro_winkler_similarity(low, name) >= NAME_LIKENESS


def without_words(query: str, words: set[str]) -> str:
    """``query`` without ``words`` (lowercase), and without the possessive ending they leave ("Kate's")."""
    return " ".join(re.sub(r"\b(\w+)(?:'s|’s)?", lambda m: "" if m.group(1).lower() in words else m.group(0),
                           query).split())


def named(query: str, speakers: Iterable[str], aliases: Mapping[str, str] | None = None,
          variants: bool = True, first_person_only: bool = False) -> Subject | None:
    """The one person of ``speakers`` that ``query`` names, by a word of their name or by an alias
    (``{alias: speaker}``), or (with ``variants``) by a spelling of either (``spelt_like``); else, when
    ``speakers`` holds the unnamed user, the user when the question is in the first person or (unless
    ``first_person_only``) when the unnamed assistant is there too, a user–assistant memory, whose questions
    are the user's ("What is the dashboard API's response time?"); but a question about what the assistant
    said ("What did you recommend?") names the assistant. None when it names none, several, or only roles."""
    found = named_all(query, speakers, aliases, variants)
    if not found and ASSISTANT in speakers and USER in speakers:
        said = _ASSISTANT_SAID.search(query)
        if said:
            return Subject(ASSISTANT, said.group(0))
    if not found and USER in speakers:
        first = _FIRST_PERSON.search(query)
        if first:
            return Subject(USER, first.group(0))
        return Subject(USER, "") if ASSISTANT in speakers and not first_person_only else None
    if len(found) != 1:
        return None
    ((speaker, word),) = found.items()
    return Subject(speaker, word)


def named_all(query: str, speakers: Iterable[str], aliases: Mapping[str, str] | None = None,
              variants: bool = True) -> dict[str, str]:
    """Every person of ``speakers`` (roles excepted) that ``query`` names, by a word of their name or by an
    alias (``{alias: speaker}``), or (with ``variants``) by a spelling of either that no one's name has
    (``spelt_like``): ``{speaker: the word that named them}``."""
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
    if variants:
        names = {w: speaker for speaker in speakers if speaker.lower() not in ROLES for w in name_words(speaker)}
        names.update((w, speaker) for alias, speaker in (aliases or {}).items() if speaker.lower() not in ROLES
                     for w in name_words(alias))
        for low, word in words.items():
            if low in names:
                continue  # a name as it is spelt names only its own person
            near = {speaker for name, speaker in names.items() if speaker not in found and spelt_like(word, name)}
            if len(near) == 1:
                found[near.pop()] = word
    return found
