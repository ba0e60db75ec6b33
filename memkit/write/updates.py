"""Statements of a changed value, for the rule extractor: "my grocery budget was increased to $550", "the new
daily quota of 1,200 calls per day", "I've extended my reading challenge goal to 12 books", "now I have a total
of 10 cards". A value said once and changed later is what a user's facts should carry in its current form:
the turn that changed it may never be recalled beside the turn that said the old one (docs/decisions.md,
"Changed values").

Each yields the words that state the new value, keyed by the thing it is the value of (``user.<thing>``, the
key "my <thing> is <value>" gets from ``rules.possession``), so the ``keyed`` policy replaces the old value.
A value holds a digit (an amount, a count, a date or a time): "moved the meeting to Friday" is left to the turn.
"""

from __future__ import annotations

import itertools
import re
from typing import Callable, Iterator

from ..store.lexicon import STOPWORDS
from ..types import Candidate

VERB = (r"(?:improved|increased|decreased|reduced|raised|lowered|grown|risen|rose|dropped|fallen|fell|climbed|"
        r"jumped|reached|extended|shortened|adjusted|changed|updated|moved|rescheduled|pushed back|pushed|bumped|"
        r"expanded|upped|revised|cut|brought down|brought up|gotten|got|gone up|gone down)")
ADVERBS = r"(?:(?:now|recently|just|finally|further|already|since|been|also|officially)\s+)*"
# the value: words up to where the clause goes on ("..., so", " by May 13", " after ..."), holding a digit
VALUE = (r"(?P<value>[^,;.!?]*?\d(?:[^;!?.,]|[.,](?=\d))*?)"
         r"(?=\s*(?:[;!?]|,(?!\d)|\.(?:\s|$)|$|\s(?:by|after|due|because|since|so|and|but|which|for|when|starting|from|to|on|"
         r"through|in order)\s))")
WORD = r"(?:(?!(?:and|but|so|or|i|i'm|i've|we|you|it)\b)[\w'-]+)"  # a word of a thing: no clause starts inside it
THING = rf"(?P<thing>{WORD}(?:\s+{WORD}){{0,6}}?)"
OWNED = r"(?P<owner>my|our|the|his|her|their)\s+"
TO = rf"(?:{VERB}\s+to|reached|hit|totals?|stands at)\s+"
NEW = r"(?:new|increased|updated|revised|adjusted|extended|reduced|higher|lower|current)\s+"
PATTERNS = [
    # "my grocery budget was increased to $550", "the unit test coverage ..., which has recently improved to 78%"
    re.compile(rf"\b{OWNED}{THING}(?:\s+(?:for|of|with|in|on|into)\s+[\w'\s-]{{1,40}}?)?,?\s+(?:which\s+|that\s+)?"
               rf"(?:(?:has|have|had|was|were|is|are|got|'s)\s+)?{ADVERBS}{TO}{VALUE}", re.I),
    # "I've extended my reading challenge goal to 12 books", "I adjusted the snack budget to $75"
    re.compile(rf"\b(?:i|we)(?:'ve|'d| have| had)?\s+{ADVERBS}{VERB}\s+{OWNED}{THING}\s+to\s+{VALUE}", re.I),
    # "moving the Zoom call with the creative director to April 22 at 11 AM"
    re.compile(rf"\b(?:moving|moved|rescheduling|rescheduled|pushing|pushed)\s+{OWNED}{THING}\s+to\s+{VALUE}", re.I),
    # "the new daily quota of 1,200 calls per day", "my increased budget of $650"
    re.compile(rf"\b{OWNED}{NEW}{THING}\s+(?:of|is|at)\s+{VALUE}", re.I),
    # "the new April 25 deadline"
    re.compile(rf"\b{OWNED}{NEW}(?P<value>(?:[A-Z][a-z]+\s+)?\d[\d,:]*(?:st|nd|rd|th)?)\s+(?P<thing>[\w'-]+)", re.I),
    # "now I have a total of 10 cards"
    re.compile(r"\bnow\s+(?:i|we)\s+have\s+(?:a total of\s+)?(?P<value>\d[\d,.]*)\s+(?P<thing>[\w'-]+)", re.I),
]
# a change said of "it" whose thing the sentence named before it: "I'm trying to increase my weekly word count,
# and I just found out it was adjusted to 1,350 words", "I've managed to get it down to 4 hours"
OF_IT = re.compile(rf"\b(?:it(?:'s|\s+is|\s+was|\s+has been|\s+had been|\s+has)?\s+{ADVERBS}(?P<verb>{VERB})|"
                   rf"(?:managed to get|got|gotten|brought)\s+it\s+(?P<way>down|up))\s+to\s+{ADVERBS}{VALUE}", re.I)
NAMED = re.compile(r"\b(?:my|our)\s+((?:[\w'-]+\s*){1,4})", re.I)  # a thing of the speaker's "it" may stand for
# where the thing a value belongs to ends: "coverage for my API integration" is the coverage's
THING_END = re.compile(r"\s+(?:for|of|with|in|on|from|that|which)\s+.*$", re.I)
NOT_THINGS = {"it", "this", "that", "them", "time", "way", "number", "total", "amount"}


def changed_value(s: str, third_person: Callable[[str], str], slug: Callable[[str], str]) -> Iterator[Candidate]:
    """The changed value ``s`` states, if any (``rules.changed_value`` gives the rules' own rewriting)."""
    for pattern in PATTERNS:
        m = pattern.search(s)
        if m is None:
            continue
        value, thing = m.group("value"), THING_END.sub("", m.group("thing")).strip()
        words = [w for w in thing.lower().split() if w not in {"a", "an", "the", "my", "our"}][-3:]
        if not words or words == [words[-1]] and words[-1] in NOT_THINGS or not re.search(r"\d", value or ""):
            continue
        said = s[m.start():m.end()].strip(" ,")
        said = re.sub(r"^the\b", "my", said, flags=re.I)  # "the deadline was extended": the speaker's
        said = re.sub(r"^(\w+ing)\b", r"I am \1", said)  # "moving the call to ...": the speaker is
        yield Candidate(third_person(said[0].upper() + said[1:]), key=f"user.{slug(' '.join(words))}",
                        value=value.strip(), importance=0.5)
        return
    yield from _of_it(s, third_person, slug)


def _of_it(s: str, third_person: Callable[[str], str], slug: Callable[[str], str]) -> Iterator[Candidate]:
    """A change said of "it", keyed by the last thing of theirs the sentence named before it ("my weekly word
    count": ``user.weekly_word_count``); none when it named none."""
    m = OF_IT.search(s)
    if m is None or not re.search(r"\d", m.group("value")):
        return
    thing: list[str] = []
    for named in NAMED.finditer(s[:m.start()]):
        words = list(itertools.takewhile(lambda w: w.lower() not in STOPWORDS, named.group(1).split()))
        thing = words or thing
    if not thing or len(thing) == 1 and thing[0].lower() in NOT_THINGS:
        return
    change = m.group("verb") and f"was {m.group('verb').lower()}" or f"got {m.group('way').lower()}"
    value = m.group("value").strip()
    yield Candidate(third_person(f"My {' '.join(thing)} {change} to {value}"), key=f"user.{slug(' '.join(thing[-3:]))}",
                    value=value, importance=0.5)
