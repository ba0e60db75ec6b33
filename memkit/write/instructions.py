"""What a standing instruction is, in words: a sentence that opens with "always" or "never" and a verb, kept by
the rules (``rules.style``) as a procedural fact keyed ``user.style.*``, and the condition it holds for, which a
read compares with the question (``memkit/read/instructions.py``).
"""

from __future__ import annotations

import re

# a standing instruction: a sentence that opens with "always" or "never" (after "please", "from now on" ...) and a
# verb ("Always quote prices in euros when I ask about hotels."), or one that asks anywhere to always or
# never answer, write, use ... ("I'd like you to always answer in French")
INSTRUCTION = (re.compile(r"^(?:(?:please|and|also|so|from now on|going forward)\b[\s,]*)*(always|never)\s+([a-z]+)\b(.*)"),
               re.compile(r"\b(?:please\s+)?(always|never)\s+(answer|reply|respond|write|use|give|show|explain)\b(.*)"))
# words after an opening "always" or "never" that make no instruction ("Never mind.", "Always a pleasure.", "Never
# thought so.", "Always works."): besides these, a word in -ed (not -eed) or in -s (not -ss, -us) is no verb to obey
NOT_ORDERS = {"a", "an", "the", "so", "too", "is", "am", "are", "was", "were", "there", "here", "my", "your",
              "our", "his", "her", "their", "it", "that", "this", "i", "you", "we", "he", "she", "they", "good", "great",
              "nice", "fun", "happy", "glad", "welcome", "more", "better", "worse", "mind", "again", "ever", "once",
              "before", "knew", "saw", "seen", "had", "got", "felt", "did", "said", "been", "went", "gone", "made",
              "found", "thought", "heard", "understood", "done", "will", "would", "can", "could", "should"}
STANDING = "user.style."  # the key every standing instruction the rules find starts with


def instruction(low: str) -> "re.Match[str] | None":
    """A standing instruction in a lower-cased sentence: groups ``always``/``never``, the verb, the rest."""
    m = INSTRUCTION[0].search(low)
    word = m.group(2) if m else ""
    if m and word not in NOT_ORDERS and not (word.endswith("ed") and not word.endswith(("eed", "embed"))) \
            and not (word.endswith("s") and not word.endswith(("ss", "us"))):
        return m
    return INSTRUCTION[1].search(low)


# what a standing instruction holds for: the words after "when", "whenever" or "if" ("when I ask about X": X)
CONDITION = re.compile(r"\b(?:when|whenever|if)\s+(?:(?:i|we)\s+(?:ask|talk|inquire|am asking|'m asking|am talking)"
                       r"(?:\s+you)?(?:\s+(?:about|for|regarding|on))?\s+)?(.+)", re.I)


def condition(instruction: str) -> str | None:
    """What a standing instruction holds for ("User asks: Always quote prices in euros when I ask about
    hotels." -> "hotels"), or None: it holds whatever the question."""
    m = CONDITION.search(instruction)
    return m.group(1).strip().rstrip(".!") or None if m else None
