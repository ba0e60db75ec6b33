"""The whole memory in one PostgreSQL database (pgvector, full-text search, records, log, profile, locks), on the
real PostgreSQL of the pgserver wheel: several processes sharing it, SIGKILLs during writes, a refused embedder,
and a bench run on it. The API every backend shares is tested through the ``store`` fixture."""

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from conftest import open_store
from memkit import ConfigError, DimensionMismatch, FactStore, Memory
from memkit.types import EventKind
from test_facts import TinyEmbedder, fact

ROOT = Path(__file__).resolve().parents[1]

WRITER = textwrap.dedent("""
    import sys
    from memkit import FactStore, Memory
    from memkit.types import Candidate
    url, ns, me, n = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
    m = Memory(store=FactStore.postgres(url, namespace=ns))
    for j in range(n):
        m.write("u", [Candidate(f"User lives in P{me}x{j}.", key="user.city", value=f"P{me}x{j}"),
                      Candidate(f"User's note {me}-{j} is kept.", key=f"note.p{me}.n{j}", value=f"{me}-{j}")],
                time=float(j))
        print(j, flush=True)  # acknowledged
""")


def test_four_processes_on_one_database_keep_one_fact_per_key_and_lose_no_write(postgres_url):
    ns = f"procs{os.getpid()}"
    procs = [subprocess.Popen([sys.executable, "-c", WRITER, postgres_url, ns, str(i), "30"], cwd=ROOT,
                              stdout=subprocess.DEVNULL) for i in range(4)]
    assert all(p.wait(timeout=600) == 0 for p in procs)
    store = FactStore.postgres(postgres_url, namespace=ns)
    assert len(store.get("u", where={"key": "user.city"})) == 1  # four writers, one current city
    notes = {f.key for f in store.get("u") if f.key.startswith("note.")}
    assert notes == {f"note.p{i}.n{j}" for i in range(4) for j in range(30)}  # no write lost
    assert {f.id for f in store.profile("u")} == {f.id for f in store.get("u")}
    history = store.history("u")
    assert len([e for e in history if e.kind == EventKind.ADD]) == 4 * 30 + 1  # each note, and the first city
    assert len([e for e in history if e.kind == EventKind.UPDATE]) == 4 * 30 - 1
    # the text and vector indexes hold the current facts, and only them
    city = store.get("u", where={"key": "user.city"})[0]
    assert [i for i, _ in store.lexical("u", "facts", "Where does the user live?", 500)] == [city.id]
    dense = store.dense("u", store.embed_query("lives in"), {"facts": 1000})["facts"]
    assert sorted(i for i, _ in dense) == sorted(f.id for f in store.get("u"))
    store.drop_user("u")
    store.close()


def test_sigkills_during_writes_lose_no_acknowledged_write(postgres_url):
    ns = f"kills{os.getpid()}"
    acked: list[tuple[int, int]] = []
    for round_ in range(3):
        child = subprocess.Popen([sys.executable, "-c", WRITER, postgres_url, ns, str(round_), "1000"],
                                 stdout=subprocess.PIPE, text=True, cwd=ROOT)
        got = []
        while len(got) < 4 + 5 * round_:
            line = child.stdout.readline()
            assert line, "the writer died before it was killed"
            got.append((round_, int(line)))
        os.kill(child.pid, signal.SIGKILL)
        child.wait()
        acked += got
    store = FactStore.postgres(postgres_url, namespace=ns)
    current = {f.key for f in store.get("u")}
    assert {f"note.p{r}.n{j}" for r, j in acked} <= current  # no acknowledged fact lost
    assert len(store.get("u", where={"key": "user.city"})) == 1
    assert store.log.unapplied() == []  # a write is one transaction: nothing half-applied to replay
    store.drop_user("u")
    store.close()


