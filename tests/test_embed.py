import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from memkit.models.embed import MiniLMEmbedder

REF = json.loads((Path(__file__).parent / "data" / "minilm_reference.json").read_text())


def test_vectors_match_fp32_reference(embedder):
    texts = [r["text"] for r in REF["rows"]]
    ours = np.array(embedder(texts))
    ref = np.array([r["vector"] for r in REF["rows"]])
    cos = (ours * ref).sum(1) / np.linalg.norm(ours, axis=1) / np.linalg.norm(ref, axis=1)
    assert ours.shape == (len(texts), 384)
    assert cos.min() >= 0.99, dict(zip(texts, cos.round(4)))


def test_batch_padding_does_not_change_vectors(embedder):
    short, long = "I prefer metric units.", REF["rows"][8]["text"]
    alone = np.array(embedder([short]))[0]
    batched = np.array(embedder([short, long]))[0]
    assert float(alone @ batched) > 0.9999


def test_related_sentences_are_closer(embedder):
    a, b, c = np.array(embedder(["I prefer metric units", "Use kilometres please", "My cat is named Tom"]))
    assert a @ b > a @ c
    assert abs(np.linalg.norm(a) - 1) < 1e-5


def test_config_has_no_paths_and_round_trips():
    e = MiniLMEmbedder(batch_size=16)
    cfg = e.get_config()
    assert not any(isinstance(v, str) and ("/" in v or "\\" in v) for v in cfg.values())
    assert MiniLMEmbedder.build_from_config(cfg).batch_size == 16
    assert e.name() == "memkit-minilm-int8" and e.default_space() == "cosine"


