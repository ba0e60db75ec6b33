"""The summarizer seam: fold turns that left the window into a running summary within a token budget."""

from __future__ import annotations

import heapq
import math
import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Protocol, Sequence, runtime_checkable

from .. import registry
from ..models import tokens
from ..errors import ExtractionError
from ..models.llm import ChatModel
from .rules import SENT_SPLIT, RuleExtractor
from .support import unfaithful
from ..types import Turn

SUMMARY_PROMPT = """You maintain a running summary of a conversation for an assistant with limited context.
Merge the previous summary with the new turns. Keep facts about the user, decisions, constraints,
numbers, names and open tasks; drop greetings and small talk. Write plain sentences, at most
{budget} tokens. Answer with the summary text only."""

SIGNALS = re.compile(
    r"\b(decided|decision|agreed|let's|we'll|will|must|need to|have to|can't|cannot|deadline|budget|"
    r"prefer|always|never|plan|goal|constraint|require|important|remember)\b|决定|必须|需要|不能|计划|记住|\d", re.I)


@dataclass(frozen=True)
class Summary:
    """The running summary: its text, the turn ids it covers, and its size in tokens."""

    text: str = ""
    turn_ids: tuple[str, ...] = ()
    tokens: int = 0


@runtime_checkable
class Summarizer(Protocol):
    """Anything that folds ``turns`` into ``previous`` within ``budget`` tokens."""

    def fold(self, previous: Summary, turns: Sequence[Turn], budget: int) -> Summary: ...


_RULES = RuleExtractor()


STATEMENT = 2.0  # what a statement the rule extractor reads adds to a sentence's score


@lru_cache(maxsize=2048)
def score(sentence: str) -> float:
    """What a sentence carries: 2 if the rule extractor reads a statement in it, plus 1 per signal word.
    Remembered, since a line the summary keeps is scored again at every later fold."""
    return (STATEMENT if _RULES.extract(sentence) else 0.0) + len(SIGNALS.findall(sentence))


def bound(sentence: str) -> float:
    """The most ``score`` can give ``sentence``, without the rule extractor: its signal words, plus a statement."""
    return STATEMENT + len(SIGNALS.findall(sentence))


class ExtractiveSummarizer:
    """Offline: keeps the sentences that carry facts, decisions and constraints, newest first when over budget."""

    score = staticmethod(score)
    # at least ``score``, and cheaper: lines are scored only when they could be kept
    bound = staticmethod(bound)

    def __init_subclass__(cls, **kwargs: Any) -> None:
        """A subclass that scores otherwise and gives no ``bound`` of its own has every line it could keep scored
        (an infinite bound): the inherited bound need not hold for its score, and a low one would drop lines."""
        super().__init_subclass__(**kwargs)
        if "score" in cls.__dict__ and "bound" not in cls.__dict__:
            cls.bound = staticmethod(lambda sentence: math.inf)

    def fold(self, previous: Summary, turns: Sequence[Turn], budget: int) -> Summary:
        """The best lines that fit, taken greedily (highest score first, newest first among equals) and kept in
        the order they were said. Each line is costed once per fold; it is scored (the rule extractor, the
        cost of a fold) only if it still fits when its ``bound`` comes up, since one that does not fit then
        never will: the lines and their order are those of scoring every line first."""
        lines = [line for line in previous.text.split("\n") if line.strip()]
        seen = set(lines)
        for t in turns:
            for sentence in SENT_SPLIT.split(t.content):
                sentence = sentence.strip()
                line = f"{t.role}: {sentence}"
                if sentence and line not in seen:
                    seen.add(line)
                    lines.append(line)
        costs = [tokens.count(line) + 1 for line in lines]
        said = [line.split(": ", 1)[-1] for line in lines]
        # a heap of (-value, -index, scored): a value is a bound until the line is scored, its score after;
        # a line that comes up scored outranks every other line's score, and ties go to the newest
        heap = [(-self.bound(said[i]), -i, False) for i in range(len(lines)) if costs[i] <= budget]
        heapq.heapify(heap)
        keep, used = [], 0
        while heap:
            value, i, scored = heapq.heappop(heap)
            if used + costs[-i] > budget:
                continue  # what is kept only grows: a line that does not fit now never will
            if not scored:
                heapq.heappush(heap, (-self.score(said[-i]), i, True))
            elif value < 0:  # a line that carries nothing is never kept
                keep.append(-i)
                used += costs[-i]
        text = "\n".join(lines[i] for i in sorted(keep))
        return Summary(text, previous.turn_ids + tuple(t.id for t in turns), tokens.count(text))


class LLMSummarizer:
    """Summaries written by a chat model with ``SUMMARY_PROMPT``, cut to the budget if the model runs over. A
    summary that invents names or numbers, or loses most of those it folds (``support.unfaithful``), is refused
    (``ExtractionError``): the turns stay in the window and the buffer's ``fold_error`` says why."""

    needs_model = True  # built with the configured chat model (registry.needs_model)

    def __init__(self, model: ChatModel, prompt: str = SUMMARY_PROMPT) -> None:
        self.model = model
        self.prompt = prompt

    def fold(self, previous: Summary, turns: Sequence[Turn], budget: int) -> Summary:
        convo = "\n".join(f"{t.role}: {t.content}" for t in turns)
        reply = self.model.complete([
            {"role": "system", "content": self.prompt.format(budget=budget)},
            {"role": "user", "content": f"Previous summary:\n{previous.text or '(none)'}\n\nNew turns:\n{convo}"},
        ])
        text = tokens.truncate(reply.strip(), budget)
        why = unfaithful(f"{previous.text}\n{convo}", text)
        if why:
            raise ExtractionError(why, reply)
        return Summary(text, previous.turn_ids + tuple(t.id for t in turns), tokens.count(text))


registry.register("summarizer", "extractive", ExtractiveSummarizer)
registry.register("summarizer", "llm", LLMSummarizer)
