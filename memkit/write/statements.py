"""The statement a sentence makes before it asks, for the rule extractor.

Users state a fact and ask in one breath: "I prefer simple, minimal dependencies, how can I keep my Flask app
small?", "I've adjusted our holiday gift budget to $450, can you help me plan?". The rules read statements,
so they read the words before the asking part, and the fact they keep holds only those words: a question ends
no fact, and a request does not ride along in one (docs/decisions.md, "Statements before a request").
"""

from __future__ import annotations

import re

# where a question sentence starts asking, after a comma ("..., can you", "..., how", "..., is there")
ASKED = re.compile(r",\s+(?:(?:so|and|but)\s+)?(?:can|could|would|will|should|do|does|is|are|how|what|which|where|when|"
                   r"why|any)\b", re.I)
# where a sentence that does not end in a question mark starts a request: narrower than ``ASKED``, whose "is",
# "when" or "which" go on with a statement in a sentence that asks nothing ("I live in Lyon, which I love")
REQUEST = re.compile(r",\s+(?:(?:so|and|but)\s+)?(?:(?:can|could|would|will) you|how (?:can|do|should|would) (?:i|we)|"
                     r"what (?:should|would|can|do) (?:i|we|you)|(?:any|some) (?:ideas|suggestions|tips|advice))\b",
                     re.I)
FIRST_PERSON = re.compile(r"^(?:i|i'm|i've|we|we've|my|our)\b", re.I)


def stated_before(question: str) -> str:
    """The statement a question sentence opens with ("I've adjusted the budget to $450, can you help me plan
    it?" -> "I've adjusted the budget to $450"), or "" when it opens with none: a first-person clause before
    the first clause that asks."""
    lead = ASKED.split(question.strip(), maxsplit=1)[0].rstrip("?？ ")
    return lead if lead != question.strip().rstrip("?？ ") and FIRST_PERSON.match(lead) else ""


def statement_of(sentence: str) -> str:
    """What ``sentence`` states, for the rules to read: a question's first-person lead (``stated_before``; ""
    when it states nothing), a statement's words before a request that follows a comma ("I prefer minimal
    dependencies, can you review my code." -> "I prefer minimal dependencies"), else the sentence."""
    if sentence.endswith(("?", "？")):
        return stated_before(sentence)
    lead = REQUEST.split(sentence, maxsplit=1)[0].rstrip(" ,")
    return lead if len(lead) >= 4 else sentence
