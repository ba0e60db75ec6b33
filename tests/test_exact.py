"""The dense search of an embedded Chroma store: exact for users of up to ``EXACT_ITEMS`` items, following every
write of the process, bounded in memory, and Chroma's graph beyond (memkit/store/exact.py)."""

import subprocess
import sys
import uuid

import chromadb
import numpy as np
import pytest

from memkit.store import exact
from memkit.store.chroma import ChromaIndex


def _unit(m):
    m = np.asarray(m, dtype=np.float32)
    return m / np.linalg.norm(m, axis=-1, keepdims=True)


def _sims(items: dict, q) -> dict:
    ids = list(items)
    return dict(zip(ids, map(float, _unit(np.stack([items[i] for i in ids])) @ _unit(q))))


def _truth(items: dict, q, n):
    """The brute-force ranking: cosine similarity, ties to the earlier id (as ``nearest`` orders them)."""
    sims = _sims(items, q)
    return sorted(sims, key=lambda i: (-sims[i], len(i), i))[:n]


def _ranked_as_truth(found, items, q, n) -> bool:
    """``found`` is the exact top ``n`` up to float rounding: n items, none below the true n-th, in order."""
    sims = _sims(items, q)
    nth = sims[_truth(items, q, n)[-1]]
    got = [sims[i] for i in found]
    return len(found) == n and min(got) >= nth - 1e-6 and all(a >= b - 1e-6 for a, b in zip(got, got[1:]))


def _ids(index, q, n, owner="o", user="u"):
    return [i for _, i, _ in index.nearest(owner, user, list(map(float, q)), n)]


def _ephemeral(embedder):
    return ChromaIndex(chromadb.EphemeralClient(), embedder, f"t{uuid.uuid4().hex[:8]}", "ephemeral")


def test_a_users_dense_ranking_is_the_exact_one_where_chromas_graph_misses_items(embedder, monkeypatch):
    rng = np.random.default_rng(0)
    vectors = rng.standard_normal((8000, 384)).astype(np.float32)  # random directions: the graph's hardest case
    items = {str(i): v for i, v in enumerate(vectors)}
    queries = vectors[:10]
    found = {}
    for kind, bound in (("graph", 0), ("exact", exact.EXACT_ITEMS)):
        monkeypatch.setattr(exact.EXACT, "max_items", bound)
        index = _ephemeral(embedder)
        for s in range(0, len(vectors), 1000):
            index.put("o", "u", "episodes", [str(i) for i in range(s, s + 1000)], vectors[s:s + 1000])
        found[kind] = [_ids(index, q, 300) for q in queries]
        index.close()
    assert all(_ranked_as_truth(f, items, q, 300) for f, q in zip(found["exact"], queries))
    # the case is real: Chroma's graph, searched 1,000 wide, leaves some of the nearest 300 out
    assert not all(_ranked_as_truth(f, items, q, 300) for f, q in zip(found["graph"], queries))


def test_the_exact_search_follows_every_write_of_the_process_and_of_the_next_one(tmp_path, embedder):
    rng = np.random.default_rng(1)
    items = {str(i): rng.standard_normal(384) for i in range(50)}
    a = ChromaIndex.persistent(tmp_path / "s", embedder, "memkit")
    a.put("o", "u", "episodes", list(items), list(items.values()))
    q = rng.standard_normal(384)
    assert _ids(a, q, 10) == _truth(items, q, 10)  # the vectors are read here
    nearest = _truth(items, q, 1)[0]
    items[nearest] = -q  # an upsert that changes a vector, a removal, an addition
    a.put("o", "u", "episodes", [nearest], [items[nearest]])
    gone = _truth(items, q, 1)[0]
    a.remove("o", "u", "episodes", [gone])
    del items[gone]
    items["new"] = q
    a.put("o", "u", "episodes", ["new"], [q])
    assert _ids(a, q, 10) == _truth(items, q, 10)
    b = ChromaIndex.persistent(tmp_path / "s", embedder, "memkit")  # another store of this process, same folder
    items["b"] = q + 0.01
    b.put("o", "u", "episodes", ["b"], [items["b"]])
    assert _ids(a, q, 10) == _ids(b, q, 10) == _truth(items, q, 10)
    a.close()
    b.close()
    # closed here, written by another process, opened here again: what that process wrote is found
    code = ("import sys; from memkit.store.chroma import ChromaIndex; from memkit.models.embed import MiniLMEmbedder; "
            "i = ChromaIndex.persistent(sys.argv[1], MiniLMEmbedder(), 'memkit'); "
            "i.put('o', 'u', 'episodes', ['other'], [[float(x) for x in sys.argv[2].split(',')]]); i.close()")
    items["other"] = q * 2
    subprocess.run([sys.executable, "-c", code, str(tmp_path / "s"), ",".join(map(str, items["other"]))], check=True)
    c = ChromaIndex.persistent(tmp_path / "s", embedder, "memkit")
    assert _ids(c, q, 10) == _truth(items, q, 10)
    c.close()


