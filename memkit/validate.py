"""Input checks shared by every entry point, so each bad input fails the same way everywhere."""

from __future__ import annotations

import math
import re
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from .errors import ConfigError, InvalidArgument, InvalidContent, MissingSessionId, MissingUserId

_SURROGATE = re.compile("[\ud800-\udfff]")

MAX_CONTENT_CHARS = 2_000_000
# The sizes a caller may ask for, checked before they reach tantivy or Chroma (which allocate what they are asked
# for: a budget of 10**12 tokens aborted the interpreter); docs/usage.md, "What memkit guarantees"
MAX_BUDGET = 10_000_000  # tokens in one context
MAX_K = 100_000  # items asked of one search (k, a channel's depth, neighbours, passages)
# Times memkit takes (seconds since the epoch): 1900-01-01 to 9999-01-01 UTC, what every date label can write
MIN_TIME = -2_208_988_800.0
MAX_TIME = 253_370_764_800.0
# A store's namespace names files, Chroma collections and a PostgreSQL schema: letters, digits, "_" and "-",
# starting and ending with a letter or digit, at most 40 characters
NAMESPACE = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9_-]{0,38}[A-Za-z0-9])?")


def user_id(value: Any) -> str:
    """A non-empty ``user_id`` string, or ``MissingUserId``."""
    if not isinstance(value, str) or not value.strip():
        raise MissingUserId(f"user_id must be a non-empty string, got {value!r}")
    if _SURROGATE.search(value):
        raise MissingUserId(f"user_id {value!r} holds a lone surrogate, which is not text: pass valid Unicode")
    return value


def session_id(value: Any) -> str:
    """A non-empty ``session_id`` string, or ``MissingSessionId``."""
    if not isinstance(value, str) or not value.strip():
        raise MissingSessionId(f"session_id must be a non-empty string, got {value!r}")
    if _SURROGATE.search(value):
        raise MissingSessionId(f"session_id {value!r} holds a lone surrogate, which is not text: pass valid Unicode")
    return value


def content(value: Any) -> str:
    """Turn content: text, not blank, at most ``MAX_CONTENT_CHARS`` characters; kept verbatim."""
    if not isinstance(value, str):
        raise InvalidContent(f"content must be a string, got {type(value).__name__}")
    if not value.strip():
        raise InvalidContent("content is empty or whitespace only")
    if len(value) > MAX_CONTENT_CHARS:
        raise InvalidContent(f"content has {len(value)} characters; the limit is {MAX_CONTENT_CHARS}: split it")
    if _SURROGATE.search(value):
        raise InvalidContent("content holds a lone surrogate (half of a UTF-16 pair), which is not text: decode "
                             "the input with errors='replace' or pass valid Unicode")
    return value


def positive_int(name: str, value: Any, most: int | None = None) -> int:
    """A positive integer (``k``, ``budget``), at most ``most`` when given, or ``InvalidArgument`` saying what to
    pass."""
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise InvalidArgument(f"{name} must be a positive integer, got {value!r}")
    if most is not None and value > most:
        raise InvalidArgument(f"{name} must be at most {most:,}, got {value:,}")
    return value


def count(name: str, value: Any, most: int | None = None) -> int:
    """A whole number of at least 0 (``passage_tokens``, ``passages_per_turn``: 0 turns the thing off), at most
    ``most`` when given."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise InvalidArgument(f"{name} must be a whole number of at least 0, got {value!r}")
    if most is not None and value > most:
        raise InvalidArgument(f"{name} must be at most {most:,}, got {value:,}")
    return value


def share(name: str, value: Any) -> float:
    """A number from 0 to 1 (``near_repeats``)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= 1:
        raise InvalidArgument(f"{name} must be a number from 0 to 1, got {value!r}")
    return float(value)


def number(name: str, value: Any, low: float, high: float) -> float:
    """A finite number from ``low`` to ``high`` (a similarity floor, a weight); NaN and strings refused."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not low <= value <= high:
        raise InvalidArgument(f"{name} must be a number from {low:g} to {high:g}, got {value!r}")
    return float(value)


def flag(name: str, value: Any) -> bool:
    """An on/off option: True or False only ("false" is a string, and a string is true in Python)."""
    if not isinstance(value, bool):
        raise InvalidArgument(f"{name} must be True or False, got {value!r}")
    return value


def namespace(value: Any) -> str:
    """A store's namespace (``NAMESPACE``), checked before anything is written: it names the records file, the
    lexical index folder, Chroma collections and a PostgreSQL schema, so a separator or ``..`` would write
    outside the store's folder."""
    if not isinstance(value, str) or not NAMESPACE.fullmatch(value):
        raise InvalidArgument(f"namespace must be 1 to 40 letters, digits, '_' or '-', starting and ending with a "
                              f"letter or digit (it names files and collections), got {value!r}")
    return value


def query(value: Any) -> str:
    """A query string (it may be empty: then only the profile and the newest turns are recalled)."""
    if not isinstance(value, str):
        raise InvalidArgument(f"query must be a string, got {type(value).__name__}")
    if _SURROGATE.search(value):
        raise InvalidArgument("query holds a lone surrogate, which is not text: pass valid Unicode")
    return value


def as_date(t: float) -> datetime:
    """The calendar moment of a time, in UTC: memkit reads and writes dates in one explicit zone, so a context
    reads the same on every machine (docs/usage.md, "Times")."""
    return datetime.fromtimestamp(t, tz=timezone.utc)


def epoch(d: datetime) -> float:
    """Seconds since the epoch of a ``datetime``; one without a zone is read as UTC (not the machine's zone)."""
    return (d if d.tzinfo is not None else d.replace(tzinfo=timezone.utc)).timestamp()


def timestamp(value: Any) -> float | None:
    """A turn time: None (now), seconds since the epoch as a finite number, or a ``datetime`` (UTC when it
    names no zone)."""
    return None if value is None else time_point("time", value)


def time_point(name: str, value: Any) -> float:
    """A point in time: seconds since the epoch (a finite number) or a ``datetime``; anything else (a string such
    as "yesterday") is ``InvalidArgument``."""
    if isinstance(value, datetime):
        try:
            value = epoch(value)
        except (OverflowError, ValueError, OSError):
            raise InvalidArgument(f"{name} {value!r} cannot be read as a time") from None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise InvalidArgument(f"{name} must be seconds since the epoch (a finite number) or a datetime, got {value!r}; "
                              f"for a date string use datetime.fromisoformat(...)")
    if not MIN_TIME <= value <= MAX_TIME:
        raise InvalidArgument(f"{name} {value!r} is out of range: memkit takes times from 1900-01-01 to 9999-01-01 "
                              f"(seconds since the epoch from {MIN_TIME:.0f} to {MAX_TIME:.0f})")
    return float(value)


def speaker(value: Any) -> str | None:
    """A speaker's name, or None."""
    if value is None:
        return None
    if not isinstance(value, str) or not value.strip() or _SURROGATE.search(value):
        raise InvalidArgument(f"speaker must be a non-empty name or None, got {value!r}")
    return value


def out_dir(path: str | Path) -> Path:
    """An output folder that exists and can be written, or ``ConfigError`` naming it."""
    p = Path(path)
    try:
        p.mkdir(parents=True, exist_ok=True)
        probe = p / ".memkit-write-probe"
        probe.write_text("")
        probe.unlink()
    except OSError as e:
        raise ConfigError(f"cannot write to {p} ({e.strerror or e}); choose another --out") from None
    return p
