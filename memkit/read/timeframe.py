"""The question's own time (docs/architecture.md §5): dates it names ("on 31 Dec 2023", "on 10.01.2024",
"in May 2023") and relative expressions ("two weeks ago", "last month", "in May", "most recently", "the first
time") read offline against the time the question is asked, as a window of time or an order that the read uses
to rank episodes (``recall.recall_episodes``). Pure functions of the question and ``now``; English only.
"""

from __future__ import annotations

import calendar
import re
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone

from ..validate import as_date, epoch

DAY = 86400.0
_NUMBERS = {"a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
            "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "couple of": 2, "few": 3}
_UNIT_DAYS = {"day": 1, "week": 7, "month": 30, "year": 365}
_MONTHS = {m.lower(): i for i, m in enumerate(calendar.month_name) if m}
_NUM = r"(\d+|a|an|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|a couple of|a few|couple of|few)"
_AGO = re.compile(rf"\b{_NUM}\s+(day|week|month|year)s?\s+ago\b")
_LAST = re.compile(r"\b(yesterday|last (week|month|year|weekend)|(this|past) (week|month|year))\b")
_IN_MONTH = re.compile(r"\b(?:in|during|back in|on|of) (" + "|".join(_MONTHS) + r")\b")
_MON = r"(jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*\.?"
_DAY_MONTH_YEAR = re.compile(rf"\b(\d{{1,2}})(?:st|nd|rd|th)?(?: of)? {_MON},? (\d{{4}})\b")
_MONTH_DAY_YEAR = re.compile(rf"\b{_MON} (\d{{1,2}})(?:st|nd|rd|th)?,? (\d{{4}})\b")
_MONTH_YEAR = re.compile(rf"\b{_MON},? (\d{{4}})\b")
# a date in digits: 2024-01-10 (ISO), 10.01.2024 (day first, as wherever dots separate a date), 1/10/2024
# (month first, the US order, unless the first number cannot be a month); a two-digit year is 20yy, but not
# after dots (3.11.10 is a version)
_NUMERIC_DATE = re.compile(r"(?<![\d.])(\d{1,4})([./-])(\d{1,2})\2(\d{1,4})(?![\d])(?!\.\d)")
_ABBREVIATED = {name[:3]: i for name, i in _MONTHS.items()}
DATE_MARGIN = 1  # days either side of a named date: what happened then is often told the day after (decisions.md)
_LATEST = re.compile(r"\b(most recent(ly)?|latest|last time|the last|recently|lately|newest)\b")
_EARLIEST = re.compile(r"\b(first time|the first|earliest|originally|at first|initially)\b")


@dataclass(frozen=True)
class Timeframe:
    """What a question says about time: a window ``[start, end]`` (seconds since the epoch) or an ``order``
    (``"latest"`` or ``"earliest"``), and the ``phrase`` that said it."""

    phrase: str
    start: float | None = None
    end: float | None = None
    order: str | None = None

    def describe(self) -> str:
        """How the read used it, for the context's account."""
        if self.order is not None:
            return f'"{self.phrase}": the {self.order} of the recalled turns ranked up'
        return f'"{self.phrase}": turns from {_date(self.start)} to {_date(self.end)} ranked up'


def parse(question: str, now: float) -> Timeframe | None:
    """The timeframe ``question`` names, asked at ``now``; None when it names none. A count of units ago is
    a window of half a unit either side (at least a day); a month name is the latest such month up to ``now``."""
    q = " ".join(question.lower().split())
    named = _named_date(q)
    if named is not None:
        return named
    m = _AGO.search(q)
    if m:
        n = int(m.group(1)) if m.group(1).isdigit() else _NUMBERS[m.group(1).removeprefix("a ").strip()]
        unit = _UNIT_DAYS[m.group(2)]
        half = max(unit / 2, 1.0)
        centre = now - n * unit * DAY
        return Timeframe(m.group(0), centre - half * DAY, centre + half * DAY)
    m = _LAST.search(q)
    if m:
        return _last(m.group(0), now)
    m = _IN_MONTH.search(q)
    if m:
        return _month(m.group(0), _MONTHS[m.group(1)], now)
    for order, pattern in (("latest", _LATEST), ("earliest", _EARLIEST)):
        m = pattern.search(q)
        if m:
            return Timeframe(m.group(0), order=order)
    return None


def _named_date(q: str) -> Timeframe | None:
    """A date the question names ("on 31 Dec 2023", "January 5th, 2024", "10.01.2024": that day and
    ``DATE_MARGIN`` days either side) or a month of a year ("in May 2023"); None for none, or for a date that
    is no date. A date in digits comes first."""
    found = _numeric_date(q)
    for pattern, order in ((_DAY_MONTH_YEAR, "dmy"), (_MONTH_DAY_YEAR, "mdy")):
        m = pattern.search(q) if found is None else None
        if m:
            day, month, year = (m.group(1), m.group(2), m.group(3)) if order == "dmy" else \
                (m.group(2), m.group(1), m.group(3))
            found = (m.group(0), year, _ABBREVIATED[month], day)
    if found is not None:
        phrase, year, month, day = found
        try:
            d = datetime(int(year), int(month), int(day), tzinfo=timezone.utc)
        except ValueError:
            return None
        return Timeframe(phrase, (d - timedelta(days=DATE_MARGIN)).timestamp(),
                         (d + timedelta(days=1 + DATE_MARGIN)).timestamp())
    m = _MONTH_YEAR.search(q)
    if m:
        year, month = int(m.group(2)), _ABBREVIATED[m.group(1)]
        return Timeframe(m.group(0), epoch(datetime(year, month, 1)),
                         epoch(datetime(year + (month == 12), month % 12 + 1, 1)))
    return None


def _numeric_date(q: str) -> tuple[str, str, str, str] | None:
    """``(phrase, year, month, day)`` of a date written in digits (``_NUMERIC_DATE``), or None."""
    m = _NUMERIC_DATE.search(q)
    if m is None:
        return None
    a, sep, b, c = m.groups()
    if len(a) == 4:
        return (m.group(0), a, b, c) if len(c) <= 2 else None
    if len(a) > 2 or len(c) not in (2, 4) or (sep == "." and len(c) == 2):
        return None
    year = c if len(c) == 4 else f"20{c}"
    day_first = sep == "." or int(a) > 12
    return (m.group(0), year, b, a) if day_first else (m.group(0), year, a, b)


def _last(phrase: str, now: float) -> Timeframe:
    """Yesterday, last week / weekend / month / year, this or past week / month / year."""
    d = as_date(now)
    midnight = d.replace(hour=0, minute=0, second=0, microsecond=0)
    if phrase == "yesterday":
        return Timeframe(phrase, (midnight - timedelta(days=1)).timestamp(), midnight.timestamp())
    unit = phrase.split()[-1]
    if phrase.startswith(("this", "past")):
        days = {"week": 7, "month": 31, "year": 366}[unit]
        return Timeframe(phrase, now - days * DAY, now)
    if unit in ("week", "weekend"):
        monday = midnight - timedelta(days=midnight.weekday())
        start = monday - timedelta(days=7) + (timedelta(days=5) if unit == "weekend" else timedelta())
        return Timeframe(phrase, start.timestamp(), monday.timestamp())
    if unit == "month":
        first = midnight.replace(day=1)
        start = (first - timedelta(days=1)).replace(day=1)
        return Timeframe(phrase, start.timestamp(), first.timestamp())
    return Timeframe(phrase, epoch(datetime(d.year - 1, 1, 1)), epoch(datetime(d.year, 1, 1)))


def _month(phrase: str, month: int, now: float) -> Timeframe:
    d = as_date(now)
    year = d.year if month <= d.month else d.year - 1
    return Timeframe(phrase, epoch(datetime(year, month, 1)), epoch(datetime(year + (month == 12), month % 12 + 1, 1)))


def _date(t: float | None) -> str:
    d = as_date(t or 0.0)
    return f"{d.day} {d.strftime('%b %Y')}"