def test_an_embedder_of_another_dimension_is_refused_when_the_store_opens(tmp_path, request, embedder):
    s1 = open_store("postgres", tmp_path, request, embedder, namespace=f"dims{os.getpid()}")
    s1.upsert("u1", [fact("u1", "User prefers metric units.", "f1")])
    with pytest.raises(DimensionMismatch, match="copy_user"):
        open_store("postgres", tmp_path, request, TinyEmbedder(), namespace=f"dims{os.getpid()}")
    assert [f.id for f in s1.get("u1")] == ["f1"]  # nothing corrupted
    s2 = open_store("postgres", tmp_path, request, TinyEmbedder(), namespace=f"dims{os.getpid()}v2")
    assert s1.copy_user("u1", s2) == 1 and [f.text for f in s2.get("u1")] == ["User prefers metric units."]
    s1.close()
    s2.close()


def test_a_database_that_cannot_be_reached_is_named(tmp_path):
    from memkit.errors import StoreUnavailable

    with pytest.raises(StoreUnavailable, match="PostgreSQL database"):
        FactStore.postgres(f"postgresql://postgres:secret@/postgres?host={tmp_path}/nowhere")


def test_a_read_and_a_write_of_one_user_never_reach_another_users_rows(postgres_url, embedder):
    store = FactStore.postgres(postgres_url, embedder, namespace=f"iso{os.getpid()}")
    m = Memory(store=store)
    m.observe("alice", "s1", "user", "I prefer metric units and I live in Oslo.")
    m.observe("bob", "s1", "user", "I live in Lima.")
    ctx = m.context("bob", "s2", "Where do I live and which units do I use?", budget=400)
    assert "Lima" in ctx.text and "Oslo" not in ctx.text and "metric" not in ctx.text
    assert store.lexical("bob", "episodes", "Oslo metric", 10) == []
    assert all(f.user_id == "bob" for f in store.get("bob"))
    store.drop_user("alice")
    assert store.get("alice") == [] and store.episodes("alice") == [] and [f.text for f in store.get("bob")]
    store.close()


def test_bench_on_postgres_recalls_what_it_recalls_on_chroma(postgres_url, tmp_path):
    import json

    import pandas as pd

    from memkit.cli import main

    recall = {}
    for store in ("ephemeral", postgres_url):
        out = tmp_path / ("pg" if store != "ephemeral" else "chroma")
        assert main(["bench", "--data", str(ROOT / "data" / "suite.jsonl"), "--limit", "3", "--strategy",
                     "two-layer:keyed", "--strategy", "rag:hybrid", "--budget", "400", "--no-turn-tokens",
                     "--store", store, "--out", str(out)]) == 0
        assert json.loads((out / "run.json").read_text())["store"] == ("ephemeral" if store == "ephemeral" else "postgres")
        summary = pd.read_csv(out / "summary.csv")
        recall[store] = summary[summary["type"] == "all"].set_index("strategy")["evidence_recall"]
    assert (recall["ephemeral"] - recall[postgres_url]).abs().max() <= 0.01, recall


def test_a_text_index_of_the_first_step_is_filled_again_from_the_records(postgres_url, embedder):
    from memkit.store.postgres import TEXT_STEPS
    from memkit.store.sql import Database

    ns = f"textv1{os.getpid()}"
    store = FactStore.postgres(postgres_url, embedder, namespace=ns)
    m = Memory(store=store)
    m.observe("u", "s1", "user", "I prefer metric units.")
    m.observe("u", "s1", "user", "We played the oboe at dawn.")
    store.embed_pending("u")
    store.close()
    db = Database.postgres(postgres_url, ns)  # as the first step left it: ts_rank_cd's table, nothing else
    with db.transaction() as run:
        for table in ("postings", "doclen", "text_filled"):
            run(f"DROP TABLE {table}")
        for statement in TEXT_STEPS[0].split(";"):
            run(statement)
        run("UPDATE schema_versions SET version = 1 WHERE name = 'text'")
    db.close()
    store = FactStore.postgres(postgres_url, embedder, namespace=ns)  # migrates, then fills from the records
    assert [f.text for f in store.get("u")] and store.lexicon.filled
    assert [i for i, _ in store.lexical("u", "facts", "Which units, metric?", 5)] == [f.id for f in store.get("u")]
    assert len(store.lexical("u", "episodes", "Which instrument, the oboe?", 5)) == 1
    store.close()


