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
