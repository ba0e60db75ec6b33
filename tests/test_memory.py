import pytest
from datetime import datetime

from conftest import ChromaServer
from memkit import (EventKind, FactStore, InvalidContent, Memory, MissingSessionId, MissingUserId, ReadOptions,
                    SessionStore, StoreUnavailable)
from memkit.models import tokens
from memkit.lab.demo import play


def test_tuesday_friday_story(embedder):
    memory, friday, without = play(Memory(store=FactStore.ephemeral(embedder)))
    assert "metric" in friday.text and "metric" not in without.text
    assert friday.tokens <= friday.budget
    facts = next(p for p in friday.parts if p.name == "facts")
    assert any("metric" in i["text"] for i in facts.items)
    assert memory.session("demo-user", "friday").window[-1].id == "fri:1"


def test_observe_returns_events_and_profile(embedder):
    m = Memory(store=FactStore.ephemeral(embedder))
    ev = m.observe("u", "s", "user", "Call me Wang Lei. I prefer metric units.")
    assert sorted(e.kind.value for e in ev) == ["ADD", "ADD"]
    assert m.observe("u", "s", "assistant", "Nice to meet you, Wang Lei.") == []
    assert m.observe("u", "s", "user", "It was hot yesterday.") == []
    m.observe("u", "s", "user", "Actually I prefer imperial units.")
    prof = m.profile("u")
    assert "Wang Lei" in prof and "imperial" in prof and "metric" not in prof
    assert Memory(store=FactStore.ephemeral(embedder)).profile("nobody") == "User profile: (empty)"


def test_context_priority_budget_and_account(embedder):
    m = Memory(store=FactStore.ephemeral(embedder), window_tokens=80, summary_tokens=60)
    m.observe("u", "s", "user", "I prefer metric units.")
    for i in range(12):
        m.observe("u", "s", "assistant", f"Step {i}: we agreed the deadline is day {i} and the budget is {i} hours.")
    m.observe("u", "s", "user", "How many kilometres is the route?")
    for budget in (40, 120, 400):
        ctx = m.context("u", "s", "How many kilometres is the route?", budget=budget)
        assert ctx.tokens <= budget
        assert [p.name for p in ctx.parts] == ["facts", "episodes", "summary", "turns"]
        assert ctx.messages[-1]["content"].startswith("How many kilometres")  # newest turn always present
        assert not ctx.parts[1].items  # this session's turns are in the window or summary, never twice as episodes
        for p in ctx.parts[:3]:
            assert p.tokens == tokens.count(p.text)
        turns = [msg["content"] for msg in ctx.messages if msg["role"] != "system"]
        assert ctx.parts[3].tokens == sum(tokens.count(t) for t in turns)
    big = m.context("u", "s", "How many kilometres is the route?", budget=400)
    assert "metric" in big.messages[0]["content"]
    assert big.parts[2].text  # a summary of turns that left the window


def test_documents_rank_below_memory_and_are_never_written(embedder):
    store = FactStore.ephemeral(embedder)
    docs = ["I prefer tabs over spaces, says the style guide.", "Docs: the API is rate limited."]
    m = Memory(store=store, retriever=lambda q: docs, read=ReadOptions(document_share=0.3))
    m.observe("u", "s", "user", "I prefer metric units.")
    ctx = m.context("u", "s", "what units and style?", budget=300)
    assert [p.name for p in ctx.parts] == ["facts", "episodes", "summary", "turns", "documents"]
    assert ctx.parts[-1].tokens <= 90
    assert ctx.messages[-1]["role"] == "user"
    assert all("tabs" not in f.text for f in store.get("u"))
    assert "tabs" not in m.profile("u")


@pytest.mark.parametrize("content", ["", "   ", None])
def test_bad_content(embedder, content):
    m = Memory(store=FactStore.ephemeral(embedder))
    with pytest.raises(InvalidContent):
        m.observe("u", "s", "user", content)


def test_missing_ids(embedder):
    m = Memory(store=FactStore.ephemeral(embedder))
    with pytest.raises(MissingUserId):
        m.observe("", "s", "user", "hi")
    with pytest.raises(MissingSessionId):
        m.observe("u", "", "user", "hi")
    with pytest.raises(MissingUserId):
        m.context(None, "s", "q")


def test_huge_and_odd_content_is_kept_and_bounded(embedder):
    m = Memory(store=FactStore.ephemeral(embedder))
    big = "I prefer metric units. " + "log line\n" * 110_000
    m.observe("u", "s", "user", big)
    m.observe("u", "s", "user", "🏃‍♀️ \x07\x1b[31m ok 🔥")
    assert m.session("u", "s").turns[0].content == big
    ctx = m.context("u", "s", "units?", budget=200)
    assert ctx.tokens <= 200
    assert "User prefers metric units." in m.profile("u")


def test_two_users_may_share_a_session_id(tmp_path, embedder):
    m = Memory(store=FactStore.ephemeral(embedder), sessions=SessionStore(tmp_path / "s.db"))
    m.observe("alice", "mon", "user", "I prefer metric units.")
    m.observe("bob", "mon", "user", "I prefer imperial units.")
    assert [t.content for t in m.session("alice", "mon").turns] == ["I prefer metric units."]
    assert [t.content for t in m.session("bob", "mon").turns] == ["I prefer imperial units."]
    ctx = m.context("alice", "mon", "Which units?", budget=300)
    assert "imperial" not in str(ctx.messages) and "metric" in str(ctx.messages)
    m.end_session("alice", "mon", keep=True)
    m.end_session("bob", "mon", keep=False)  # bob's discard leaves alice's kept session alone
    again = Memory(store=m.store, sessions=SessionStore(tmp_path / "s.db"))
    assert [t.content for t in again.session("alice", "mon").turns] == ["I prefer metric units."]
    assert again.session("bob", "mon").turns == []