def test_a_chroma_only_question_on_postgres_is_a_named_error(postgres_url, embedder):
    store = FactStore.postgres(postgres_url, embedder=embedder, namespace=f"names{os.getpid()}")
    try:
        with pytest.raises(ConfigError, match="Chroma"):
            store.collection_name("u")
    finally:
        store.close()


def test_postgres_ranks_words_as_tantivy_does(postgres_url, embedder):
    """The same terms (stems, no stopwords dropped, long words out, CJK per character) and the same BM25."""
    from test_episodes import ep

    texts = ["I'm running the well-known marathon in 2023 at 3pm.", "The runners ran; a marathon runs long.",
             "We were at the café, naïve as ever, and it was the best of the evenings.",
             "Dinosaurs at the museum: the kids loved the T-rex and the planetarium.",
             "我喜欢喝绿茶。 Green tea every morning.", "x" * 50 + " and a very long word nobody says",
             "She said she is running late for the museum again, as she was in 2023.",
             "A long answer about training for a marathon. " + "Keep the easy runs easy and sleep well. " * 9,
             "Museum notes: " + " ".join(f"room {i} holds item {i * 7}" for i in range(40))]
    stores = {"tantivy": FactStore.ephemeral(embedder),
              "postgres": FactStore.postgres(postgres_url, embedder, namespace=f"words{os.getpid()}")}
    for store in stores.values():
        for i, text in enumerate(texts):
            store.add_episode("u", ep("u", text, turn=f"s1:{i}"))
        store.upsert("u", [fact("u", "User runs a marathon every spring.", "marathon"), fact("u", "User drinks green tea.", "tea")])
    try:
        for query in ("Who was running a marathon?", "the museum's planetarium", "绿茶", "café in 2023",
                      "was she late, as she was?"):
            for part in ("episodes", "facts"):  # the statistics span both parts, as one tantivy index's do
                ranked = {name: store.lexical("u", part, query, 10) for name, store in stores.items()}
                assert [i for i, _ in ranked["postgres"]] == [i for i, _ in ranked["tantivy"]], (query, ranked)
                assert [round(s, 3) for _, s in ranked["postgres"]] == [round(s, 3) for _, s in ranked["tantivy"]], query
    finally:
        for store in stores.values():
            store.close()


def test_the_length_postgres_scores_with_is_the_length_tantivy_scores_with():
    import json

    import tantivy

    from memkit.store.lexicon import scored_length

    builder = tantivy.SchemaBuilder()
    builder.add_text_field("body", stored=False, tokenizer_name="en_stem")
    builder.add_integer_field("n", stored=True)
    index = tantivy.Index(builder.build())
    writer = index.writer(15_000_000, 1)
    lengths = list(range(1, 200)) + list(range(200, 5000, 37))
    for n in lengths:
        writer.add_document(tantivy.Document(body="zebra " + "word " * (n - 1), n=n))
    writer.commit()
    index.reload()
    searcher = index.searcher()
    query = index.parse_query("zebra", ["body"])

    def dl(node):
        if node.get("description") == "dl, length of field":
            return node["value"]
        return next((d for d in map(dl, node.get("details", [])) if d is not None), None)

    kept = {searcher.doc(a)["n"][0]: dl(json.loads(query.explain(searcher, a).to_json()))
            for _, a in searcher.search(query, len(lengths)).hits}
    assert len(kept) == len(lengths) and any(kept[n] != n for n in kept)  # lossy above 24 terms
    assert {n: scored_length(n) for n in kept} == kept


