"""Input checks shared by every entry point, so each bad input fails the same way everywhere."""

from __future__ import annotations

from typing import Any

from .errors import InvalidContent, MissingSessionId, MissingUserId

MAX_CONTENT_CHARS = 2_000_000


def user_id(value: Any) -> str:
    """A non-empty ``user_id`` string, or ``MissingUserId``."""
    if not isinstance(value, str) or not value.strip():
        raise MissingUserId(f"user_id must be a non-empty string, got {value!r}")
    return value


def session_id(value: Any) -> str:
    """A non-empty ``session_id`` string, or ``MissingSessionId``."""
    if not isinstance(value, str) or not value.strip():
        raise MissingSessionId(f"session_id must be a non-empty string, got {value!r}")
    return value


def content(value: Any) -> str:
    """Turn content: text, not blank, at most ``MAX_CONTENT_CHARS`` characters; kept verbatim."""
    if not isinstance(value, str):
        raise InvalidContent(f"content must be a string, got {type(value).__name__}")
    if not value.strip():
        raise InvalidContent("content is empty or whitespace only")
    if len(value) > MAX_CONTENT_CHARS:
        raise InvalidContent(f"content has {len(value)} characters; the limit is {MAX_CONTENT_CHARS}: split it")
    return value
