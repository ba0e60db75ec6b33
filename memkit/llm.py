"""The chat-model seam: a one-method protocol, an OpenAI-compatible client, and JSON parsing that survives real replies."""

from __future__ import annotations

import json
import re
from typing import Any, Protocol, Sequence, runtime_checkable

from .errors import ExtractionError

Messages = Sequence[dict[str, str]]


@runtime_checkable
class ChatModel(Protocol):
    """Anything that answers a list of chat messages with text."""

    def complete(self, messages: Messages, json_mode: bool = False) -> str: ...


class OpenAIChat:
    """A chat model behind any OpenAI-compatible endpoint (OpenAI, DeepSeek, Qwen, vLLM, Ollama, llama.cpp)."""

    def __init__(self, model: str, base_url: str | None = None, api_key: str = "not-needed",
                 temperature: float = 0.0, timeout: float = 60.0, max_retries: int = 1) -> None:
        from openai import OpenAI

        self.model = model
        self.temperature = temperature
        self.client = OpenAI(base_url=base_url, api_key=api_key, timeout=timeout, max_retries=max_retries)
        self._json_mode_supported = True

    def complete(self, messages: Messages, json_mode: bool = False) -> str:
        import openai

        kwargs: dict[str, Any] = {"model": self.model, "messages": list(messages), "temperature": self.temperature}
        if json_mode and self._json_mode_supported:
            try:
                reply = self.client.chat.completions.create(response_format={"type": "json_object"}, **kwargs)
            except openai.BadRequestError:
                self._json_mode_supported = False  # the server refuses JSON mode: ask in plain text
                reply = self.client.chat.completions.create(**kwargs)
        else:
            reply = self.client.chat.completions.create(**kwargs)
        return reply.choices[0].message.content or ""


_FENCE = re.compile(r"```(?:json|JSON)?\s*(.*?)```", re.S)


def parse_json(text: str) -> Any:
    """The first JSON object or array in ``text``, fenced or wrapped in prose; ``ExtractionError`` if none parses."""
    if not text or not text.strip():
        raise ExtractionError("empty reply from the model", text or "")
    candidates = [m.group(1) for m in _FENCE.finditer(text)] + [text]
    decoder = json.JSONDecoder()
    for chunk in candidates:
        for i, ch in enumerate(chunk):
            if ch in "{[":
                try:
                    value, _ = decoder.raw_decode(chunk[i:])
                    return value
                except json.JSONDecodeError:
                    continue
    raise ExtractionError("no valid JSON object in the model reply (truncated or prose only?)", text)
