"""The person a question names ranks that person's turns up (memkit/read/subject.py)."""

import pytest

from memkit import FactStore, Memory, ReadOptions
from memkit.read.recall import PERSON_WEIGHT, RecallOptions
import numpy as np

from memkit.read.subject import Subject, named, named_all, without_words


@pytest.mark.parametrize("query,expected", [
    ("What instrument does Tomek play?", Subject("Tomek", "Tomek")),
    ("Where did ines go on Friday?", Subject("Ines Duarte", "ines")),  # a word of the name, any case
    ("What did Duarte's sister bake?", Subject("Ines Duarte", "Duarte")),
    ("What are Kate's hobbies?", Subject("Ines Duarte", "Kate")),  # an alias
    ("What do Tomek and Ines have in common?", None),  # two people: no one to prefer
    ("What do Tomek and Kate have in common?", None),
    ("Which bike is the fastest?", None),
])
def test_the_one_person_a_question_names(query, expected):
    assert named(query, ["Ines Duarte", "Tomek"], {"Kate": "Ines Duarte"}) == expected


def test_everyone_a_question_names():
    people, aliases = ["Ines Duarte", "Tomek"], {"Kate": "Ines Duarte"}
    assert named_all("What do Tomek and Kate have in common?", people, aliases) == {"Tomek": "Tomek", "Ines Duarte": "Kate"}
    assert named_all("What did the user say to Tomek?", ["user", *people]) == {"Tomek": "Tomek"}
    assert named_all("Which bike is the fastest?", people, aliases) == {}


def test_roles_are_not_people():
    assert named_all("What did the user say to the assistant?", ["user", "assistant"]) == {}
    # named by no one's name, the question is still the user's in a user–assistant memory
    assert named("What did the user say to the assistant?", ["user", "assistant"]) == Subject("user", "")
    assert named("What did the assistant suggest to Ana?", ["assistant", "Ana"]) == Subject("Ana", "Ana")


def test_a_first_person_question_to_a_user_assistant_memory_is_about_the_user():
    assert named("What quota did I set for my app?", ["assistant", "user"]) == Subject("user", "I")
    assert named("我喜欢什么?", ["user", "assistant"]) == Subject("user", "我")
    # a question that names no one: the user's, in a user–assistant memory (not with first_person_only)
    assert named("What quota did the team set?", ["assistant", "user"]) == Subject("user", "")
    assert named("What quota did the team set?", ["assistant", "user"], first_person_only=True) is None
    assert named("What quota did the team set?", ["user"]) is None  # no assistant: not a user–assistant memory
    assert Subject("user", "").describe().startswith("the question names no one")
    assert named("Can you tell me what I set?", ["assistant", "user"]) == Subject("user", "me")  # a request
    assert named("What did I tell Ana?", ["Ana", "Bo"]) == Subject("Ana", "Ana")  # named people: no first person
    assert Subject("user", "my").describe() == 'the question is in the first person ("my"): the user\'s turns ranked up'


@pytest.mark.parametrize("query,expected", [
    ("What did you recommend for my resume?", Subject("assistant", "you recommend")),
    ("Which tools have you suggested so far?", Subject("assistant", "you suggested")),
    ("Remind me of the steps you outlined for my thesis.", Subject("assistant", "you outlined")),
    ("How did you explicitly advise me to pace my runs?", Subject("assistant", "you explicitly advise")),
    ("Could you tell me what I planned?", Subject("user", "me")),  # a request put to the assistant
    ("What do you suggest for my trip?", Subject("user", "my")),  # advice asked for now, not what was said
    ("What did I tell you about my sister?", Subject("user", "I")),
])
def test_a_question_about_what_the_assistant_said_is_about_the_assistant(query, expected):
    assert named(query, ["assistant", "user"]) == expected
    assert named(query, ["assistant", "Ana"]) is None  # a named person's memory: no unnamed user to tell apart


def test_the_users_own_turns_have_a_ranking_of_their_own_with_its_weight():
    assert Subject("user", "my").ranking == "user" and Subject("assistant", "you said").ranking == "assistant"
    assert Subject("Ines Duarte", "Kate").ranking == "subject"
    assert RecallOptions().weight("user") == RecallOptions().weight("subject") == PERSON_WEIGHT > 1.0
    assert RecallOptions().weight("assistant") == 1.0
    assert RecallOptions(weights=(("user", 1.0),)).weight("user") == 1.0


