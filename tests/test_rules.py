import re

import pytest

from memkit import RuleExtractor

X = RuleExtractor()

CASES = [
    ("I prefer metric units.", "user.units", "metric"),
    ("Actually, use imperial from now on.", "user.units", "imperial"),
    ("I don't want metric units anymore, give me miles.", "user.units", "imperial"),
    ("我喜欢公制单位", "user.units", "metric"),
    ("Call me Wang Lei.", "user.name", "Wang Lei"),
    ("我叫王磊", "user.name", "王磊"),
    ("I'm a backend engineer.", "user.role", "backend engineer"),
    ("我是一名后端工程师", "user.role", "后端工程师"),
    ("We moved from Go to Python.", "user.language", "Python"),
    ("我现在改用 Python 了", "user.language", "Python"),
    ("I don't use Docker.", "user.uses.docker", "no"),
    ("Our company can't use Docker.", "user.uses.docker", "no"),
    ("We use Kubernetes 1.28.", "user.uses.kubernetes", "kubernetes 1.28"),
    ("My sister Ann is a nurse.", "user.family.sister", "Ann"),
    ("My brother Bob lives in Lyon.", "user.family.brother", "Bob"),
    ("I live in Berlin.", "user.location", "Berlin"),
    ("I'm allergic to peanuts.", "user.allergy.peanuts", "allergic to peanuts"),
    ("I like hiking.", "user.likes.hiking", "likes"),
    ("I don't like hiking anymore.", "user.likes.hiking", "dislikes"),
]


@pytest.mark.parametrize("text,key,value", CASES)
def test_durable_statements_yield_keyed_facts(text, key, value):
    found = {c.key: c for c in X.extract(text, ("t1",))}
    assert key in found, found
    assert found[key].value == value
    assert found[key].source == ("t1",)
    assert found[key].text.startswith("User")


@pytest.mark.parametrize("text", ["Hi there!", "Thanks, that helps.", "It was hot yesterday.", "ok",
                                  "Do you like Python?", "What's the weather in Paris?", "哈哈，好的",
                                  "Today I'm tired.", "Sounds good to me."])
def test_small_talk_questions_and_ephemera_yield_nothing(text):
    assert X.extract(text) == []


@pytest.mark.parametrize("text", ["Took Cleo to the vet, turns out my little cat is just a bit chubby lol.",
                                  "My legs are jelly after that hike.", "My back is killing me.",
                                  "I love their music.", "My laptop is kinda slow."])
def test_chat_that_reads_like_a_fact_is_not_stored(text):
    assert X.extract(text) == []  # a passing state, a joke, or a liking of something said before


@pytest.mark.parametrize("text,fact", [("My car is a Honda Civic.", "User's car is a Honda Civic."),
                                       ("I love hiking in the Alps.", "User loves hiking in the Alps.")])
def test_the_same_shapes_with_durable_content_are_still_facts(text, fact):
    assert [c.text for c in X.extract(text)] == [fact]


def test_one_turn_can_hold_several_facts():
    keys = {c.key for c in X.extract("My name is Lena and I'm a data scientist. I prefer metric units.")}
    assert {"user.name", "user.role", "user.units"} <= keys


def test_negation_flag():
    (c,) = X.extract("I don't use Docker.")
    assert c.negated and "not" in c.text


@pytest.mark.parametrize("text,expected", [
    ("I'm vegetarian and I live in Berlin.",
     {"user.diet": "User is vegetarian.", "user.location": "User lives in Berlin."}),
    ("I'm Bob, I live in Toronto and I'm allergic to peanuts.",
     {"user.name": "User's name is Bob.", "user.location": "User lives in Toronto.",
      "user.allergy.peanuts": "User is allergic to peanuts."}),
    ("I work at Acme, and my sister Ann lives in Lyon.",
     {"user.employer": "User works at Acme.", "user.family.sister": "User's sister is Ann."}),
    # one statement across a comma stays one fact
    ("Ella, my brother, is a pilot.", {"user.family.brother": "Ella, User's brother, is a pilot."}),
    ("Keep in mind that I can't have penicillin, I'm allergic.",
     {"user.allergy.penicillin": "User is allergic to penicillin."}),
])
def test_a_compound_sentence_gives_one_fact_per_clause(text, expected):
    assert {c.key: c.text for c in X.extract(text)} == expected


@pytest.mark.parametrize("text,key,fact", [
    ("I'm not vegetarian anymore, I eat fish now.", "user.diet", "User is no longer vegetarian."),
    ("I no longer live in Berlin.", "user.location", "User no longer lives in Berlin."),
    ("I used to be a teacher.", "user.role", "User is no longer a teacher."),
    ("I used to like sushi.", "user.likes.sushi", "User no longer likes sushi."),
])
def test_a_negated_change_takes_back_the_key(text, key, fact):
    found = {c.key: c for c in X.extract(text)}
    assert list(found) == [key] and found[key].text == fact and found[key].negated


@pytest.mark.parametrize("text,key,fact", [
    ("I changed careers, I'm not a data analyst anymore, I'm a nurse now.", "user.role", "User is a nurse."),
    ("Quick update: I don't live in Austin anymore, I moved to Denver last month.", "user.location",
     "User lives in Denver."),
])
def test_a_new_value_beside_the_one_taken_back_wins(text, key, fact):
    assert [(c.key, c.text) for c in X.extract(text)] == [(key, fact)]


