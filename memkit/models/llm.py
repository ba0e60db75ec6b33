"""The chat-model seam: a one-method protocol, an OpenAI-compatible client, and JSON parsing that survives real replies."""

from __future__ import annotations

import json
import re
import threading
import time
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, Iterator, Protocol, Sequence, runtime_checkable

from .. import registry
from ..config import DEFAULT_MAX_TOKENS
from ..errors import ExtractionError, ModelUnavailable

Messages = Sequence[dict[str, str]]
DEFAULT_TIMEOUT = 20.0   # seconds per request: a slow server never holds a notebook cell for minutes
DEFAULT_RETRIES = 1      # retries (with backoff) on connection errors, 429 and 5xx; never after a timeout
BACKOFF = 0.5            # seconds before the first retry, doubled for each next one
# After this many calls in a row met an endpoint fault, the next calls fail at once (ModelUnavailable: the turn
# waits for flush()) for BREAKER_COOLDOWN seconds, then one call probes the endpoint: a server that is down
# or stuck costs each turn nothing instead of a timeout
BREAKER_AFTER = 3
BREAKER_COOLDOWN = 30.0
# Tokens a reply may take (MEMKIT_LLM_MAX_TOKENS): every request bounds its reply, so a model that does not
# stop cannot run to its context limit behind a single-request server's lock while the client times out.
# Every call's reply fits in 256: a summary (summary_tokens, 200), a plan, a few facts; a cut reply keeps its
# complete facts (extract.candidates_from_json). docs/decisions.md, "Reply bound"
# What a server is asked for, most structured first; a level a server refuses is not asked of it again:
# OpenAI's structured output (json_schema); JSON mode carrying the schema, the form llama.cpp's servers take
# (llama-cpp-python answers json_schema with an HTTP 500); JSON mode; plain text
LEVELS = ("schema", "json+schema", "json", "text")


def make_client(base_url: str | None, api_key: str, timeout: float = DEFAULT_TIMEOUT,
                max_retries: int = DEFAULT_RETRIES) -> Any:
    """The one place an ``openai.OpenAI`` client is built, for chat and embeddings alike."""
    from openai import OpenAI

    return OpenAI(base_url=base_url, api_key=api_key, timeout=timeout, max_retries=max_retries)


def call(what: str, fn: Any, **kwargs: Any) -> Any:
    """Run one endpoint call; every transport or server fault becomes ``ModelUnavailable``."""
    import openai

    try:
        return fn(**kwargs)
    except openai.APITimeoutError as e:
        raise ModelUnavailable(f"{what}: no answer within the timeout (MEMKIT_LLM_TIMEOUT): {e}") from e
    except openai.APIConnectionError as e:
        raise ModelUnavailable(f"{what}: cannot reach the endpoint: {e}") from e
    except openai.RateLimitError as e:
        raise ModelUnavailable(f"{what}: rate limited (429) after retries (MEMKIT_LLM_MAX_RETRIES): {e}") from e
    except openai.APIStatusError as e:
        raise ModelUnavailable(f"{what}: the endpoint answered HTTP {e.status_code}: {e}") from e
    except (openai.APIError, ValueError) as e:  # an empty or non-JSON body
        raise ModelUnavailable(f"{what}: unusable reply from the endpoint ({type(e).__name__}: {e})") from e


_PROBING: ContextVar[bool] = ContextVar("memkit_llm_probing", default=False)


@contextmanager
def probing() -> Iterator[None]:
    """Inside it, an open circuit breaker lets calls through to try the endpoint now (``Memory.flush()``: whoever
    flushes expects the model to be tried, and a model back before the cooldown ends is found at once)."""
    token = _PROBING.set(True)
    try:
        yield
    finally:
        _PROBING.reset(token)


@runtime_checkable
class ChatModel(Protocol):
    """Anything that answers a list of chat messages with text."""

    def complete(self, messages: Messages, json_mode: "bool | dict[str, Any]" = False) -> str: ...


