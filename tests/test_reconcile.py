import pytest

from memkit import EventKind, FactStore, RuleExtractor
from memkit.write import reconcile

X = RuleExtractor()


def play(store, user, policy, texts, t0=1000.0):
    out = []
    for i, text in enumerate(texts):
        events = reconcile.plan(policy, store, user, X.extract(text, (f"t{i}",)), t=t0 + i)
        reconcile.apply(store, user, events)
        out.append(events)
    return out


@pytest.fixture
def s(embedder):
    return FactStore.ephemeral(embedder)


def test_keyed_change_of_mind_leaves_one_current_fact_and_history(s):
    play(s, "u", "keyed", ["I prefer metric units.", "Actually, I prefer imperial units now."])
    assert [f.value for f in s.get("u")] == ["imperial"]
    kinds = [e.kind for e in s.history("u")]
    assert kinds == [EventKind.ADD, EventKind.UPDATE]
    assert s.history("u")[1].before.value == "metric"
    assert [f.value for f in s.as_of("u", 1000.5)] == ["metric"]


def test_keyed_repeat_is_noop(s):
    events = play(s, "u", "keyed", ["I prefer metric units.", "Like I said, I prefer metric units."])
    assert events[1][0].kind == EventKind.NOOP and s.count("u") == 1


def test_temporal_keeps_superseded_versions_queryable(s):
    play(s, "u", "temporal", ["I prefer metric units.", "Actually use imperial from now on."])
    current = s.get("u")
    everything = s.get("u", include_superseded=True)
    assert [f.value for f in current] == ["imperial"]
    old = next(f for f in everything if f.value == "metric")
    assert old.valid_to == 1001.0 and old.superseded_by == current[0].id
    assert [f.value for f in s.as_of("u", 1000.5)] == ["metric"]
    assert [f.value for f in s.as_of("u", 1001.5)] == ["imperial"]


def test_append_adds_and_newest_wins_at_read_time(s, embedder):
    from memkit import Memory

    m = Memory(store=s, policy="append")
    m.observe("u", "s1", "user", "I prefer metric units.", time=1000.0)
    m.observe("u", "s1", "user", "I prefer imperial units.", time=2000.0)
    assert s.count("u") == 2
    hits = m.search("u", "Which units do I prefer?")
    assert [h.fact.value for h in hits if h.fact.key == "user.units"] == ["imperial"]


def test_similarity_threshold_known_failures(s):
    # 1. a contradiction phrased differently stays as a duplicate
    play(s, "u1", "similarity", ["I prefer metric units.", "I don't want metric units anymore, give me miles."])
    assert sorted(f.value for f in s.get("u1")) == ["imperial", "metric"]
    # 2. two different facts that read alike overwrite each other
    alike = ["I like hiking in the Alps.", "I like skiing in the Alps.",
             "My work laptop is a MacBook.", "My home laptop is a MacBook."]
    play(s, "u2", "similarity", alike)
    assert len(s.get("u2")) == 2
    # the keyed policy keeps all four and resolves the contradiction
    play(s, "u3", "keyed", alike)
    assert len(s.get("u3")) == 4
    play(s, "u4", "keyed", ["I prefer metric units.", "I don't want metric units anymore, give me miles."])
    assert [f.value for f in s.get("u4")] == ["imperial"]


def test_plan_writes_nothing(s):
    events = reconcile.plan("keyed", s, "u", X.extract("I prefer metric units."))
    assert [e.kind for e in events] == [EventKind.ADD]
    assert s.get("u") == [] and s.history("u") == []


def test_unknown_policy(s):
    with pytest.raises(ValueError, match="choose one of"):
        reconcile.plan("magic", s, "u", [])


def test_fold_is_the_one_rule_from_events_to_fact_state():
    from memkit.types import Event, EventKind, Fact, current, fold

    a = Fact(id="a", user_id="u", text="User lives in Rome.", key="user.location")
    a2 = a.evolve(text="User lives in Oslo.", valid_from=2.0)
    b = Fact(id="b", user_id="u", text="User prefers metric units.", key="user.units")
    b_closed = b.evolve(valid_to=3.0, superseded_by="c")
    c = Fact(id="c", user_id="u", text="User prefers imperial units.", key="user.units")
    events = [Event(EventKind.ADD, "u", "a", None, a), Event(EventKind.ADD, "u", "b", None, b),
              Event(EventKind.UPDATE, "u", "a", a, a2), Event(EventKind.NOOP, "u", "a", a2, a2),
              Event(EventKind.INVALIDATE, "u", "b", b, b_closed), Event(EventKind.ADD, "u", "c", None, c)]
    state = fold(events)
    assert state == {"a": a2, "b": b_closed, "c": c} and [f.id for f in current(state)] == ["a", "c"]
    after = fold([Event(EventKind.DELETE, "u", "a", a2, None)], state)
    assert after["a"] is None and state["a"] == a2  # pure: the fold it started from is unchanged
    assert [f.id for f in current(after)] == ["c"]