def test_i_am_a_nationality_is_not_a_name():
    assert X.extract("I'm German.") == [] and X.extract("I'm Sorry.") == []


@pytest.mark.parametrize("text,key,value", [
    ("My grocery budget was increased to $550 monthly starting September 15.", "user.grocery_budget", "$550 monthly"),
    ("I've extended my reading challenge goal to 12 books by March 1.", "user.reading_challenge_goal", "12 books"),
    ("I want to reflect the new daily quota of 1,200 calls per day, but I'm not sure how.", "user.daily_quota",
     "1,200 calls per day"),
    ("The unit test coverage for my API integration, which has recently improved to 78%.", "user.unit_test_coverage",
     "78%"),
    ("I've added two new projects, so now I have a total of 10 cards.", "user.cards", "10"),
    # a question that opens with the change still says it
    ("I've adjusted our holiday gift budget to $450, can you help me plan how to allocate it?",
     "user.holiday_gift_budget", "$450"),
])
def test_a_changed_value_yields_a_fact_keyed_by_what_changed(text, key, value):
    found = {c.key: c for c in X.extract(text, ("t1",))}
    assert key in found, found
    assert found[key].value == value and found[key].source == ("t1",)
    assert value.split()[0] in found[key].text


@pytest.mark.parametrize("text,key,fact", [
    ("I'm trying to increase my weekly word count, and I just found out it was adjusted to 1,350 words, so how can I "
     "make sure I meet it?", "user.weekly_word_count", "User's weekly word count was adjusted to 1,350 words."),
    ("I've been tracking my sleep and it's improved to 6.5 hours/night since July.", "user.sleep",
     "User's sleep was improved to 6.5 hours/night."),
    ("I keep cutting my overtime and I've managed to get it down to 4 hours in March.", "user.overtime",
     "User's overtime got down to 4 hours in March."),
])
def test_a_change_said_of_it_is_keyed_by_the_users_thing_named_before_it(text, key, fact):
    assert [(c.key, c.text) for c in X.extract(text) if c.key == key] == [(key, fact)]


@pytest.mark.parametrize("text", [
    "It was moved to 5 PM.",  # what "it" is needs the turn before
    "I love the idea and it was moved to 5 PM.",  # not a thing of the user's
    "I want to reduce my input latency and get it down to 290ms.",  # a goal, not a change
    "I liked my old plan, but it was changed to the new one.",  # no value with a digit
])
def test_a_change_said_of_it_without_a_thing_of_the_users_or_a_value_is_none(text):
    assert not [c for c in X.extract(text) if c.key and c.value and any(ch.isdigit() for ch in c.value)]


@pytest.mark.parametrize("text", ["Could you tell me why my budget was increased to $500?",
                                  "How would my savings have grown to $300 by now?",
                                  "I moved the meeting to Friday.", "If my budget increased to $900, what then?"])
def test_a_value_asked_about_or_without_a_number_is_no_changed_value(text):
    assert not [c for c in X.extract(text) if c.key and c.key.endswith(("budget", "savings", "meeting"))]


def test_a_changed_value_replaces_the_old_one_under_the_keyed_policy():
    from memkit import Memory

    with Memory() as m:
        m.observe("u", "s1", "user", "My snack budget is $50.", time=1.7e9)
        m.observe("u", "s2", "user", "I've increased my snack budget to $65 for the marathon.", time=1.7e9 + 99)
        [fact] = m.store.get("u", where={"key": "user.snack_budget"})
        assert fact.value == "$65" and "$65" in fact.text
        assert "UPDATE" in [e.kind.value for e in m.store.history("u", fact.id)]  # the old value was replaced


@pytest.mark.parametrize("text,fact", [
    # a question that opens with a statement: the statement is read, and only it is the fact
    ("I prefer simple, minimal dependencies, how can I keep my Flask app small?",
     "User prefers simple, minimal dependencies."),
    # a statement followed by a request, without a question mark
    ("I prefer automated deployments over manual ones, can you help me set up the pipeline.",
     "User prefers automated deployments over manual ones."),
    ("I'm vegetarian, so what should I cook tonight.", "User is vegetarian."),
])
def test_a_statement_before_a_request_is_read_without_the_request(text, fact):
    assert fact in [c.text for c in X.extract(text)]
    assert not [c for c in X.extract(text) if re.search(r"\b(how|can you|what should)\b", c.text)]


@pytest.mark.parametrize("text", ["Can you suggest a recipe, I prefer something quick?",
                                  "What do you think, is it worth it?", "How are you, any plans for the weekend?"])
def test_a_question_that_states_nothing_of_the_speaker_gives_no_fact(text):
    assert X.extract(text) == []


def test_a_statement_that_goes_on_after_a_comma_stays_whole():
    from memkit.write.statements import statement_of

    # "which", "is", "when" go on with the statement in a sentence that asks nothing
    for s in ("I live in Lyon, which I love.", "My sister is a nurse, is that not great.",
              "I run in the mornings, when it is cool."):
        assert statement_of(s) == s
    assert statement_of("I use Python, can you review this.") == "I use Python"