def test_a_read_of_a_user_assistant_memory_ranks_the_users_turns_up_for_my(embedder):
    m = Memory(store=FactStore.ephemeral(embedder), read=ReadOptions(profile_tokens=0))
    m.observe("u", "s1", "user", "The dashboard API answers in 250 ms now.", time=1_700_000_000.0)
    m.observe("u", "s1", "assistant", "Great: a dashboard API at 250 ms is fast; the API docs say 300 ms is typical.",
              time=1_700_000_001.0)
    m.end_session("u", "s1")
    ctx = m.context("u", "q", "How fast is my dashboard API?", budget=300)
    first = [i for i in ctx.parts[1].items if i["rank"] == 1][0]
    assert first["text"].startswith("user: The dashboard API") and "user #1" in first["why"]
    assert any("first person" in n for n in ctx.notes)
    # what the assistant said: its turns rank up
    ctx = m.context("u", "q", "What did you say was typical for my dashboard API?", budget=300)
    first = [i for i in ctx.parts[1].items if i["rank"] == 1][0]
    assert first["text"].startswith("assistant: Great") and "assistant #1" in first["why"]
    assert any("what the assistant said" in n for n in ctx.notes)


def test_the_alias_is_said_as_it_was_named():
    assert Subject("Emi", "Kate").describe() == 'the question names Emi (as "Kate"): their turns ranked up'
    assert Subject("Emi", "emi").describe() == "the question names Emi: their turns ranked up"


def _chat(embedder, **options):
    m = Memory(store=FactStore.ephemeral(embedder), read=ReadOptions(profile_tokens=0, **options))
    turns = [("Tomek", "Hi Kate! The cello is at the repair shop again."),
             ("Ines", "Oh no. Totally forgot to introduce myself, I'm Kate."),
             ("Ines", "I took my cello to a concert hall rehearsal today."),
             ("Tomek", "The cello repair costs more than the concert ticket."),
             ("Tomek", "My cello teacher says the repair is worth it.")]
    for i, (who, text) in enumerate(turns):
        m.observe("chat", "s1", "user" if who == "Ines" else "assistant", text, f"D1:{i + 1}", 1_700_000_000.0 + i, who)
    m.end_session("chat", "s1")
    return m


def test_a_read_ranks_up_the_named_persons_turns_and_says_so(embedder):
    m = _chat(embedder)
    ctx = m.context("chat", "q", "What did Kate do with the cello?", budget=400)
    first = min(ctx.parts[1].items, key=lambda i: i["rank"])  # the best-ranked episode
    assert first["turn_id"] == "D1:3" and "subject #1" in first["why"]
    shown = {i["turn_id"] for i in ctx.parts[1].items}
    assert not any(set(f["source"]) <= shown for f in ctx.parts[0].items)  # her name fact, or its turn: not both
    assert 'the question names Ines (as "Kate"): their turns ranked up' in ctx.notes
    # the other person's turns are still there, below
    assert {"D1:1", "D1:4", "D1:5"} <= {i["turn_id"] for i in ctx.parts[1].items}


def test_without_subjects_the_same_read_ranks_by_the_words_alone(embedder):
    ctx = _chat(embedder, recall=RecallOptions(subjects=False)).context("chat", "q", "What did Kate do with the cello?",
                                                                          budget=400)
    assert not any("subject" in i["why"] for i in ctx.parts[1].items)
    assert not any("names" in n for n in ctx.notes)


def test_a_question_about_a_named_person_gets_no_profile_block(embedder):
    m = Memory(store=FactStore.ephemeral(embedder))  # the default profile block
    m.observe("chat", "s1", "user", "I'm a nurse. I live in Oslo.", "D1:1", 1_700_000_000.0, "Ines")
    m.observe("chat", "s1", "assistant", "I'm a teacher.", "D1:2", 1_700_000_001.0, "Tomek")
    m.observe("chat", "s1", "assistant", "I play the cello.", "D1:3", 1_700_000_002.0, "Tomek")
    m.end_session("chat", "s1")
    about = m.context("chat", "q", "What does Tomek play?", budget=400)
    assert not any(i["why"] == "profile" for i in about.parts[0].items)
    both = m.context("chat", "q1", "What do Tomek and Ines do?", budget=400)  # two people: theirs by recall
    assert not any(i["why"] == "profile" for i in both.parts[0].items)
    anyone = m.context("chat", "q2", "Who plays an instrument?", budget=400)  # no one named: the block is back
    assert any(i["why"] == "profile" for i in anyone.parts[0].items)


def test_by_default_the_name_no_longer_pulls_short_lines_up(embedder):
    def first_lexical(options):
        m = Memory(store=FactStore.ephemeral(embedder), read=ReadOptions(profile_tokens=0, recall=options))
        for i, (who, text) in enumerate([("Sam", "Ugh, Mondays."), ("Ana", "Did you practise, Sam?"),
                                         ("Sam", "Yes, an hour of cello scales before the orchestra rehearsal.")]):
            m.observe("c", "s1", "user" if who == "Sam" else "assistant", text, f"D1:{i}", 1_700_000_000.0 + i, who)
        m.end_session("c", "s1")
        items = m.context("c", "q", "What instrument does Sam play?", budget=300).parts[1].items
        return [i["text"] for i in items if "lexical #1" in i["why"]]

    assert first_lexical(RecallOptions(subject_words=True)) == ["Sam: Ugh, Mondays."]  # the name: the only shared word
    assert first_lexical(RecallOptions()) == []  # the default searches "instrument play", which matches no line