def test_sessions_resume_from_sqlite(tmp_path, embedder):
    store = FactStore.ephemeral(embedder)
    m = Memory(store=store, sessions=SessionStore(tmp_path / "s.db"))
    m.observe("u", "s1", "user", "We will ship on Friday.")
    m.end_session("u", "s1", keep=True)
    m2 = Memory(store=store, sessions=SessionStore(tmp_path / "s.db"))
    assert [t.content for t in m2.session("u", "s1").turns] == ["We will ship on Friday."]
    assert m2.session("v", "s1").turns == []


def test_unreachable_server_loses_nothing(tmp_path, embedder):
    server = ChromaServer(tmp_path / "srv").start()
    try:
        m = Memory(store=FactStore.http("127.0.0.1", server.port, embedder))
        m.observe("u", "s", "user", "I prefer metric units.")
        server.stop()
        with pytest.raises(StoreUnavailable):
            m.observe("u", "s", "user", "My name is Lena.")
        assert m.session("u", "s").turns[-1].content == "My name is Lena."
        assert m.pending and m.pending[0][1][0].key == "user.name"
        server.start()
        m.store = FactStore.http("127.0.0.1", server.port, embedder)
        assert [e.kind for e in m.flush()] == [EventKind.ADD]
        assert "Lena" in m.profile("u") and not m.pending
    finally:
        server.stop()


def test_a_change_of_mind_said_as_a_negation_supersedes_the_old_fact(embedder):
    m = Memory(store=FactStore.ephemeral(embedder))
    m.observe("u", "tue", "user", "I'm vegetarian and I live in Berlin.")
    m.observe("u", "wed", "user", "I moved to Lisbon.")
    m.observe("u", "thu", "user", "I'm not vegetarian anymore, I eat fish now.")
    current = {f.key: f.text for f in m.store.profile("u")}
    assert current == {"user.location": "User lives in Lisbon.", "user.diet": "User is no longer vegetarian."}
    text = "\n".join(x["content"] for x in m.context("u", "fri", "Where do I live and what do I eat?", 400).messages)
    assert "User lives in Lisbon." in text and "Berlin" not in text and "User is vegetarian." not in text


def test_the_budget_plan_shares_a_read_before_anything_is_read():
    from memkit.read.budget import plan_budget

    p = plan_budget(1000, [50, 30, 400], documents=True, document_share=0.25, window_share=0.3, profile_tokens=150, depth=50)
    assert (p.documents, p.memory) == (250, 750)
    assert (p.newest, p.reserve) == (400, 400)  # the newest turn whole, beyond the window's 30% share
    assert (p.profile, p.episode_depth, p.page) == (112, 100, 100)  # profile at most 15% of what is left
    small = plan_budget(100, [], False, 0.25, 0.3, 150, 50)
    assert (small.documents, small.reserve, small.profile, small.episode_depth, small.page) == (0, 0, 15, 50, 10)


def test_message_headers_are_an_option_and_the_context_derives_its_ids_from_its_parts(embedder):
    from memkit import ConfigError, FactStore

    m = Memory(store=FactStore.ephemeral(embedder), read=ReadOptions(headers={"facts": "Known about the user:"}, episodes=False))
    m.observe("u", "s1", "user", "I prefer metric units.")
    m.observe("u", "s2", "user", "Which units should I use?")
    ctx = m.context("u", "s2", "Which units should I use?", budget=300)
    assert ctx.messages[0]["content"] == "Known about the user:\n- User prefers metric units."
    assert ctx.fact_ids == tuple(item["id"] for item in ctx.parts[0].items) and len(ctx.fact_ids) == 1
    turns = next(p for p in ctx.parts if p.name == "turns")
    assert ctx.turn_ids[:len(turns.items)] == tuple(item["turn_id"] for item in turns.items)
    with pytest.raises(ConfigError, match="unknown headers"):
        ReadOptions(headers={"fact": "x"})


def test_memory_is_a_context_manager_that_closes_only_the_store_it_made(embedder):
    from memkit import StoreClosed

    with Memory(store=FactStore.ephemeral(embedder)) as given:
        given.observe("u", "s", "user", "I live in Oslo.", time=datetime(2026, 3, 3, 9))  # a datetime is a time
    assert given.store.count("u") == 1  # still open: the caller made it
    given.store.close()
    with Memory() as made:
        made.observe("u", "s", "user", "I live in Oslo.")
    with pytest.raises(StoreClosed):
        made.store.count("u")


def test_read_options_passed_one_by_one_still_work_and_warn(embedder):
    store = FactStore.ephemeral(embedder)
    with pytest.warns(DeprecationWarning, match=r"read=ReadOptions"):
        old = Memory(store=store, k=3, profile_tokens=0)
    assert old.read_options == ReadOptions(k=3, profile_tokens=0)
    with pytest.warns(DeprecationWarning):
        both = Memory(store=store, read=ReadOptions(k=3), profile_tokens=0)  # on top of the read options given
    assert (both.read_options.k, both.read_options.profile_tokens) == (3, 0)
    with pytest.raises(TypeError, match="unexpected keyword arguments \\['bogus'\\]"):
        Memory(store=store, bogus=1)


def test_the_open_sessions_are_named_apart_from_the_session_store(embedder):
    m = Memory(store=FactStore.ephemeral(embedder))
    m.observe("u", "s1", "user", "I prefer metric units.")
    assert list(m.open_sessions) == [("u", "s1")] and m.sessions_store is None
    with pytest.warns(DeprecationWarning, match="open_sessions"):
        assert m.sessions is m.open_sessions