class OpenAIChat:
    """A chat model behind any OpenAI-compatible endpoint (OpenAI, DeepSeek, Qwen, vLLM, Ollama, llama.cpp).

    Every request bounds its reply with ``max_tokens``. ``complete(..., json_mode=schema)`` asks for output
    constrained to that JSON schema (``response_format`` ``json_schema``); a server that refuses it is asked
    for JSON mode, and one that refuses that for plain text, each refusal remembered for this endpoint.

    Replies are streamed (``stream``, MEMKIT_LLM_STREAM): ``timeout`` bounds the whole reply, and a reply still
    coming at its end is cancelled by closing the connection, which is what stops a generation on llama.cpp's
    servers (a non-streamed request is generated to its end behind the server's one model lock, abandoned or
    not). A connection error, 429 or 5xx is retried ``max_retries`` times with backoff; a timeout is not: the
    model had its time. After ``breaker_after`` calls in a row met a fault, calls fail at once for
    ``breaker_cooldown`` seconds, then one probes the endpoint (a circuit breaker)."""

    def __init__(self, model: str, base_url: str | None = None, api_key: str = "not-needed",
                 temperature: float = 0.0, timeout: float = DEFAULT_TIMEOUT, max_retries: int = DEFAULT_RETRIES,
                 max_tokens: int = DEFAULT_MAX_TOKENS, breaker_after: int = BREAKER_AFTER,
                 breaker_cooldown: float = BREAKER_COOLDOWN, stream: bool = True) -> None:
        self.model = model
        self.stream = stream
        self.timeout = timeout
        self.temperature = temperature
        self.max_tokens = max_tokens
        self.max_retries = max_retries
        self._endpoint = (base_url, api_key, timeout)
        self.client = make_client(base_url, api_key, timeout, 0)  # memkit retries, and never after a timeout
        self.level = LEVELS[0]  # the most structured output this endpoint has not refused
        self.breaker_after, self.breaker_cooldown = breaker_after, breaker_cooldown
        self.sent = 0  # requests sent to the endpoint (retries and refused formats included)
        self.failures = 0  # calls in a row that met an endpoint fault
        self.closed_until = 0.0  # monotonic time before which calls fail at once (the breaker is open)
        self._guard = threading.Lock()

    def complete(self, messages: Messages, json_mode: "bool | dict[str, Any]" = False) -> str:
        """The model's answer; ``ModelUnavailable`` on any endpoint fault. ``json_mode``: True for a JSON
        object, a dict for that JSON schema."""
        with self._guard:
            wait = self.closed_until - time.monotonic()
            if wait > 0 and not _PROBING.get():
                raise ModelUnavailable(f"chat: the endpoint failed {self.failures} calls in a row; not asked again "
                                       f"for {wait:.0f} s, then one call probes it")
        try:
            reply = self._create(messages, json_mode)
        except ModelUnavailable:
            with self._guard:
                self.failures += 1
                if self.breaker_after and self.failures >= self.breaker_after:
                    self.closed_until = time.monotonic() + self.breaker_cooldown
            raise
        with self._guard:
            self.failures, self.closed_until = 0, 0.0
        return reply

    def __getstate__(self) -> dict[str, Any]:
        """A copy for another process (``memkit bench --jobs``): the settings, not the connection or the lock."""
        return {k: v for k, v in self.__dict__.items() if k not in ("client", "_guard")}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self.client = make_client(*self._endpoint, 0)
        self._guard = threading.Lock()

    def _create(self, messages: Messages, json_mode: "bool | dict[str, Any]") -> Any:
        """One answer from the endpoint: the output level it takes, the retries a fault allows."""
        import openai

        kwargs: dict[str, Any] = {"model": self.model, "messages": list(messages), "temperature": self.temperature,
                                  "max_tokens": self.max_tokens}
        create = self.client.chat.completions.create
        attempt = 0
        while True:
            level = self._level_for(json_mode)
            formats = {"schema": {"type": "json_schema", "json_schema": {"name": "reply", "schema": json_mode}},
                       "json+schema": {"type": "json_object", "schema": json_mode}, "json": {"type": "json_object"}}
            extra = {"response_format": formats[level]} if level in formats else {}
            try:
                self.sent += 1
                started = time.monotonic()
                if self.stream:
                    return self._read_stream(create(**extra, **kwargs, stream=True), started + self.timeout)
                return _message(create(**extra, **kwargs))
            except ModelUnavailable:
                raise
            except openai.APIStatusError as e:
                if extra and _refuses_format(e):
                    self.level = LEVELS[LEVELS.index(level) + 1]  # this server refuses it: ask for less from now on
                    continue
                if isinstance(e, openai.BadRequestError):
                    raise ModelUnavailable(f"chat: the endpoint refused the request (HTTP 400): {e}") from e
                error: Exception = e
            except Exception as e:  # noqa: BLE001 - translated below, one path for every fault
                error = e
            transient = isinstance(error, (openai.APIConnectionError, openai.RateLimitError, openai.InternalServerError))
            if transient and not isinstance(error, openai.APITimeoutError) and attempt < self.max_retries:
                time.sleep(BACKOFF * 2 ** attempt)
                attempt += 1
                continue
            return call("chat", _reraise, error=error)

    def _read_stream(self, chunks: Any, deadline: float) -> str:
        """The text of a streamed reply; cancelled (the connection closed) when it is still coming at
        ``deadline``, or when the stream breaks or ends before its last chunk (the one with a finish reason):
        ``ModelUnavailable`` either way, so a cut reply is never read as a whole one."""
        response = getattr(chunks, "response", None)
        if response is not None and "event-stream" not in response.headers.get("content-type", "") \
                and "json" in response.headers.get("content-type", ""):
            return _whole_body(chunks, response)  # a server or proxy that answers a stream with one JSON body
        parts, finished = [], False
        try:
            for chunk in chunks:
                if chunk.choices and chunk.choices[0].delta and chunk.choices[0].delta.content:
                    parts.append(chunk.choices[0].delta.content)
                finished = finished or bool(chunk.choices and chunk.choices[0].finish_reason)
                if time.monotonic() > deadline:
                    raise ModelUnavailable(f"chat: the reply was still coming after {self.timeout:g} s "
                                           "(MEMKIT_LLM_TIMEOUT); cancelled")
        except ModelUnavailable:
            raise
        except Exception as e:  # noqa: BLE001 - a broken or stalled stream (httpx's errors are not openai's)
            import httpx
            import openai

            if isinstance(e, (httpx.TimeoutException, openai.APITimeoutError)):
                raise ModelUnavailable(f"chat: the reply stalled for {self.timeout:g} s (MEMKIT_LLM_TIMEOUT); "
                                       "cancelled") from e
            raise ModelUnavailable(f"chat: the reply's stream broke off ({type(e).__name__}: {e})") from e
        finally:
            chunks.close()  # at the deadline: the server sees the client go and stops generating
        if not finished:
            raise ModelUnavailable("chat: the endpoint's streamed reply ended before its last chunk "
                                   f"({len(parts)} pieces received)")
        return "".join(parts)

    def _level_for(self, json_mode: "bool | dict[str, Any]") -> str:
        """What to ask for: the request's own wish, within what the endpoint has not refused."""
        wished = "schema" if isinstance(json_mode, dict) else "json" if json_mode else "text"
        return LEVELS[max(LEVELS.index(wished), LEVELS.index(self.level))]


