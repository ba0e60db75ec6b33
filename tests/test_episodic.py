import json
import sqlite3

import pytest

from memkit import EpisodicBuffer, InvalidContent, MissingSessionId, MissingUserId, SessionStore
from memkit.models import tokens

LONG_SESSION = [
    ("user", "Hi, I need help planning the database migration."),
    ("assistant", "Sure, tell me about the current setup."),
    ("user", "We use PostgreSQL 12 and must finish before March 31 because of the audit."),
    ("assistant", "Understood: the deadline is March 31."),
    ("user", "lol my coffee machine broke this morning"),
    ("assistant", "Sorry to hear that!"),
    ("user", "We decided to do the cut-over on a Sunday night."),
    ("assistant", "A Sunday night cut-over keeps traffic low."),
    ("user", "The budget is 20 hours of downtime at most."),
    ("assistant", "Noted, 20 hours at most."),
    ("user", "What should the first step be?"),
]


def fill(buf):
    return [buf.append(r, t, turn_id=f"s:{i}") for i, (r, t) in enumerate(LONG_SESSION)]


def test_window_is_bounded_in_tokens_and_summary_covers_the_rest():
    buf = EpisodicBuffer("s", "u", window_tokens=60, summary_tokens=80)
    fill(buf)
    assert buf.window_tokens_used <= 60
    assert len(buf.turns) == len(LONG_SESSION)
    left = [t.id for t in buf.turns[: buf.window_start]]
    assert left and list(buf.summary.turn_ids) == left
    assert buf.summary.tokens == tokens.count(buf.summary.text) <= 80


def test_extractive_summary_keeps_facts_and_decisions_not_chatter():
    buf = EpisodicBuffer("s", "u", window_tokens=40, summary_tokens=200)
    fill(buf)
    assert "March 31" in buf.summary.text
    assert "PostgreSQL" in buf.summary.text
    assert "coffee" not in buf.summary.text


def test_summary_budget_drops_weakest_lines():
    buf = EpisodicBuffer("s", "u", window_tokens=20, summary_tokens=25)
    fill(buf)
    assert 0 < buf.summary.tokens <= 25


def test_newest_turn_is_never_summarised_away():
    buf = EpisodicBuffer("s", "u", window_tokens=5, summary_tokens=50)
    fill(buf)
    huge = buf.append("user", "word " * 500)
    assert buf.window == [huge]
    assert huge.id not in buf.summary.turn_ids


def test_session_persists_and_resumes(tmp_path):
    store = SessionStore(tmp_path / "sessions.db")
    buf = EpisodicBuffer("s1", "u1", window_tokens=60, summary_tokens=80, store=store)
    fill(buf)
    store.close()
    store2 = SessionStore(tmp_path / "sessions.db")
    again = EpisodicBuffer.resume(store2, "s1", "u1", window_tokens=60, summary_tokens=80)
    assert EpisodicBuffer.resume(store2, "s1", "u2") is None  # a session id is its user's own
    assert again.user_id == "u1"
    assert [t.id for t in again.turns] == [t.id for t in buf.turns]
    assert again.window_start == buf.window_start and again.summary == buf.summary
    again.append("user", "One more thing.")
    again.discard()
    assert EpisodicBuffer.resume(store2, "s1", "u1") is None
    assert EpisodicBuffer.resume(store2, "never", "u1") is None
    assert store2.sessions("u1") == []


def test_session_file_of_an_older_memkit_is_migrated(tmp_path):
    path = tmp_path / "old.db"
    db = sqlite3.connect(path)  # the layout memkit 0.2 wrote: sessions keyed by session_id alone
    db.execute("CREATE TABLE sessions (session_id TEXT PRIMARY KEY, user_id TEXT NOT NULL,"
               " window_start INTEGER NOT NULL, summary TEXT NOT NULL)")
    db.execute("CREATE TABLE turns (seq INTEGER PRIMARY KEY AUTOINCREMENT, id TEXT,"
               " session_id TEXT NOT NULL, user_id TEXT, role TEXT, content TEXT, tokens INTEGER, time REAL)")
    db.execute("INSERT INTO sessions VALUES ('mon', 'alice', 0, ?)",
               (json.dumps({"text": "Alice likes tea.", "turn_ids": ["t0"], "tokens": 5}),))
    db.execute("INSERT INTO turns (id, session_id, user_id, role, content, tokens, time)"
               " VALUES ('t1', 'mon', 'alice', 'user', 'I prefer metric units.', 5, 1.0)")
    db.commit()
    db.close()
    store = SessionStore(path)
    buf = EpisodicBuffer.resume(store, "mon", "alice")
    assert [t.content for t in buf.turns] == ["I prefer metric units."] and buf.summary.text == "Alice likes tea."
    bob = EpisodicBuffer("mon", "bob", store=store)  # the old layout refused a second user's "mon"
    bob.append("user", "Hello.")
    store.close()
    again = SessionStore(path)  # opened twice: migrated once
    assert [t.content for t in EpisodicBuffer.resume(again, "mon", "bob").turns] == ["Hello."]
    assert [t.content for t in EpisodicBuffer.resume(again, "mon", "alice").turns] == ["I prefer metric units."]


