"""The question's own time: relative expressions read against ``now``, and a read that ranks that time's
turns up and says so."""

from datetime import datetime

import pytest

from memkit import FactStore, Memory, ReadOptions
from memkit.errors import InvalidArgument
from memkit.read.recall import RecallOptions
from memkit.read.timeframe import DAY, parse

NOW = datetime(2026, 12, 1, 12, 0).timestamp()


@pytest.mark.parametrize("question, start, end", [
    ("What did I ask you two weeks ago?", NOW - 17.5 * DAY, NOW - 10.5 * DAY),
    ("what did we talk about 3 days ago", NOW - 4 * DAY, NOW - 2 * DAY),
    ("What did I say a couple of months ago?", NOW - 75 * DAY, NOW - 45 * DAY),
    ("What did I do yesterday?", datetime(2026, 11, 30).timestamp(), datetime(2026, 12, 1).timestamp()),
    ("Where did I go last week?", datetime(2026, 11, 23).timestamp(), datetime(2026, 11, 30).timestamp()),
    ("What did I plan last month?", datetime(2026, 11, 1).timestamp(), datetime(2026, 12, 1).timestamp()),
    ("What did I cook in May?", datetime(2026, 5, 1).timestamp(), datetime(2026, 6, 1).timestamp()),
    ("What did I cook in December?", datetime(2026, 12, 1).timestamp(), datetime(2027, 1, 1).timestamp()),
])
def test_a_relative_expression_is_a_window_before_the_question_time(question, start, end):
    t = parse(question, NOW)
    assert (t.start, t.end, t.order) == (pytest.approx(start), pytest.approx(end), None)
    assert t.phrase in question.lower()


@pytest.mark.parametrize("question, start, end", [
    ("What did Kate make on 29 Dec 2023?", datetime(2023, 12, 28), datetime(2023, 12, 31)),  # a day either side
    ("What happened on January 5th, 2024?", datetime(2024, 1, 4), datetime(2024, 1, 7)),
    ("Where was she on the 31st of December, 2023?", datetime(2023, 12, 30), datetime(2024, 1, 2)),
    ("What did I cook in May 2023?", datetime(2023, 5, 1), datetime(2023, 6, 1)),  # not the latest May
    ("What was due in Dec. 2025?", datetime(2025, 12, 1), datetime(2026, 1, 1)),
    ("What did Paola do on 10.01.2024?", datetime(2024, 1, 9), datetime(2024, 1, 12)),  # dots: day first
    ("Which class did she attend for the first time on 19.01.2024?", datetime(2024, 1, 18), datetime(2024, 1, 21)),
    ("What shipped on 2024-01-10?", datetime(2024, 1, 9), datetime(2024, 1, 12)),  # ISO
    ("What shipped on 2024-1-9?", datetime(2024, 1, 8), datetime(2024, 1, 11)),
    ("What did I buy on 1/10/2024?", datetime(2024, 1, 9), datetime(2024, 1, 12)),  # slashes: month first
    ("What did I buy on 13/01/24?", datetime(2024, 1, 12), datetime(2024, 1, 15)),  # ... unless it is no month
])
def test_a_named_date_is_a_window_around_it_whenever_the_question_is_asked(question, start, end):
    t = parse(question, NOW)
    assert (t.start, t.end, t.order) == (start.timestamp(), end.timestamp(), None)


def test_a_date_that_is_no_date_names_no_time():
    assert parse("What happened on 31 Feb 2023?", NOW) is None
    assert parse("What happened on 31.02.2023?", NOW) is None


@pytest.mark.parametrize("question", [
    "What changed in version 1.2.3?", "Is 3.14.2024 a date?", "It cost 1.50.", "What is in v10.01.2024.5?",
    "Which of 1.2.300 and 10-20-300 was it?", "What changed in Python 3.11.10?",
])
def test_numbers_with_dots_or_dashes_that_are_no_date_name_no_time(question):
    assert parse(question, NOW) is None


def test_an_order_and_no_time_at_all():
    assert parse("What was my most recent trip?", NOW).order == "latest"
    assert parse("What did I order the first time?", NOW).order == "earliest"
    assert parse("How do I cook rice?", NOW) is None
    assert parse("I may come by", NOW) is None  # "may" the verb is not a month


def _memory(embedder, **options):
    m = Memory(store=FactStore.ephemeral(embedder), read=ReadOptions(**options))
    for days, task in ((14, "a cover letter for the library job"), (3, "a cover letter for the bakery job")):
        t = NOW - days * DAY
        m.observe("u", f"d{days}", "user", f"Could you help me write {task}?", time=t)
        m.observe("u", f"d{days}", "assistant", f"Sure, here is a draft of {task}.", time=t + 60)
        m.end_session("u", f"d{days}")
    return m


def test_a_read_at_the_question_time_ranks_that_times_turns_first_and_says_so(embedder):
    m = _memory(embedder)
    ctx = m.context("u", "q", "Which cover letter did you help me with two weeks ago?", budget=400, now=NOW)
    [first] = [i for i in ctx.parts[1].items if i["rank"] == 1]
    assert "library" in first["text"] and "time #" in first["why"]
    assert any('"two weeks ago"' in n and "ranked up" in n for n in ctx.notes)
    bakery = m.context("u", "q2", "Which cover letter did you help me with 3 days ago?", budget=400, now=NOW)
    assert "bakery" in [i for i in bakery.parts[1].items if i["rank"] == 1][0]["text"]


def test_without_timeframes_the_same_read_ignores_the_expression(embedder):
    m = _memory(embedder, recall=RecallOptions(timeframes=False))
    ctx = m.context("u", "q", "Which cover letter did you help me with two weeks ago?", budget=400, now=NOW)
    assert not any("time #" in i["why"] for i in ctx.parts[1].items) and not any("two weeks ago" in n for n in ctx.notes)


def test_a_question_time_that_is_not_a_time_is_refused(embedder):
    with pytest.raises(InvalidArgument, match="now"):
        _memory(embedder).context("u", "q", "two weeks ago?", now="last Tuesday")