def test_persisted_collection_reopens_with_embedder_in_fresh_process(tmp_path, embedder):
    import chromadb

    client = chromadb.PersistentClient(path=str(tmp_path))
    col = client.create_collection("facts1", embedding_function=embedder, configuration={"hnsw": {"space": "cosine"}})
    col.add(ids=["a", "b"], documents=["I prefer metric units", "My cat is named Tom"])
    client.close()
    code = (
        "import chromadb, memkit.models.embed\n"
        f"c = chromadb.PersistentClient(path={str(tmp_path)!r}).get_collection('facts1')\n"
        "r = c.query(query_texts=['Use kilometres please'], n_results=1)\n"
        "print(type(c.configuration['embedding_function']).__name__, r['ids'][0][0])\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["MiniLMEmbedder", "a"]


def test_a_text_gets_the_same_vector_alone_and_in_any_token_bounded_batch(embedder):
    from memkit.models.embed import BATCH_TOKENS, MiniLMEmbedder

    words = "the ferry to the island leaves at seven and the museum opens at nine".split()
    texts = [" ".join(words[j % len(words)] for j in range(n)) for n in (3, 40, 7, 180, 12, 90, 250, 5, 60, 130)]
    together = MiniLMEmbedder(batch_size=4)(texts * 3)  # a cap of 4 texts and of BATCH_TOKENS both cut batches
    assert BATCH_TOKENS < 250 * 8
    for i, text in enumerate(texts * 3):
        assert np.array_equal(together[i], embedder([text])[0]), text[:30]


def test_a_wider_window_embeds_the_tail_the_default_cuts_and_is_part_of_the_identity():
    from memkit.models.embed import identity
    from memkit.errors import ConfigError

    head = " ".join(["the ferry to the island leaves at seven"] * 40)  # about 320 tokens
    a, b = head + " My cat is named Tom.", head + " I prefer metric units."
    narrow, wide = MiniLMEmbedder(), MiniLMEmbedder(max_tokens=512)
    assert narrow.truncates(a) and not wide.truncates(a)
    assert np.array_equal(*narrow([a, b]))  # the default window never sees the last sentence
    assert not np.allclose(*wide([a, b]))
    short = "I prefer metric units."
    assert np.allclose(narrow([short])[0], wide([short])[0], atol=1e-6)  # a text inside both windows: same vector
    cfg = wide.get_config()
    assert MiniLMEmbedder.build_from_config(cfg).max_tokens == 512 and "max_tokens" not in narrow.get_config()
    assert identity(narrow) != identity(wide)
    assert identity(narrow) == identity(MiniLMEmbedder(batch_size=8))  # the batch changes no vector
    for bad in (0, 513, "512"):
        with pytest.raises(ConfigError):
            MiniLMEmbedder(max_tokens=bad)
    for bad in (0, -1, "32"):  # a batch holds at least one text
        with pytest.raises(ConfigError):
            MiniLMEmbedder(batch_size=bad)


@pytest.mark.parametrize("kind", ["persistent", "postgres"])
def test_a_store_written_by_one_window_refuses_another(kind, tmp_path, request):
    from memkit import EmbedderMismatch, FactStore, Fact

    url = f"file://{tmp_path / 'store'}" if kind == "persistent" else request.getfixturevalue("postgres_url")
    ns = f"window{abs(hash(request.node.nodeid)) % 10**6}"
    store = FactStore.from_url(url, MiniLMEmbedder(), namespace=ns)
    store.upsert("u", [Fact("f1", "u", "User prefers metric units.")])
    store.close()
    with pytest.raises(EmbedderMismatch, match="another window"):  # same model and dimension, other vectors
        wrong = FactStore.from_url(url, MiniLMEmbedder(max_tokens=512), namespace=ns)
        try:
            wrong.search("u", "which units?")
        finally:
            wrong.close()
    again = FactStore.from_url(url, MiniLMEmbedder(batch_size=8), namespace=ns)  # the same vectors: it opens
    assert [h.fact.id for h in again.search("u", "which units?")] == ["f1"]
    again.close()


def test_batches_hold_every_text_once_within_the_bounds_and_cost_less_than_filling_each_in_turn():
    import random

    from memkit.models.embed import BATCH_TOKENS, CALL_TOKENS, batches

    def cost(lengths, plan):  # padded tokens, and a call's worth of tokens a batch
        return sum(max(lengths[i] for i in b) * len(b) + CALL_TOKENS for b in plan)

    def filled(lengths, size):  # shortest first, each batch filled until the next text would not fit (the plan before)
        plan, batch = [], []
        for i in sorted(range(len(lengths)), key=lengths.__getitem__):
            if batch and (len(batch) == size or (len(batch) + 1) * lengths[i] > BATCH_TOKENS):
                plan.append(batch)
                batch = []
            batch.append(i)
        return plan + [batch] if batch else plan

    rng = random.Random(7)
    for _ in range(300):
        lengths = [rng.choice([rng.randint(2, 40), rng.randint(90, 130), rng.randint(200, 1500)])
                   for _ in range(rng.randint(0, 60))]
        size = rng.choice([1, 4, 32, 128])
        plan = batches(lengths, size)
        assert sorted(i for b in plan for i in b) == list(range(len(lengths)))
        assert [lengths[i] for b in plan for i in b] == sorted(lengths)  # shortest first
        for b in plan:
            assert len(b) <= size and (len(b) == 1 or max(lengths[i] for i in b) * len(b) <= BATCH_TOKENS)
        assert cost(lengths, plan) <= cost(lengths, filled(lengths, size))
    # one session's passages: full ones and the turns' shorter tails; filled in turn, the tails pad to the 120
    lengths = [20] * 7 + [120] + [128] * 16
    assert cost(lengths, batches(lengths, 32)) < cost(lengths, filled(lengths, 32))
    assert batches([], 32) == []


def test_the_e5_embedder_asks_questions_as_queries_and_stores_passages():
    from memkit.models.embed import E5Embedder, embed_queries

    e5 = E5Embedder()
    passages = np.array(e5(["I moved to Toronto for a data science job.", "My cat is named Tom."]))
    (query,) = np.array(embed_queries(e5, ["Where does she work?"]))
    assert passages.shape == (2, 384) and abs(np.linalg.norm(query) - 1) < 1e-4
    assert passages[0] @ query > passages[1] @ query
    assert float(np.array(e5(["Where does she work?"]))[0] @ query) < 0.999  # "query: " is not "passage: "
    chinese = np.array(e5(["我在多伦多做数据科学家。", "我的猫叫汤姆。"]))  # multilingual: Chinese too
    (asked,) = np.array(embed_queries(e5, ["她在哪里工作？"]))
    assert chinese[0] @ asked > chinese[1] @ asked
    assert E5Embedder.build_from_config(e5.get_config()).name() == "memkit-e5-small-q4"
    assert e5.truncates("word " * 600) and not e5.truncates("a short line")


def test_a_store_and_a_bench_run_take_the_offline_embedder_by_name(tmp_path):
    from memkit import FactStore, Settings
    from memkit.models.embed import E5Embedder, identity, shared_embedder
    from memkit.store.embed_cache import CachedEmbedder
    from memkit.errors import ConfigError, EmbedderMismatch

    e = Settings.from_env({"MEMKIT_EMBEDDER": "e5", "MEMKIT_EMBED_CACHE": str(tmp_path / "c.sqlite3")}).embedder()
    assert isinstance(e, CachedEmbedder) and isinstance(e.inner, E5Embedder)
    asked = e.embed_query(["Where does she work?"])
    assert e.embedded == 1 and np.allclose(e.embed_query(["Where does she work?"])[0], asked[0])
    assert e.embedded == 1 and not np.allclose(e(["Where does she work?"])[0], asked[0])  # a passage: its own key
    with pytest.raises(ConfigError, match="unknown embedder 'e6'.*'minilm', 'e5'"):
        shared_embedder("e6")
    from memkit import Fact
    from memkit.eval.datasets import load
    from memkit.eval.runner import run

    store = FactStore.persistent(str(tmp_path / "s"), shared_embedder("e5"))
    store.upsert("u", [Fact("f1", "u", "User works in Toronto as a data scientist.")])
    assert [h.fact.id for h in store.search("u", "Where does the user work?")] == ["f1"]
    store.close()
    wrong = FactStore.persistent(str(tmp_path / "s"), shared_embedder("minilm"))
    with pytest.raises(EmbedderMismatch):  # a store written by one embedder refuses the other (both 384-d)
        wrong.search("u", "Where does the user work?")
    wrong.close()
    assert identity(shared_embedder("e5")) != identity(shared_embedder("minilm"))

    convs = load(Path(__file__).parent / "data" / "realtalk", "realtalk")
    from memkit.eval.warmup import texts_to_embed

    turns = texts_to_embed([(c, "rag:dense", [200]) for c in convs], 128)
    results = run(convs, ["rag:dense"], budget=200, per_turn_tokens=False, embedder="e5",
                  embed_cache=tmp_path / "run.sqlite3")[0]
    assert len(results) > 0
    from memkit.store.embed_cache import cached

    assert cached(E5Embedder(), tmp_path / "run.sqlite3").missing(turns) == []  # the run embedded with e5
    assert len(cached(MiniLMEmbedder(), tmp_path / "run.sqlite3").missing(turns)) == len(set(turns))  # only
    with pytest.raises(ConfigError, match="unknown embedder"):
        run(convs, ["rag:dense"], budget=200, embedder="e6")


def test_memkit_embedder_chooses_the_embedder_of_every_store_built_without_one(tmp_path):
    """One route (config.offline_embedder): MEMKIT_EMBEDDER reaches Memory(), FactStore's constructors and a
    bench run, not only Memory.from_settings."""
    import os
    import subprocess
    import sys

    script = ("from memkit import FactStore, Memory\n"
              f"print(Memory().store.embedder.name(), FactStore.persistent({str(tmp_path / 's')!r}).embedder.name())\n")
    for name, expected in (("e5", "e5"), ("", "minilm")):
        done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300,
                              env={**os.environ, "MEMKIT_EMBEDDER": name})
        assert done.returncode == 0, done.stderr[-2000:]
        names = done.stdout.split()
        assert len(names) == 2 and all(expected in n for n in names), names