def test_a_turns_unusable_extractions_are_counted_in_the_database(postgres_url, embedder):
    from memkit.types import Episode

    store = FactStore.postgres(postgres_url, embedder, namespace=f"attempts{os.getpid()}")
    ep = store.add_episode("u", Episode("", "u", "s", "t1", "user", "user", "I prefer metric units.", 1.0), extract=True)
    assert [store.queue.attempted("u", ep.id) for _ in range(2)] == [1, 2]
    assert [e.id for e in store.queue.to_extract()] == [ep.id]  # counted, still waiting for flush()
    store.drop_user("u")
    store.close()


def test_threads_run_their_statements_on_the_server_at_once(postgres_url):
    """PostgreSQL's connections come from a pool, one per thread at a time: a read of one thread runs while
    another thread's transaction is open (SQLite's one connection makes it wait), and a thread's nested
    transactions share one connection and one commit."""
    import threading

    from memkit.store.sql import Database

    db = Database.postgres(postgres_url, f"pool{os.getpid()}")
    db.execute("CREATE TABLE IF NOT EXISTS t (n INTEGER)")
    inside, read = threading.Event(), []

    def writer():
        with db.transaction() as run:
            run("INSERT INTO t (n) VALUES (?)", (1,))
            with db.transaction() as nested:
                nested("INSERT INTO t (n) VALUES (?)", (2,))
            inside.set()
            reader.join(timeout=60)  # the transaction stays open while the other thread reads

    def read_while_open():
        inside.wait(timeout=60)
        read.append(db.rows("SELECT count(*) FROM t")[0][0])

    reader = threading.Thread(target=read_while_open)
    reader.start()
    threading.Thread(target=writer).run()
    assert read == [0]  # it ran during the open transaction, and saw none of its rows
    assert db.rows("SELECT count(*) FROM t")[0][0] == 2  # both inserts, in one commit
    db.close()


def test_a_thread_that_finds_no_free_connection_gets_a_named_error(postgres_url, monkeypatch):
    """Every pooled connection held past the wait: StoreUnavailable naming the bound, not a pool's own
    exception; the holder's transaction is unharmed."""
    import threading

    from memkit.errors import StoreUnavailable
    from memkit.store import sql

    monkeypatch.setattr(sql, "POOL_SIZE", 1)
    monkeypatch.setattr(sql, "POOL_WAIT", 0.5)
    db = sql.Database.postgres(postgres_url, f"busy{os.getpid()}")
    db.execute("CREATE TABLE IF NOT EXISTS t (n INTEGER)")
    held, done, errors = threading.Event(), threading.Event(), []

    def other():
        held.wait(timeout=60)
        try:
            db.rows("SELECT 1")
        except StoreUnavailable as e:
            errors.append(str(e))
        done.set()

    worker = threading.Thread(target=other)
    worker.start()
    with db.transaction() as run:
        run("INSERT INTO t (n) VALUES (?)", (1,))
        held.set()
        done.wait(timeout=60)
    worker.join()
    assert len(errors) == 1 and "no PostgreSQL connection came free" in errors[0] and "1 at most" in errors[0]
    assert "all busy" in errors[0]
    assert db.rows("SELECT count(*) FROM t")[0][0] == 1
    db.close()


def test_a_server_gone_away_is_named_unreachable_on_every_call(tmp_path, monkeypatch):
    """Its own PostgreSQL, stopped under an open store: the pooled connections fail at once, and once they
    are gone a call waits for the pool, then names the server unreachable (not "busy")."""
    import pgserver

    from memkit.errors import StoreUnavailable
    from memkit.store import sql

    monkeypatch.setattr(sql, "POOL_WAIT", 1.0)
    server = pgserver.get_server(str(tmp_path / "pg"), cleanup_mode="stop")
    db = sql.Database.postgres(server.get_uri(), "gone")
    assert db.rows("SELECT 1") == [(1,)]
    server.cleanup()
    for _ in range(4):
        with pytest.raises(StoreUnavailable, match="is unreachable"):
            db.rows("SELECT 1")
    db.close()
