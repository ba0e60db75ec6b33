"""Optional judged-answer metric: a chat model answers each probe from the built context, then grades the answer.

Only with an endpoint configured (``MEMKIT_LLM_*``); it is an extra column beside the retrieval metrics,
never the only one. A reply that cannot be parsed gives NaN and is counted, not dropped silently.
"""

from __future__ import annotations

import math

from ..errors import ExtractionError
from ..models.llm import ChatModel, parse_json
from ..types import Context

ANSWER_PROMPT = """Answer the user's question using only the conversation memory below. If the memory
does not contain the answer, say "I don't know". Answer in one short sentence."""

GRADE_PROMPT = """You grade an assistant's answer against a gold answer. The answer is correct if it
states the gold answer's information (wording may differ); for a gold answer that is empty, the answer is
correct only if it says it does not know. Reply with JSON only: {"correct": true|false}."""


def judge(model: ChatModel, ctx: Context, question: str, gold: str) -> tuple[float, str]:
    """(1.0 correct / 0.0 wrong / NaN unparsable, the model's answer)."""
    memory = "\n".join(f"[{m['role']}] {m['content']}" for m in ctx.messages)
    answer = model.complete([{"role": "system", "content": ANSWER_PROMPT},
                             {"role": "user", "content": f"Memory:\n{memory}\n\nQuestion: {question}"}]).strip()
    reply = model.complete([{"role": "system", "content": GRADE_PROMPT},
                            {"role": "user", "content": f"Question: {question}\nGold answer: {gold}\nAnswer: {answer}"}],
                           json_mode=True)
    try:
        verdict = parse_json(reply)
    except ExtractionError:
        return math.nan, answer
    if not isinstance(verdict, dict) or not isinstance(verdict.get("correct"), bool):
        return math.nan, answer
    return float(verdict["correct"]), answer