def test_an_unknown_memkit_embedder_is_a_config_error_naming_the_choices(tmp_path):
    import os
    import subprocess
    import sys

    script = "from memkit import Memory\nMemory()\n"
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300,
                          env={**os.environ, "MEMKIT_EMBEDDER": "bogus"})
    assert done.returncode != 0 and "ConfigError: unknown embedder 'bogus'" in done.stderr and "minilm" in done.stderr
    data = str(Path(__file__).resolve().parents[1] / "data" / "suite.jsonl")
    done = subprocess.run([sys.executable, "-m", "memkit", "bench", "--data", data, "--limit", "1", "--out", str(tmp_path / "o")],
                          capture_output=True, text=True, timeout=300, env={**os.environ, "MEMKIT_EMBEDDER": "bogus"})
    assert done.returncode != 0 and "unknown embedder 'bogus'" in done.stderr and "Traceback" not in done.stderr


def test_the_embedder_protocol_describes_memkits_embedders_and_any_chroma_embedding_function(tmp_path):
    """``Embedder`` says what memkit reads of an embedder; ``traits`` is the one place that asks, with defaults
    for a Chroma embedding function that says less: a store works with one, and its identity is stable."""
    from chromadb.api.types import EmbeddingFunction

    from memkit import Embedder, FactStore, Memory
    from memkit.models.embed import E5Embedder, MiniLMEmbedder, OpenAIEmbedder, identity, traits
    from memkit.store.embed_cache import CachedEmbedder, EmbeddingCache

    class Plain(EmbeddingFunction):  # a third party's: a name and vectors, nothing more
        def __init__(self) -> None:
            pass

        def __call__(self, input):
            return [np.array([1.0, float(len(t) % 7), 0.5], dtype=np.float32) for t in input]

        @staticmethod
        def name() -> str:
            return "plain"

        def get_config(self):
            return {}

    mine = [MiniLMEmbedder(), E5Embedder(), OpenAIEmbedder(model="m", base_url="http://127.0.0.1:9")]
    assert all(isinstance(e, Embedder) for e in mine) and not isinstance(Plain(), Embedder)
    plain = traits(Plain())
    assert (plain.model_id, plain.dimension, plain.max_tokens, plain.batch_size, plain.own_query, plain.truncates) == \
        ("", None, None, None, False, None)
    cached = CachedEmbedder(mine[1], EmbeddingCache(tmp_path / "c.sqlite3"))
    assert traits(cached).base is mine[1] and traits(cached).own_query and traits(cached)[:3] == traits(mine[1])[:3]
    assert identity(cached) == identity(mine[1])
    m = Memory(store=FactStore.persistent(str(tmp_path / "s"), Plain()))
    m.observe("u", "s", "user", "I prefer metric units.")
    assert "metric" in m.context("u", "s", "units?", budget=200).text
    m.close()
