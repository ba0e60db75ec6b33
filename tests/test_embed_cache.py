"""The embedding cache: each text embedded once per embedder, shared by processes, bounded, disposable."""

from __future__ import annotations

import hashlib
import multiprocessing
import warnings

import numpy as np
import pytest

from memkit import CacheTooSmall, CacheUnavailable, CachedEmbedder, ConfigError, EmbeddingCache, FactStore, Memory, Settings
from memkit.models.embed import MiniLMEmbedder, OpenAIEmbedder, identity
from memkit.store.embed_cache import cached


class Toy:
    """A deterministic 8-d embedder that counts the texts it was asked to embed (the seam, not the unit)."""

    dimension = 8
    model_id = "toy"

    def __init__(self) -> None:
        self.seen: list[str] = []

    def __call__(self, texts):
        self.seen += list(texts)
        return [np.frombuffer(hashlib.sha256(t.encode()).digest(), dtype=np.uint32)[:8].astype(np.float32) / 2**32
                for t in texts]

    def name(self) -> str:
        return "toy"

    def get_config(self) -> dict:
        return {}


def test_cached_vectors_are_the_encoders_own_and_each_text_is_embedded_once(tmp_path, embedder):
    texts = ["I prefer metric units.", "We moved from Go to Python.", "I prefer metric units.", "ok"]
    plain = embedder(texts)
    first = cached(embedder, tmp_path / "e.sqlite3")
    assert all(np.array_equal(a, b) for a, b in zip(first(texts), plain))
    assert first.embedded == 3  # the repeat inside the call too
    again = cached(embedder, tmp_path / "e.sqlite3")  # another store, strategy or run on the same file
    assert all(np.array_equal(a, b) for a, b in zip(again(texts[::-1]), plain[::-1]))
    assert again.embedded == 0 and again.cache.hits == 3


def test_the_key_is_the_embedder_identity_and_the_text(tmp_path):
    assert identity(MiniLMEmbedder(batch_size=8)) == identity(MiniLMEmbedder(batch_size=128))
    assert identity(OpenAIEmbedder("model-a")) != identity(OpenAIEmbedder("model-b"))
    a, b = Toy(), Toy()
    cached(a, tmp_path / "e.sqlite3")(["same text"])
    other = CachedEmbedder(OpenAIEmbedder("model-b"), EmbeddingCache(tmp_path / "e.sqlite3"))
    assert other.cache.get([other.cache.key(identity(OpenAIEmbedder("model-b")), "same text")], 8) == {}
    cached(b, tmp_path / "e.sqlite3")(["same text"])
    assert b.seen == []


def _write(path: str, start: int) -> int:
    toy = Toy()
    c = cached(toy, path)
    for i in range(start, start + 600, 50):
        c([f"text {j}" for j in range(i, i + 50)])
    return len(toy.seen)


def test_processes_share_one_file_and_concurrent_writers_lose_nothing(tmp_path):
    path = str(tmp_path / "shared.sqlite3")
    with multiprocessing.get_context("fork").Pool(4) as pool:
        counts = pool.starmap(_write, [(path, 0), (path, 300), (path, 600), (path, 0)])
    assert sum(counts) >= 1200  # 1,200 distinct texts; overlapping ones may be embedded by two writers at once
    cache = EmbeddingCache(path)
    assert len(cache) == 1200
    reader = CachedEmbedder(Toy(), cache)
    texts = [f"text {j}" for j in range(1200)]
    assert all(np.array_equal(a, b) for a, b in zip(reader(texts), Toy()(texts)))
    assert reader.embedded == 0


def test_the_cache_is_bounded_and_keeps_the_recently_used(tmp_path):
    c = CachedEmbedder(Toy(), EmbeddingCache(tmp_path / "e.sqlite3", max_items=1000, refresh_s=0))
    c([f"old {i}" for i in range(1000)])
    c([f"old {i}" for i in range(10)])  # used again: the newest use
    c([f"new {i}" for i in range(990)])
    assert len(c.cache) == 1000
    toy = Toy()
    CachedEmbedder(toy, c.cache)([f"old {i}" for i in range(10)] + [f"new {i}" for i in range(990)])
    assert toy.seen == []
    with pytest.raises(ValueError):
        EmbeddingCache(tmp_path / "x.sqlite3", max_items=0)