def _practice(embedder, **options):
    m = Memory(store=FactStore.ephemeral(embedder), read=ReadOptions(profile_tokens=0, **options))
    for i, (who, text) in enumerate([("Sam", "Ugh, Mondays."), ("Ana", "Did you practise, Sam?"),
                                     ("Sam", "Yes, an hour of cello scales before the orchestra rehearsal."),
                                     ("Ana", "Hi Sam!"), ("Sam", "Bye Ana!")]):
        m.observe("c", "s1", "user" if who == "Sam" else "assistant", text, f"D1:{i}", 1_700_000_000.0 + i, who)
    m.end_session("c", "s1")
    return m


@pytest.mark.parametrize("query", ["What instrument does Sam play?", "What do Sam and Ana practise?"])
def test_the_dense_channel_searches_without_the_names_a_question_gives(embedder, query):
    """Every line carries its speaker's name, so a question's names are what its short lines match best; by
    default the dense channel, like the lexical one, searches without them (``dense_names`` keeps them)."""
    def similarities(m, text):
        q = np.asarray(m.store.embed_query(text))
        shown = m.context("c", "q", query, budget=300).parts[1].items
        assert shown and all(not np.isnan(i["similarity"]) for i in shown)
        return [(i["similarity"], float(q @ np.asarray(embedder([i["text"]])[0]))) for i in shown]

    stripped = without_words(query, {"sam", "ana"})
    assert stripped in ("What instrument does play?", "What do and practise?")
    for m, searched, other in ((_practice(embedder), stripped, query),
                               (_practice(embedder, recall=RecallOptions(dense_names=True)), query, stripped)):
        for got, expected in similarities(m, searched):
            assert got == pytest.approx(expected, abs=1e-3)  # the account shows 3 decimals
        assert any(abs(got - wrong) > 0.01 for got, wrong in similarities(m, other))


def test_a_question_that_names_both_people_searches_without_both_names(embedder):
    m = _practice(embedder)
    items = m.context("c", "q", "What do Sam and Ana practise?", budget=300).parts[1].items
    lexical = [i["text"] for i in items if "lexical" in i["why"]]
    assert lexical == ["Ana: Did you practise, Sam?"]  # "practise" alone: not every line that says a name
    kept = _practice(embedder, recall=RecallOptions(subject_words=True)).context(
        "c", "q", "What do Sam and Ana practise?", budget=300).parts[1].items
    assert len([i for i in kept if "lexical" in i["why"]]) == 5  # with the names, every line matches


@pytest.mark.parametrize("query,expected", [
    ("What did Muhammad cook on Friday?", Subject("Muhhamed", "Muhammad")),  # a spelling that sounds alike
    ("Where does Elisa work?", Subject("elise", "Elisa")),
    ("What did Katie paint?", Subject("Ines Duarte", "Katie")),  # a spelling of an alias
    ("What did muhammad cook?", None),  # a name is written with a capital: lowercase words are not tried
    ("Where does Keith live?", None),  # alike to "Kevin" to the eye, not to the ear
    ("Where does Kevin live?", Subject("Kevin", "Kevin")),
])
def test_a_name_spelt_another_way_names_that_person(query, expected):
    assert named(query, ["Muhhamed", "elise", "Ines Duarte", "Kevin"], {"Kate": "Ines Duarte"}) == expected


def test_spelling_variants_can_be_switched_off_and_never_pick_between_two_people():
    assert named("What did Muhammad cook?", ["Muhhamed", "Akib"], variants=False) is None
    assert named_all("Did Elisa call?", ["Elise", "Eliza"]) == {}  # a name spelt exactly names only its own person
    assert named_all("Did Elisse call?", ["Elise", "Elisa"]) == {}  # alike to both: neither


def test_a_read_ranks_up_the_turns_of_a_name_spelt_another_way(embedder):
    m = _chat(embedder)
    ctx = m.context("chat", "q", "What did Katie do with the cello?", budget=400)
    first = min(ctx.parts[1].items, key=lambda i: i["rank"])
    assert first["turn_id"] == "D1:3" and "subject #1" in first["why"]
    assert 'the question names Ines (as "Katie"): their turns ranked up' in ctx.notes
    off = _chat(embedder, recall=RecallOptions(name_variants=False)).context(
        "chat", "q", "What did Katie do with the cello?", budget=400)
    assert not any("names" in n for n in off.notes)