def _whole_body(chunks: Any, response: Any) -> str:
    """The text of a whole reply sent, by its content type, as one JSON body to a streamed request."""
    try:
        return _message_of(json.loads(response.read()))
    except (ValueError, KeyError, IndexError, TypeError) as e:
        raise ModelUnavailable(f"chat: the endpoint answered a streamed request with a JSON body that holds no "
                               f"message ({type(e).__name__}: {e}); MEMKIT_LLM_STREAM=0 asks it without "
                               "streaming") from e
    finally:
        chunks.close()


def _message_of(body: dict[str, Any]) -> str:
    """The message of a chat completion as JSON (``{"choices": [{"message": {"content": ...}}]}``)."""
    return body["choices"][0]["message"]["content"] or ""


def _message(reply: Any) -> str:
    """The text of a whole (not streamed) reply."""
    try:
        return reply.choices[0].message.content or ""
    except (AttributeError, IndexError, TypeError) as e:
        raise ModelUnavailable(f"chat: the endpoint's reply has no message ({e})") from e


def _refuses_format(error: Any) -> bool:
    """Whether an error status says the server does not take the request's ``response_format``: a 400 or 422
    naming it, or llama-cpp-python's 500 that wraps its own validation error of the field."""
    said = str(error).lower()
    if error.status_code in (400, 422):
        return any(w in said for w in ("response_format", "json", "schema", "grammar"))
    return error.status_code == 500 and "response_format" in said


def _reraise(error: Exception) -> Any:
    raise error


_FENCE = re.compile(r"```(?:json|JSON)?\s*(.*?)```", re.S)


def parse_json(text: str) -> Any:
    """The first JSON object or array in ``text``, fenced or wrapped in prose; ``ExtractionError`` if none parses."""
    if not text or not text.strip():
        raise ExtractionError("empty reply from the model", text or "")
    candidates = [m.group(1) for m in _FENCE.finditer(text)] + [text]
    decoder = json.JSONDecoder(strict=False)  # a raw newline inside a string (llama.cpp's grammars allow one)
    for chunk in candidates:
        for i, ch in enumerate(chunk):
            if ch in "{[":
                try:
                    value, _ = decoder.raw_decode(chunk[i:])
                    return value
                except json.JSONDecodeError:
                    continue
    raise ExtractionError("no valid JSON object in the model reply (truncated or prose only?)", text)


registry.register("chat", "openai", OpenAIChat)  # what Settings.chat_model() builds
