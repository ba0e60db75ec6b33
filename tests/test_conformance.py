"""The vector index seam's conformance checks (memkit/store/conformance.py) on every backend memkit ships, and
on a backend that breaks a promise, to show the checks can fail."""

from __future__ import annotations

import math
import uuid

import chromadb
import pytest

from memkit.store.chroma import ChromaIndex
from memkit.store.conformance import check_text_index, check_vector_index
from memkit.store.postgres import PgVectorIndex
from memkit.store.sql import Database

ALL = ["declares", "nearest_first", "owners_apart", "replace_remove_drop"]


@pytest.mark.parametrize("kind", ["ephemeral", "persistent", "http", "postgres"])
def test_every_vector_index_memkit_ships_keeps_the_seams_promises(kind, tmp_path, request, embedder):
    ns = f"cf{uuid.uuid4().hex[:8]}"
    if kind == "ephemeral":
        make = lambda: ChromaIndex(chromadb.EphemeralClient(), embedder, ns, "ephemeral")  # noqa: E731
    elif kind == "persistent":
        make = lambda: ChromaIndex.persistent(tmp_path / "chroma", embedder, ns)  # noqa: E731
    elif kind == "http":
        port = request.getfixturevalue("chroma_server").port
        make = lambda: ChromaIndex.http("127.0.0.1", port, embedder, ns)  # noqa: E731
    else:
        url = request.getfixturevalue("postgres_url")
        make = lambda: PgVectorIndex(Database.postgres(url, ns), embedder)  # noqa: E731
    assert check_vector_index(make) == ALL


class OneBag:
    """A vector index that keeps every owner's items in one bag: it breaks the seam's isolation promise."""

    dimension = 3

    def __init__(self) -> None:
        self.items: dict[tuple[str, str], list[float]] = {}

    def put(self, owner, user_id, part, ids, vectors):
        self.items.update({(part, i): list(v) for i, v in zip(ids, vectors)})

    def remove(self, owner, user_id, part, ids):
        for i in ids:
            self.items.pop((part, i), None)

    def nearest(self, owner, user_id, vector, n):
        sims = [(p, i, sum(a * b for a, b in zip(v, vector)) / math.sqrt(sum(a * a for a in v)))
                for (p, i), v in self.items.items()]
        return sorted(sims, key=lambda x: -x[2])[:n] if n > 0 else []

    def warm(self, owner, user_id):
        pass

    def drop(self, owner, user_id):
        self.items.clear()

    def close(self):
        pass


def test_a_backend_that_mixes_owners_fails_the_check_that_says_so():
    with pytest.raises(AssertionError, match="an owner finds only its own"):
        check_vector_index(OneBag)
    bag = OneBag()
    bag.collection_name = lambda owner: f"bag-{owner}"  # a collection per owner, without the rest of its calls
    with pytest.raises(AssertionError, match="has collection_name but no owners"):
        check_vector_index(lambda: bag)


class ByOwner:
    """A third vector backend, written from docs/extending.md alone: vectors in a dict, one per owner."""

    def __init__(self, dimension: int = 384) -> None:
        self.dimension = dimension
        self.owners: dict[str, dict[tuple[str, str], list[float]]] = {}

    def put(self, owner, user_id, part, ids, vectors):
        self.owners.setdefault(owner, {}).update({(part, i): list(v) for i, v in zip(ids, vectors)})

    def remove(self, owner, user_id, part, ids):
        for i in ids:
            self.owners.get(owner, {}).pop((part, i), None)

    def nearest(self, owner, user_id, vector, n):
        import numpy as np

        items = list(self.owners.get(owner, {}).items())
        if n <= 0 or not items:
            return []
        m = np.array([v for _, v in items], dtype=np.float32)
        sims = m @ np.asarray(vector, dtype=np.float32) / np.linalg.norm(m, axis=1) / np.linalg.norm(vector)
        return [(items[j][0][0], items[j][0][1], float(sims[j])) for j in np.argsort(-sims)[:n]]

    def warm(self, owner, user_id):
        pass

    def drop(self, owner, user_id):
        self.owners.pop(owner, None)

    def close(self):
        pass


def test_a_third_backend_written_from_the_guide_passes_and_serves_a_memory(embedder):
    from memkit import FactStore, Memory
    from memkit.store.records import Records

    assert check_vector_index(lambda: ByOwner(3)) == ALL
    store = FactStore(ByOwner(), Records(), embedder=embedder)
    with Memory(store=store) as memory:
        memory.observe("alice", "s1", "user", "I prefer metric units.")
        memory.observe("bob", "s1", "user", "I prefer imperial units.")
        assert [f.text for f in store.profile("alice")] == ["User prefers metric units."]
        ctx = memory.context("alice", "s2", "Which units should I use?", budget=200)
        assert "metric" in ctx.text and "imperial" not in ctx.text  # within that user only