@pytest.mark.parametrize("bad", ["", "   \n\t", None, 42])
def test_bad_content_is_refused(bad):
    buf = EpisodicBuffer("s", "u")
    with pytest.raises(InvalidContent):
        buf.append("user", bad)
    assert buf.turns == []


def test_ids_are_required():
    with pytest.raises(MissingUserId):
        EpisodicBuffer("s", "")
    with pytest.raises(MissingSessionId):
        EpisodicBuffer(" ", "u")


def test_unusual_but_valid_content_is_kept_verbatim():
    buf = EpisodicBuffer("s", "u", window_tokens=50)
    for text in ["🏃‍♀️🔥 emoji only", "ctrl\x07chars\x1b[31m and \x00 nul", "x" * 1_000_000]:
        assert buf.append("user", text).content == text
    assert buf.window[-1].content == "x" * 1_000_000



def _every_line_scored(summarizer, previous, turns, budget):
    """The fold's definition: score every line that fits the budget, then keep greedily by (score, newest); the
    kept text and how many lines that scores."""
    from memkit.write.rules import SENT_SPLIT

    lines = [line for line in previous.text.split("\n") if line.strip()]
    for t in turns:
        for sentence in (x.strip() for x in SENT_SPLIT.split(t.content)):
            if sentence and f"{t.role}: {sentence}" not in lines:
                lines.append(f"{t.role}: {sentence}")
    costs = [tokens.count(line) + 1 for line in lines]
    fits = [i for i in range(len(lines)) if costs[i] <= budget]
    scores = {i: summarizer.score(lines[i].split(": ", 1)[-1]) for i in fits}
    keep, used = [], 0
    for i in sorted(fits, key=lambda i: (-scores[i], -i)):
        if scores[i] > 0 and used + costs[i] <= budget:
            keep.append(i)
            used += costs[i]
    return "\n".join(lines[i] for i in sorted(keep)), len(fits)


def test_a_fold_keeps_what_scoring_every_line_keeps_and_scores_fewer():
    import random

    from memkit import ExtractiveSummarizer, Turn
    from memkit.write.summarize import Summary

    class Counted(ExtractiveSummarizer):
        calls = 0
        bound = staticmethod(ExtractiveSummarizer.bound)  # its score is the built-in's: so is its bound

        def score(self, sentence):
            Counted.calls += 1
            return ExtractiveSummarizer.score(sentence)

    said = ("I prefer metric units", "we decided to ship on Friday", "the weather was nice", "I live in Lisbon",
            "must finish by March 31", "lol ok", "I don't use Docker", "we will plan the budget", "thanks a lot",
            "my sister is a nurse", "it was 20 degrees", "remember the deadline", "sure thing", "always 2 spaces")
    rng, counted, every = random.Random(7), Counted(), 0
    for _ in range(80):
        previous = Summary()
        for _ in range(rng.randint(1, 5)):
            turns = [Turn(f"t{rng.random()}", "s", "u", rng.choice(["user", "assistant"]),
                          ". ".join(rng.sample(said, rng.randint(1, 8))) + ".") for _ in range(rng.randint(1, 3))]
            budget = rng.choice([0, 5, 12, 25, 60, 400])
            want, scored = _every_line_scored(ExtractiveSummarizer(), previous, turns, budget)
            previous = counted.fold(previous, turns, budget)
            assert previous.text == want and previous.tokens == tokens.count(want)
            every += scored
    # the rule extractor reads only the lines that could still be kept when their bound came up
    assert 0 < Counted.calls < every


def test_a_summarizer_that_scores_otherwise_and_gives_no_bound_keeps_what_scoring_every_line_keeps():
    """Weather lines score far above the built-in bound: without one of its own, every line is scored."""
    from memkit import ExtractiveSummarizer, Turn
    from memkit.write.summarize import Summary

    class Weather(ExtractiveSummarizer):
        def score(self, sentence):
            return 50.0 if "weather" in sentence else ExtractiveSummarizer.score(sentence)

    turns = [Turn(f"t{i}", "s", "u", "user", "I prefer metric units. The weather was nice. We decided to ship.")
             for i in range(3)] + [Turn("t9", "s", "u", "user", "It rained, the weather turned.")]
    want, _ = _every_line_scored(Weather(), Summary(), turns, 12)
    assert "weather" in want and Weather().fold(Summary(), turns, 12).text == want
