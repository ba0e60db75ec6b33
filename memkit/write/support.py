"""Whether turns support what a model wrote about them (docs/architecture.md §3): a model may invent a fact
(a person never named), drop the turn's "not", or write a summary of other people and numbers than the
turns'. Pure functions of the model's text and the turns' words.

- *unsupported*: no content word of the fact (its text or value, stemmed; ``user`` and stopwords aside)
  occurs in the turn, or the fact names a person, place or number the turn never says (a sister "Maria" from
  "my sister", 35 from "I'm 53", "Sofia is a cello player." from "I play the cello"; a word holding a digit is
  compared whole: "python3" is said by "I use python3", "python2" is not), or it is written in another script
  than the turn (but for a name: "Wang Lei" from "我叫王磊");
- *negation dropped* (or *added*): the clause of the turn that shares the most words with the fact says
  "not" (no, never, don't, ...) and the fact does not, or the other way round;
- *unfaithful* (a summary): it names a person, place or number the turns never say, or keeps less than half
  of theirs.
"""

from __future__ import annotations

import re

from ..store.lexicon import STOPWORDS, stems
from ..types import Candidate

NEGATION = re.compile(r"\b(?:not|no|never|nor|neither|none|nobody|nothing|no longer|cannot)\b|n't\b|n’t\b", re.I)
# words that say "not" without a "not": a fact "User dislikes meetings" keeps "I don't like meetings"'s negation
NEGATIVE = re.compile(r"\b(?:dislike|hate|avoid|stop|stopped|quit|refuse|against|former|formerly|anymore)\w*\b|"
                      r"\b(?:gave up|give up|no longer|used to)\b", re.I)
# words of a change of mind: "we moved from Go to Python" supports "User no longer uses Go"
CHANGE = re.compile(r"\b(?:moved|switch\w*|stopp\w*|quit\w*|left|gave up|from|instead|replac\w*|anymore|no longer|"
                    r"used to)\b", re.I)
# where a clause ends: a sentence's end, a comma (a leading "No," is a clause of its own), "but"
_CLAUSE = re.compile(r"[.;,!?。！？，]+|\bbut\b", re.I)
_GENERIC = frozenset({"user", "prefer", "like", "use", "is", "has", "have"})


def _content(text: str) -> set[str]:
    return {s for s in stems(text) if s not in STOPWORDS and s not in _GENERIC and not s.isdigit()}


_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af]")


def unsupported(c: Candidate, turn: str) -> str | None:
    """Why ``turn`` does not support ``c``, or None when it does. A fact written in another script than the turn
    ("User loves football." from "我喜欢喝茶") cannot be judged by words: it is refused, but for a name written in
    another script ("User's name is Wang Lei." from "我叫王磊")."""
    fact = f"{c.text} {c.value or ''}"
    if bool(_CJK.search(turn)) != bool(_CJK.search(fact)):
        if (c.key or "").endswith(".name") or re.search(r"\bname is\b|\bcalled\b", c.text, re.I):
            return None
        return "written in another script than its turn, so the turn's words cannot support it"
    invented = sorted(_names(fact, subject=True) - _words(turn) - _names(turn))
    if invented:
        return f"unsupported by the turn: it never says {', '.join(invented[:5])}"
    words = _content(fact)
    if not words:
        return None  # nothing to check it by: the schema's validation judges it
    clauses = [x for x in _CLAUSE.split(turn) if x and x.strip()] or [turn]
    shared = [len(words & _content(x)) for x in clauses]
    if not any(shared):
        return f"unsupported by the turn: none of {sorted(words)} is in it"
    clause = clauses[shared.index(max(shared))]
    said_not, fact_not = bool(NEGATION.search(clause)), bool(NEGATION.search(c.text)) or c.negated
    if said_not and not fact_not and not NEGATIVE.search(c.text):
        return f"drops the turn's negation ({clause.strip()!r})"
    if fact_not and not said_not and not NEGATIVE.search(clause) and not CHANGE.search(clause):
        return f"adds a negation the turn does not have ({clause.strip()!r})"
    return None


def _words(text: str) -> set[str]:
    return {w.lower() for w in re.findall(r"[\w'-]+", text)}


# a capitalised word inside a sentence, or the capitalised subject a fact starts with ("Sofia is a cello player."),
# and a word that holds a digit, whole: "python3", "X5", "24.04" (a number inside a word is part of that word)
_NAME = re.compile(r"(?<=[a-z,;]\s)[A-Z][\w'-]+")
_SUBJECT = re.compile(r"^[A-Z][\w'-]+")
_NUMBER = re.compile(r"\w+(?:[.,:]\w+)*")
_SUBJECTS = frozenset({"user", "user's", "users"})


def _names(text: str, subject: bool = False) -> set[str]:
    """The names (capitalised words inside a sentence; with ``subject``, a fact's capitalised first word too)
    and the words holding a digit of ``text``, lowercased."""
    names = {w.lower() for w in _NAME.findall(text.strip()) + (_SUBJECT.findall(text.strip()) if subject else [])}
    numbers = {w.lower() for w in _NUMBER.findall(text) if any(ch.isdigit() for ch in w)}
    return {w for w in names if w not in STOPWORDS and w not in _SUBJECTS} | numbers


def unfaithful(source: str, summary: str, keep: float = 0.5) -> str | None:
    """Why ``summary`` is not a summary of ``source``: it names a person, place or number the source never
    says, or it keeps less than ``keep`` of the source's names and numbers; None when it is one."""
    wanted = _names(source)
    invented = sorted(_names(summary) - _words(source) - wanted)
    if invented:
        return f"the summary says what the turns never did: {', '.join(invented[:5])}"
    kept = wanted & (_words(summary) | _names(summary))
    if wanted and len(kept) < keep * len(wanted):
        return f"the summary loses the turns' names and numbers ({', '.join(sorted(wanted - kept)[:5])})"
    return None