def test_a_user_past_the_bound_is_searched_by_chromas_graph_and_two_stores_keep_apart(embedder, monkeypatch):
    monkeypatch.setattr(exact.EXACT, "max_items", 20)
    rng = np.random.default_rng(2)
    one, two = _ephemeral(embedder), _ephemeral(embedder)  # the same owner and user ids in two stores
    mine = {str(i): rng.standard_normal(384) for i in range(15)}
    theirs = {str(i): rng.standard_normal(384) for i in range(15)}
    one.put("o", "u", "episodes", list(mine), list(mine.values()))
    two.put("o", "u", "episodes", list(theirs), list(theirs.values()))
    q = rng.standard_normal(384)
    assert _ids(one, q, 5) == _truth(mine, q, 5) and _ids(two, q, 5) == _truth(theirs, q, 5)
    held = lambda index: [k for k in exact.EXACT._held if k[1].startswith(index.namespace)]  # noqa: E731
    assert held(one) and held(two)
    more = {f"m{i}": rng.standard_normal(384) for i in range(10)}  # past the bound: no longer kept
    one.put("o", "u", "episodes", list(more), list(more.values()))
    mine.update(more)
    assert _ids(one, q, 5) == _truth(mine, q, 5)  # Chroma's graph, exact at this size
    assert not held(one) and held(two)
    one.close()
    two.close()
    assert not held(one) and not held(two)  # a closed store's vectors are let go


def test_the_vectors_kept_are_bounded_the_least_recently_searched_going_first(embedder):
    kept = exact.ExactVectors(max_vectors=25, max_items=100)
    client = chromadb.EphemeralClient()
    rng = np.random.default_rng(3)
    cols = []
    for c in range(3):
        col = client.create_collection(f"bound-{uuid.uuid4().hex[:8]}", embedding_function=None)
        col.upsert(ids=[f"e:{i}" for i in range(10)], embeddings=rng.standard_normal((10, 384)).tolist())
        cols.append(col)
    q = rng.standard_normal(384).tolist()
    for col in cols:
        assert len(kept.nearest(col.name, col, q, 3)) == 3
    assert list(kept._held) == [cols[1].name, cols[2].name]  # 30 vectors over 25: the first went
    assert len(kept.nearest(cols[0].name, cols[0], q, 3)) == 3  # and is read again when searched
    assert list(kept._held) == [cols[2].name, cols[0].name]
    for col in cols:
        client.delete_collection(col.name)


@pytest.mark.parametrize("bound", [exact.EXACT_ITEMS, 0])
def test_a_query_vector_of_another_dimension_is_a_named_error_on_either_search(embedder, monkeypatch, bound):
    from memkit.errors import DimensionMismatch

    monkeypatch.setattr(exact.EXACT, "max_items", bound)
    index = _ephemeral(embedder)
    index.put("o", "u", "episodes", ["1"], [[1.0] * 384])
    with pytest.raises(DimensionMismatch, match="dimension 10"):
        index.nearest("o", "u", [1.0] * 10, 3)
    assert _ids(index, [1.0] * 384, 3) == ["1"]
    index.close()


@pytest.mark.parametrize("n", [0, -1])
def test_a_search_for_no_items_finds_none(embedder, n):
    index = _ephemeral(embedder)
    index.put("o", "u", "episodes", ["1"], [[1.0] * 384])
    assert index.nearest("o", "u", [1.0] * 384, n) == []
    index.close()
