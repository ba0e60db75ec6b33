"""The person a question names ranks that person's turns up (memkit/subject.py)."""

import pytest

from memkit import FactStore, Memory
from memkit.recall import RecallOptions
from memkit.subject import Subject, named


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


def test_roles_are_not_people():
    assert named("What did the user say to the assistant?", ["user", "assistant"]) is None
    assert named("What did the assistant suggest to Ana?", ["assistant", "Ana"]) == Subject("Ana", "Ana")


def test_the_alias_is_said_as_it_was_named():
    assert Subject("Emi", "Kate").describe() == 'the question names Emi (as "Kate"): their turns ranked up'
    assert Subject("Emi", "emi").describe() == "the question names Emi: their turns ranked up"


def _chat(embedder, **options):
    m = Memory(store=FactStore.ephemeral(embedder), profile_tokens=0, **options)
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
    first = [i for i in ctx.parts[1].items if i["rank"] == 1][0]
    assert first["turn_id"] == "D1:3" and "subject #1" in first["why"]
    assert 'the question names Ines (as "Kate"): their turns ranked up' in ctx.notes
    # the other person's turns are still there, below
    assert {"D1:1", "D1:4", "D1:5"} <= {i["turn_id"] for i in ctx.parts[1].items}


def test_without_subjects_the_same_read_ranks_by_the_words_alone(embedder):
    ctx = _chat(embedder, recall=RecallOptions(subjects=False)).context("chat", "q", "What did Kate do with the cello?",
                                                                          budget=400)
    assert not any("subject" in i["why"] for i in ctx.parts[1].items)
    assert not any("names" in n for n in ctx.notes)