TEXT_ALL = ["words_rank", "text_owners_apart", "text_replace_remove_drop", "fill"]


@pytest.mark.parametrize("kind", ["memory", "disk", "postgres"])
def test_every_text_index_memkit_ships_keeps_the_seams_promises(kind, tmp_path, request):
    from memkit.store.lexicon import LexicalIndex
    from memkit.store.postgres import PgTextIndex

    if kind == "memory":
        make = LexicalIndex
    elif kind == "disk":
        make = lambda: LexicalIndex(tmp_path / "words")  # noqa: E731
    else:
        url, ns = request.getfixturevalue("postgres_url"), f"cft{uuid.uuid4().hex[:8]}"
        make = lambda: PgTextIndex(Database.postgres(url, ns))  # noqa: E731
    assert check_text_index(make) == TEXT_ALL


def test_a_text_index_folder_shared_by_two_opens_shows_each_ones_commits_to_the_other(tmp_path):
    # two processes sharing a store open its folder twice: a search reloads only when a commit happened since
    # (its own, or the other's meta.json), and must never miss one
    from memkit.store.lexicon import LexicalIndex

    a, b = LexicalIndex(tmp_path / "words"), LexicalIndex(tmp_path / "words")
    assert b.search("o", "episodes", "kayak", 5) == []
    a.change("o", "episodes", [("e1", "We rented a kayak.")])
    assert [i for i, _ in b.search("o", "episodes", "kayak", 5)] == ["e1"]
    for n in range(2, 5):  # commits one after another, each seen at once, by the other and by its writer
        writer, reader = (a, b) if n % 2 else (b, a)
        writer.change("o", "episodes", [(f"e{n}", "Another kayak trip.")], remove=[f"e{n - 1}"])
        assert [i for i, _ in reader.search("o", "episodes", "kayak", 5)] == [f"e{n}"]
        assert [i for i, _ in writer.search("o", "episodes", "kayak", 5)] == [f"e{n}"]
    a.close(), b.close()


class Substrings:
    """A text index that matches substrings of any owner's text: it breaks the isolation and ranking promises."""

    filled = False

    def __init__(self) -> None:
        self.rows: dict[tuple[str, str], str] = {}

    def mark_filled(self):
        self.filled = True

    def fill(self, rows):
        for owner, part, ref, text in rows:
            self.change(owner, part, [(ref, text)])

    def change(self, owner, part, put, remove=()):
        self.rows.update({(part, ref): text for ref, text in put})
        for ref in remove:
            self.rows.pop((part, ref), None)

    def search(self, owner, part, query, k):
        return [(ref, 1.0) for (p, ref), text in self.rows.items() if p == part and query.lower() in text.lower()][:k]

    def drop(self, owner, parts):
        self.rows.clear()

    def close(self):
        pass


def test_a_text_index_that_matches_substrings_fails_the_check_that_says_so():
    with pytest.raises(AssertionError, match="stemmed"):
        check_text_index(Substrings)


def test_every_registered_policy_and_embedder_gets_a_full_report():
    """The report runs every promise on every built-in policy (but the model's) and embedder, whatever the
    others gave; what does not hold is named: similarity matches by meaning, not by key."""
    from memkit.eval.conformance import report

    rows = report()
    broken = {(name, o.check) for kind, name, o in rows if not o.ok}
    assert {name for kind, name, _ in rows if kind == "policy"} == {"keyed", "temporal", "append", "similarity"}
    assert {name for kind, name, _ in rows if kind == "embedder"} == {"minilm", "e5"}
    assert broken == {("similarity", "one_value_per_key"), ("similarity", "one_reply_one_value")}
    assert all(o.detail for _, _, o in rows if not o.ok)


def test_a_policy_that_adds_everything_is_reported_for_each_promise_it_breaks():
    from dataclasses import dataclass

    from memkit.eval.conformance import embedder_report, policy_report
    from memkit.types import Event, EventKind
    from memkit.write.reconcile import to_fact

    @dataclass(frozen=True)
    class AddAll:
        name = "add-all"
        resolves_at_read = False

        def plan(self, facts, user_id, cands, t):
            return [Event(EventKind.ADD, user_id, (f := to_fact(user_id, c, t)).id, None, f, "add", c.source, t)
                    for c in cands]

        def resolve(self, facts):
            return list(facts)

    outcome = {o.check: o.ok for o in policy_report(AddAll())}
    assert outcome == {"one_value_per_key": False, "one_reply_one_value": False, "repeat_is_not_a_second_fact": False,
                       "history_kept": True, "users_apart": True}

    class Moody:  # a batch changes a text's vector
        def __call__(self, input):
            return [[1.0, float(len(input)), 0.0] for _ in input]

        @staticmethod
        def name():
            return "moody"

        def get_config(self):
            return {}

    assert [o.check for o in embedder_report(Moody()) if not o.ok] == ["batch_is_singles"]
