"""FactStore against real Chroma: in-process, on disk, and a `chroma run` server started by the tests."""

from datetime import datetime

import pytest

from conftest import open_store
from memkit import (DimensionMismatch, Event, EventKind, Fact, FactStore, IsolationError, MissingUserId,
                    StoreClosed, StoreUnavailable)
from memkit.store import rank_score


def fact(user, text, fid=None, **kw):
    return Fact(id=fid or f"{user}-{abs(hash(text)) % 10**9}", user_id=user, text=text, **kw)


def test_upsert_get_and_replace_by_id(store):
    store.upsert("u1", [fact("u1", "User prefers metric units.", "f1"), fact("u1", "User's cat is Tom.", "f2")])
    assert {f.id for f in store.get("u1")} == {"f1", "f2"}
    store.upsert("u1", [fact("u1", "User prefers imperial units.", "f1")])
    got = {f.id: f.text for f in store.get("u1")}
    assert got == {"f1": "User prefers imperial units.", "f2": "User's cat is Tom."}


def test_fact_fields_round_trip(store):
    f = Fact(id="f9", user_id="u1", text="User uses Python.", kind="procedural", key="user.language",
             value="Python", importance=0.8, source=("s1:1", "s1:3"), created_at=10.0, valid_from=10.0)
    store.upsert("u1", [f])
    assert store.get("u1") == [f]


def test_similarity_is_higher_when_closer_and_ranked(store):
    store.upsert("u1", [fact("u1", "User prefers metric units.", importance=0.5),
                        fact("u1", "User's cat is named Tom.", importance=0.5)])
    hits = store.search("u1", "Use kilometres please", k=2, min_score=-1)
    assert hits[0].fact.text == "User prefers metric units."
    assert hits[0].similarity > hits[1].similarity
    assert all(-1.0 <= h.similarity <= 1.0 for h in hits)
    exact = store.search("u1", "User prefers metric units.", k=1, min_score=-1)[0]
    assert exact.similarity > 0.99


def test_score_mixes_similarity_and_importance(store):
    store.upsert("u1", [fact("u1", "User prefers metric units.", importance=0.0),
                        fact("u1", "User prefers metric units for running.", importance=1.0)])
    hits = store.search("u1", "User prefers metric units.", k=2, min_score=-1)
    for h in hits:
        assert h.score == pytest.approx(rank_score(h.similarity, h.fact.importance, (0.7, 0.3)))
    assert hits[0].fact.importance == 1.0  # importance lifts the slightly less similar fact
    only_sim = store.search("u1", "User prefers metric units.", k=2, min_score=-1, weights=(1.0, 0.0))
    assert only_sim[0].fact.importance == 0.0


def test_floor_keeps_noise_out(store):
    store.upsert("u1", [fact("u1", "User prefers metric units.", importance=0.5)])
    assert store.search("u1", "it was hot yesterday", min_score=0.35) == []
    assert store.search("u1", "Which units should I use?", min_score=0.35)


@pytest.mark.parametrize("bad", ["", "   ", None, 3, ["u1"]])  # a list: named, not "unhashable"
def test_every_call_needs_a_user_id(store, bad):
    with pytest.raises(MissingUserId):
        store.upsert(bad, [])
    for call in (lambda: store.get(bad), lambda: store.search(bad, "x"), lambda: store.delete(bad, ["x"]),
                 lambda: store.history(bad), lambda: store.record(bad, []) or store.get(bad)):
        with pytest.raises(MissingUserId):
            call()


@pytest.mark.parametrize("other", ["alice2", "alic", "alice'", 'alice" OR 1=1', "alice\x00", "ALICE", "$or"])
def test_no_leak_between_lookalike_user_ids(store, other):
    store.upsert("alice", [fact("alice", "User's bank PIN hint is the cat's name.", "secret")])
    store.upsert(other, [fact(other, "User likes tea.", "tea")])
    assert [f.id for f in store.get(other)] == ["tea"]
    assert [h.fact.id for h in store.search(other, "bank PIN hint", min_score=-1)] == ["tea"]
    assert store.get(other, ids=["secret"]) == []
    store.delete(other, ["secret"])
    assert [f.id for f in store.get("alice")] == ["secret"]


def test_where_naming_a_user_is_refused(store):
    store.upsert("bob", [fact("bob", "User likes tea.", "t1", key="user.drink")])
    for where in ({"user_id": "alice"}, {"$or": [{"key": "user.drink"}, {"user_id": "alice"}]}):
        with pytest.raises(IsolationError):
            store.search("bob", "tea", where=where)
        with pytest.raises(IsolationError):
            store.get("bob", where=where)
    assert [h.fact.id for h in store.search("bob", "tea", where={"key": "user.drink"}, min_score=-1)] == ["t1"]


