"""Standing instructions: said once ("Always ... when I ask about ..."), kept as procedural facts, shown first when a
question falls under them (memkit/write/rules.py, memkit/read/recall.instruction_hits)."""

import pytest

from memkit import FactStore, Memory, ReadOptions, RuleExtractor
from memkit.read.recall import RecallOptions

X = RuleExtractor()

INSTRUCTIONS = ["Always quote prices in euros when I ask about hotels.",
                "Always format dates as Month Day, Year when I ask about deadlines.",
                "Never use tables when I ask about recipes."]
CHATTER = ["I'm working on a Flask app for my team.", "The demo went well, the client liked the charts.",
           "My sister visits next week, she loves baking.", "We switched the database to PostgreSQL last month.",
           "The weather has been rainy all week.", "I finished the chapter on graph algorithms."]


@pytest.mark.parametrize("text,key", [
    (INSTRUCTIONS[0], "user.style.quote_prices_euros_when_i_ask_"),
    ("Please always confirm salary figures.", "user.style.confirm_salary_figures"),
    ("From now on, never use emojis in your answers.", "user.style.use_emojis_your_answers"),
    ("I'd like you to always answer in French.", "user.style.answer_french"),
    ("Always be concise.", "user.style.be_concise"),
    ("Always discuss trade-offs.", "user.style.discuss_trade_offs"),
])
def test_a_standing_instruction_is_a_procedural_fact(text, key):
    [c] = X.extract(text, ("t1",))
    assert (c.kind, c.key, c.source) == ("procedural", key, ("t1",))
    assert c.text == "User asks: " + text.rstrip(".") + "."


@pytest.mark.parametrize("text", ["Always a pleasure!", "Never been better.", "I always go running on Sundays.",
                                  "Do you always answer like that?", "Always?", "Never mind.", "Never thought so.",
                                  "Always wanted to see Japan.", "Always works for me."])
def test_what_is_not_a_standing_instruction(text):
    assert not [c for c in X.extract(text) if c.kind == "procedural"]


def test_between_two_people_an_imperative_is_advice_not_an_instruction(embedder):
    m = Memory(store=FactStore.ephemeral(embedder))
    assert m.observe("chat", "s1", "user", "Never use tables when I ask about recipes.", speaker="Ines") == []
    [event] = m.observe("u", "s1", "user", "Never use tables when I ask about recipes.")
    assert event.after.kind == "procedural"


def _user(embedder, **read):
    m = Memory(store=FactStore.ephemeral(embedder), read=ReadOptions(**read))
    for i, text in enumerate(INSTRUCTIONS + CHATTER):
        m.observe("u", f"s{i}", "user", text, time=1_700_000_000.0 + 86_400 * i)
        m.end_session("u", f"s{i}")
    return m


def _instructions(ctx):
    return [i["text"] for i in ctx.parts[0].items if i["why"] == "instruction"]


@pytest.mark.parametrize("question,instruction", [("Which hotel should we book in Lisbon?", INSTRUCTIONS[0]),
                                                  ("When is the final deadline for the report?", INSTRUCTIONS[1])])
def test_a_read_shows_the_instruction_a_question_falls_under_first(embedder, question, instruction):
    ctx = _user(embedder).context("u", "q", question, budget=200)
    assert ctx.parts[0].items[0]["why"] == "instruction"
    assert _instructions(ctx) == [f"User asks: {instruction}"]
    assert instruction not in ctx.parts[1].text  # the fact spares the turn it came from
    assert ctx.tokens <= 200


def test_how_many_instructions_a_read_shows_is_an_option(embedder):
    question = "Which hotel should we book in Lisbon?"
    assert _instructions(_user(embedder, recall=RecallOptions(instructions=0)).context("u", "q", question, 200)) == []
    two = _instructions(_user(embedder, recall=RecallOptions(instructions=2)).context("u", "q", question, 200))
    assert two[0] == f"User asks: {INSTRUCTIONS[0]}" and len(two) <= 2


def test_an_instruction_below_the_floor_is_not_shown(embedder):
    ctx = _user(embedder, min_score=0.99).context("u", "q", "Which hotel should we book in Lisbon?", budget=200)
    assert _instructions(ctx) == []


@pytest.mark.parametrize("bad", [-1, 1.5, True, "1"])
def test_instructions_is_a_count(bad):
    with pytest.raises(ValueError, match="standing instructions"):
        RecallOptions(instructions=bad)


def test_the_profile_reads_the_facts_whose_key_starts_with_a_prefix(store):
    m = Memory(store=store)
    for text in [*INSTRUCTIONS, "I prefer metric units.", "I live in Berlin."]:
        m.observe("u", "s1", "user", text)
    m.observe("other", "s1", "user", INSTRUCTIONS[0])
    standing = store.profile("u", prefix="user.style.")
    assert sorted(f.text for f in standing) == sorted(f"User asks: {t}" for t in INSTRUCTIONS)
    assert {f.key for f in store.profile("u", prefix="user.")} == {f.key for f in store.profile("u")}
    assert store.profile("u", prefix="user_") == [] and store.profile("u", prefix="user.style._") == []