def test_the_bound_is_set_by_the_environment_and_a_bad_one_is_named(tmp_path, monkeypatch):
    monkeypatch.setenv("MEMKIT_EMBED_CACHE_ITEMS", "300")
    c = cached(Toy(), tmp_path / "e.sqlite3")  # a worker process unpickles the same bound (__getstate__)
    c([f"text {i}" for i in range(500)])
    assert c.cache.max_items == 300 and len(c.cache) == 300
    assert EmbeddingCache(tmp_path / "e.sqlite3", max_items=400).max_items == 400  # an argument wins
    for bad in ("0", "-5", "1e6", "many", "2.5"):
        monkeypatch.setenv("MEMKIT_EMBED_CACHE_ITEMS", bad)
        with pytest.raises(ConfigError, match="MEMKIT_EMBED_CACHE_ITEMS"):
            EmbeddingCache(tmp_path / "x.sqlite3")
    monkeypatch.delenv("MEMKIT_EMBED_CACHE_ITEMS")
    for bad in (True, 1.5, "10", -1):
        with pytest.raises(ConfigError, match="max_items"):
            EmbeddingCache(tmp_path / "x.sqlite3", max_items=bad)


def test_a_run_that_needs_more_vectors_than_the_cache_keeps_is_warned(tmp_path):
    c = cached(Toy(), tmp_path / "e.sqlite3", max_items=10)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert len(c.missing([f"t {i}" for i in range(10)] * 2)) == 20  # 10 distinct texts fit
    with pytest.warns(CacheTooSmall, match="11 texts to embed .* keeps 10 vectors.*MEMKIT_EMBED_CACHE_ITEMS=11"):
        c.missing([f"t {i}" for i in range(11)])


def test_a_hit_refreshes_its_use_time_at_most_once_a_period(tmp_path):
    import sqlite3

    path = tmp_path / "e.sqlite3"
    cached(Toy(), path)(["a", "b"])

    def used() -> list[float]:
        with sqlite3.connect(path) as db:
            return [u for (u,) in db.execute("SELECT used FROM vectors ORDER BY key")]

    first = used()
    hourly = cached(Toy(), path)  # the default: refreshed when last used over an hour ago
    hourly(["a", "b"])
    assert used() == first  # a warm read wrote nothing
    always = CachedEmbedder(Toy(), EmbeddingCache(path, refresh_s=0))
    always(["a"])
    after = used()
    assert sorted(after)[-1] > max(first) and min(after) == min(first)  # only "a" was refreshed


def test_missing_names_the_texts_without_a_vector_and_embeds_nothing(tmp_path):
    toy = Toy()
    c = CachedEmbedder(toy, EmbeddingCache(tmp_path / "e.sqlite3"))
    c(["a", "b"])
    seen = list(toy.seen)
    assert c.missing(["x", "a", "y", "b", "x"]) == ["x", "y", "x"]
    assert toy.seen == seen


def test_delete_the_cache_and_nothing_breaks(tmp_path):
    path = tmp_path / "cache" / "e.sqlite3"
    toy = Toy()
    c = cached(toy, path)
    c(["a", "b"])
    for f in path.parent.iterdir():
        f.unlink()
    assert [list(v) for v in c(["a", "c"])] == [list(v) for v in Toy()(["a", "c"])]
    assert toy.seen == ["a", "b", "a", "c"] and path.exists()


@pytest.mark.parametrize("make_bad", ["directory", "not sqlite"])
def test_an_unusable_cache_warns_once_and_embeds_without_it(tmp_path, make_bad):
    path = tmp_path / "e.sqlite3"
    if make_bad == "directory":
        path.mkdir()
    else:
        path.write_bytes(b"this is not a database" * 100)
    toy = Toy()
    c = cached(toy, path)
    with pytest.warns(CacheUnavailable, match="embedding without it"):
        first = c(["a", "b"])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        second = c(["a"])
    assert np.array_equal(first[0], second[0]) and toy.seen == ["a", "b", "a"]


def test_a_store_behind_the_cache_reopens_with_the_plain_embedder(tmp_path, embedder):
    c = cached(embedder, tmp_path / "e.sqlite3")
    store = FactStore.persistent(str(tmp_path / "chroma"), c)
    Memory(store=store).observe("u1", "s1", "user", "I prefer metric units.")
    store.close()
    again = FactStore.persistent(str(tmp_path / "chroma"), embedder)
    try:
        hits = again.search("u1", "which units?", k=1)
        assert [h.fact.value for h in hits] == ["metric"]
    finally:
        again.close()
    assert c.embedded >= 1


def test_settings_put_the_configured_embedder_behind_the_cache(tmp_path):
    e = Settings.from_env({"MEMKIT_EMBED_CACHE": str(tmp_path / "e.sqlite3")}).embedder()
    assert isinstance(e, CachedEmbedder) and isinstance(e.inner, MiniLMEmbedder)
    assert isinstance(Settings.from_env({}).embedder(), MiniLMEmbedder)
    assert len(EmbeddingCache(tmp_path / "made" / "x.sqlite3")) == 0  # the cache makes its folder