def test_writing_a_fact_of_another_user_is_refused(store):
    with pytest.raises(IsolationError):
        store.upsert("bob", [fact("alice", "User likes tea.")])
    with pytest.raises(IsolationError):
        store.record("bob", [Event(EventKind.NOOP, "alice")])
    assert store.get("bob") == [] and store.get("alice") == []


def test_history_and_as_of(store):
    old = fact("u1", "User prefers metric units.", "f1", key="user.units", created_at=100.0, valid_from=100.0)
    new = old.evolve(text="User prefers imperial units.", valid_from=200.0)
    store.upsert("u1", [new])
    store.record("u1", [Event(EventKind.ADD, "u1", "f1", None, old, time=100.0),
                        Event(EventKind.UPDATE, "u1", "f1", old, new, time=200.0)])
    assert [e.kind for e in store.history("u1")] == [EventKind.ADD, EventKind.UPDATE]
    assert [f.text for f in store.as_of("u1", 150.0)] == ["User prefers metric units."]
    assert store.as_of("u1", datetime.fromtimestamp(150.0)) == store.as_of("u1", 150.0)
    assert [f.text for f in store.as_of("u1", 250.0)] == ["User prefers imperial units."]
    assert store.as_of("u1", 50.0) == []
    assert store.history("u2") == []


def test_closed_store_raises(store):
    store.close()
    with pytest.raises(StoreClosed):
        store.get("u1")
    with pytest.raises(StoreClosed):
        store.upsert("u1", [fact("u1", "x")])


def test_a_closed_ephemeral_store_leaves_nothing_in_the_process(embedder):
    import chromadb

    def names() -> set[str]:
        return {getattr(c, "name", c) for c in chromadb.EphemeralClient().list_collections()}

    before = names()
    store = FactStore.ephemeral(embedder)
    store.upsert("u1", [fact("u1", "User prefers metric units.")])
    assert names() > before  # its collection lives in the process's one in-memory Chroma system
    store.close()
    assert names() == before  # and goes with it: a long-lived process does not keep every store it opened


@pytest.mark.parametrize("kind", ["persistent", "http"])
def test_facts_and_history_survive_reopening(kind, tmp_path, request, embedder):
    s1 = open_store(kind, tmp_path, request, embedder, namespace="reopen")
    s1.upsert("u1", [fact("u1", "User prefers metric units.", "f1")])
    s1.record("u1", [Event(EventKind.ADD, "u1", "f1", None, s1.get("u1")[0])])
    s1.close()
    s2 = open_store(kind, tmp_path, request, embedder, namespace="reopen")
    assert [f.id for f in s2.get("u1")] == ["f1"]
    assert [e.kind for e in s2.history("u1")] == [EventKind.ADD]
    s2.drop_user("u1")
    assert s2.get("u1") == [] and s2.history("u1") == []
    s2.close()


from chromadb.api.types import EmbeddingFunction  # noqa: E402
from chromadb.utils.embedding_functions import register_embedding_function  # noqa: E402


@register_embedding_function
class TinyEmbedder(EmbeddingFunction):
    """A deterministic 8-d embedder standing in for a different model in the migration test."""

    dimension = 8
    model_id = "tiny"

    def __init__(self) -> None:
        pass

    def __call__(self, input):
        return [[float(len(t) % (i + 2)) + 1.0 for i in range(8)] for t in input]

    @staticmethod
    def name():
        return "tiny-test"

    def get_config(self):
        return {}

    @staticmethod
    def build_from_config(config):
        return TinyEmbedder()


@pytest.mark.parametrize("kind", ["persistent", "http"])
def test_dimension_mismatch_is_refused_with_a_migration_hint(kind, tmp_path, request, embedder):
    s1 = open_store(kind, tmp_path, request, embedder, namespace="dims")
    s1.upsert("u1", [fact("u1", "User prefers metric units.", "f1")])
    s2 = open_store(kind, tmp_path, request, TinyEmbedder(), namespace="dims")
    with pytest.raises(DimensionMismatch, match="copy_user"):
        s2.search("u1", "units")
    with pytest.raises(DimensionMismatch):
        s2.upsert("u1", [fact("u1", "x", "f2")])
    assert [f.id for f in s1.get("u1")] == ["f1"]  # nothing corrupted
    s3 = open_store(kind, tmp_path, request, TinyEmbedder(), namespace="dims-v2")
    assert s1.copy_user("u1", s3) == 1 and [f.text for f in s3.get("u1")] == ["User prefers metric units."]


def test_unreachable_server_is_a_clear_error(embedder):
    from memkit.models.server import free_port

    with pytest.raises(StoreUnavailable, match="unreachable"):
        FactStore.http("127.0.0.1", free_port(), embedder)


def test_collection_names_are_valid_for_any_user_id(embedder):
    s = FactStore.ephemeral(embedder)
    for uid in ["a", "用户", "x" * 2000, "a/b c", "-"]:
        s.upsert(uid, [fact(uid, "User likes tea.", "t")])
        assert [f.id for f in s.get(uid)] == ["t"]
