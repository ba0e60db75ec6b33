"""Bench runs in parallel and resumable: N processes, a real Dask cluster, part files, the embedding cache."""

from __future__ import annotations

import itertools
import multiprocessing
import os
import re
import signal
import subprocess
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import pandas as pd
import pytest

from memkit import FactStore
from memkit.models.embed import identity, shared_embedder
from memkit.store.embed_cache import EmbeddingCache, cached
from memkit.errors import ConfigError
from memkit.eval.cores import pin_next, slots
from memkit.eval.datasets import load
from memkit.eval.execution import execute, own_peak_mb, processes
from memkit.eval.warmup import texts_to_embed
from memkit.eval.runner import run

ROOT = Path(__file__).resolve().parents[1]
STRATEGIES = ["two-layer:keyed", "rag:dense", "summary"]
TIMINGS = ["read_ms"]  # measured, so never equal between runs


@pytest.fixture(scope="module")
def convs():
    return load(ROOT / "data" / "suite.jsonl", "memkit")[:3]


@pytest.fixture(scope="module")
def serial(convs, tmp_path_factory):
    cache = tmp_path_factory.mktemp("cache") / "e.sqlite3"
    return run(convs, STRATEGIES, budget=[200, 600], per_turn_tokens=False, embed_cache=cache), cache


def same(a: pd.DataFrame, b: pd.DataFrame) -> None:
    a, b = a.drop(columns=TIMINGS).reset_index(drop=True), b.drop(columns=TIMINGS).reset_index(drop=True)
    if a.shape == b.shape and list(a.columns) == list(b.columns):  # on a difference, name the probes that differ
        differ = ~((a == b) | (a.isna() & b.isna())).all(axis=1)
        assert not differ.any(), f"rows that differ:\n{a[differ].to_string()}\nagainst\n{b[differ].to_string()}"
    pd.testing.assert_frame_equal(a, b)


def test_jobs_give_the_serial_rows_in_the_serial_order(convs, serial, capfd):
    (results, summary, confusion), cache = serial
    assert len(results) > 0 and results["strategy"].tolist()[0] == STRATEGIES[0]
    capfd.readouterr()
    # and the same again when each process gives way to a fresh one every 3 jobs
    r2, s2, c2 = run(convs, STRATEGIES, budget=[200, 600], per_turn_tokens=False, jobs=2, embed_cache=cache,
                     recycle=3, progress=True)
    workers = set(re.findall(r"pid (\d+):", capfd.readouterr().err))  # the progress line counts jobs per worker
    assert len(workers) > 2, workers
    same(results, r2)
    pd.testing.assert_frame_equal(confusion, c2)
    shown = ["strategy", "budget", "type", "evidence_recall", "evidence_recall_ci_low", "op_accuracy"]
    pd.testing.assert_frame_equal(summary[shown], s2[shown])


def test_a_dask_cluster_gives_the_serial_rows(convs, serial, tmp_path):
    from distributed import Client, LocalCluster

    (results, _, _), _ = serial
    cache = tmp_path / "cold.sqlite3"  # a cold cache: a cluster on one host warms it first, as --jobs does
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster:
        r, _, _ = run(convs, STRATEGIES, budget=[200, 600], per_turn_tokens=False, embed_cache=cache,
                      scheduler=cluster.scheduler_address)
        # the workers' sampling profiler is paused while memkit's jobs run (it cost them ~10% CPU), and
        # running again once the run is over
        # and, one worker per core here, each worker runs on a core of its own, all of them again afterwards
        sampling = lambda: __import__("distributed").get_worker().periodic_callbacks["profile"].is_running()
        peaks: list[int] = []  # the workers are no children of this process: each says its own peak memory
        during = [on for _, on in execute(sampling, [(i, ()) for i in range(4)], scheduler=cluster.scheduler_address,
                                          peaks=peaks)]
        placed = [got for _, got in execute(where_it_runs, [(i, ()) for i in range(8)], scheduler=cluster.scheduler_address)]
        with Client(cluster) as client:
            after = client.run(lambda dask_worker: dask_worker.periodic_callbacks["profile"].is_running())
            cores_after = client.run(lambda: sorted(os.sched_getaffinity(0)))
            now = max(client.run(own_peak_mb).values())
    same(results, r)
    texts = texts_to_embed([(cv, s, [200]) for cv in convs for s in STRATEGIES], 128)
    assert texts and cached(shared_embedder(), cache).missing(texts) == []
    assert during == [False] * 4
    assert len(peaks) == 1 and 100 < peaks[0] <= now  # a worker that ran the bench holds far more than 100 MB
    assert len(after) == 2 and all(after.values())
    assert_one_core_each(placed)
    assert all(c == sorted(os.sched_getaffinity(0)) for c in cores_after.values())


def where_it_runs():
    """The process, its threads' cores (every thread of it), for the pinning checks."""
    time.sleep(0.2)  # long enough for every worker to take a call
    threads = os.listdir("/proc/self/task")
    return os.getpid(), {frozenset(os.sched_getaffinity(int(t))) for t in threads}


def assert_one_core_each(placed):
    if len(os.sched_getaffinity(0)) < 2:
        pytest.skip("pinning needs a core per worker")
    cores = {pid: sets for pid, sets in placed}
    assert len(cores) == 2, placed  # both workers took calls
    assert all(len(sets) == 1 and len(next(iter(sets))) == 1 for sets in cores.values()), cores
    assert len({next(iter(sets)) for sets in cores.values()}) == 2  # not the same core


def test_jobs_run_one_process_per_core_where_the_cores_suffice():
    placed = [got for _, got in execute(where_it_runs, [(i, ()) for i in range(8)], jobs=2)]
    assert_one_core_each(placed)
    # more processes than cores: none is pinned
    many = len(os.sched_getaffinity(0)) + 1
    unpinned = [got for _, got in execute(where_it_runs, [(i, ()) for i in range(2 * many)], jobs=many)]
    assert all(sets == {frozenset(os.sched_getaffinity(0))} for _, sets in unpinned)


def test_fewer_pool_workers_than_cores_are_not_pinned():
    # the pool's own initializer with one worker (a --jobs run of one runs in-process, so it never meets it):
    # pinned, a second run on the machine would stack on the same first core
    spawn = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(1, mp_context=spawn, initializer=pin_next, initargs=(spawn.Value("i", 0), 1)) as pool:
        _, sets = pool.submit(where_it_runs).result()
    assert sets == {frozenset(os.sched_getaffinity(0))}


def test_recycled_workers_are_fresh_processes_each_on_a_core_of_its_own():
    with processes(2, recycle=1) as pool:  # two fresh processes for every two calls
        placed = dict(execute(where_it_runs, [(i, ()) for i in range(6)], jobs=2, pool=pool))
    pairs = [{placed[i][0]: placed[i][1] for i in (first, first + 1)} for first in range(0, 6, 2)]
    assert all(not set(a) & set(b) for a, b in itertools.combinations(pairs, 2))  # no process outlives its pair
    if len(os.sched_getaffinity(0)) != 2:
        pytest.skip("pinning needs as many workers as cores")
    for pair in pairs:  # a fresh process may take both calls of its pair before the other one has started
        assert all(len(sets) == 1 and len(next(iter(sets))) == 1 for sets in pair.values()), pair
        assert len({next(iter(sets)) for sets in pair.values()}) == len(pair)  # two processes: two cores


def test_dask_workers_get_core_slots_only_where_they_take_every_core_of_their_host_one_each():
    two = {"a:1": 2, "a:2": 2}
    assert slots([("a:2", "a", 1), ("a:1", "a", 1)], two) == {"a:1": 0, "a:2": 1}
    assert slots([("a:1", "a", 1)], {"a:1": 2}) == {}  # fewer workers than cores
    assert slots([("a:1", "a", 1), ("a:2", "a", 2)], two) == {}  # a worker with two threads
    assert slots([(f"a:{i}", "a", 1) for i in range(3)], {f"a:{i}": 2 for i in range(3)}) == {}  # more
    assert slots([("a:1", "a", 1), ("a:2", "a", 1), ("b:1", "b", 1)], {**two, "b:1": 2}) == {"a:1": 0, "a:2": 1}


def test_the_cache_holds_what_the_run_embeds_and_a_second_run_adds_nothing(convs, serial):
    (results, _, _), cache = serial
    c = EmbeddingCache(cache)
    before = len(c)
    ident = identity(shared_embedder())
    jobs = [(cv, s, [200]) for cv in convs for s in STRATEGIES]
    texts = texts_to_embed(jobs, 128)
    assert texts and len(c.get([c.key(ident, t) for t in texts], 384)) == len(set(texts))
    r, _, _ = run(convs, STRATEGIES, budget=[200, 600], per_turn_tokens=False, embed_cache=cache)
    same(results, r)
    assert len(c) == before


def test_with_dense_passages_the_warm_up_and_the_stores_embed_the_same_fewer_texts(convs, tmp_path):
    jobs = [(cv, s, [200]) for cv in convs for s in STRATEGIES]
    capped, every = texts_to_embed(jobs, 16, 1), texts_to_embed(jobs, 16)
    assert set(capped) < set(every)  # 16-token passages: turns of several, of which only the first has a vector
    cache = tmp_path / "e.sqlite3"
    r, _, _ = run(convs, STRATEGIES, budget=[200], per_turn_tokens=False, embed_cache=cache, passage_tokens=16,
                  dense_passages=1)
    assert r["evidence_recall"].notna().any()
    c, ident = EmbeddingCache(cache), identity(shared_embedder())
    deep = set(every) - set(capped)  # the warm-up embedded the capped texts, and no store asked for a deep passage
    assert len(c.get([c.key(ident, t) for t in capped], 384)) == len(set(capped))
    assert c.get([c.key(ident, t) for t in deep], 384) == {}


def test_a_cache_too_small_for_the_run_warns_and_gives_the_same_rows(convs, serial, tmp_path, monkeypatch):
    from memkit import CacheTooSmall

    (results, _, _), _ = serial
    monkeypatch.setenv("MEMKIT_EMBED_CACHE_ITEMS", "20")  # the run needs more: it evicts its own vectors
    with pytest.warns(CacheTooSmall, match="keeps 20 vectors"):
        r, _, _ = run(convs, STRATEGIES, budget=[200, 600], per_turn_tokens=False, embed_cache=tmp_path / "s.sqlite3")
    same(results, r)
    assert len(EmbeddingCache(tmp_path / "s.sqlite3")) <= 21  # trimmed once 2 (a tenth of the bound) more are put


def test_resume_runs_only_the_missing_jobs_and_merges_to_the_same_rows(convs, serial, tmp_path):
    (results, _, _), cache = serial
    parts = tmp_path / "parts"
    run(convs, STRATEGIES, budget=[200, 600], per_turn_tokens=False, embed_cache=cache, parts=parts)
    files = sorted(parts.glob("job-*.pkl"))
    assert len(files) == 12  # 3 conversations x (two-layer, rag:dense, summary at each of 2 budgets)
    removed, cut, kept = files[:3], files[3], files[4:]
    for f in removed:
        f.unlink()
    cut.write_bytes(cut.read_bytes()[:40])  # a part cut short by a crash is run again
    stamps = {f: f.stat().st_mtime_ns for f in kept}
    r, _, _ = run(convs, STRATEGIES, budget=[200, 600], per_turn_tokens=False, embed_cache=cache, parts=parts,
                  resume=True)
    same(results, r)
    assert {f: f.stat().st_mtime_ns for f in kept} == stamps  # finished jobs were not run again
    assert all(f.exists() for f in removed) and cut.stat().st_size > 40


def test_resume_refuses_a_folder_of_another_run(convs, tmp_path):
    parts = tmp_path / "parts"
    run(convs[:1], ["window"], budget=200, per_turn_tokens=False, parts=parts)
    with pytest.raises(ConfigError, match="other budgets"):
        run(convs[:1], ["window"], budget=400, per_turn_tokens=False, parts=parts, resume=True)
    r, _, _ = run(convs[:1], ["window"], budget=400, per_turn_tokens=False, parts=parts)  # afresh: fine
    assert set(r["budget"]) == {400}


def test_bad_run_options_are_refused(convs):
    with pytest.raises(ConfigError, match="jobs must be at least 1"):
        run(convs[:1], ["window"], jobs=0)
    with pytest.raises(ConfigError, match="recycle"):
        run(convs[:1], ["window"], jobs=2, recycle=-1)
    store = FactStore.ephemeral()
    try:
        with pytest.raises(ConfigError, match="not a FactStore"):
            run(convs[:1], ["window"], store=store, jobs=2)
    finally:
        store.close()
    with pytest.raises(ConfigError, match="this process only"):
        run(convs[:1], ["window"], jobs=2, judge_model=object())


def _bench(out: Path, cache: Path, *extra: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "memkit.cli", "bench", "--data", str(ROOT / "data" / "suite.jsonl"),
                             "--limit", "6", "--strategy", "two-layer:keyed", "--strategy", "rag:bm25",
                             "--budget", "300", "--no-turn-tokens", "--embed-cache", str(cache), "--out", str(out),
                             *extra], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def test_a_run_killed_by_sigkill_resumes_to_the_uninterrupted_results(tmp_path):
    cache = tmp_path / "e.sqlite3"
    whole = _bench(tmp_path / "whole", cache)
    out, err = whole.communicate(timeout=600)
    assert whole.returncode == 0, err
    assert "turns/s" in err and "12/12" in err  # progress: jobs done of the total, turns per second
    killed = _bench(tmp_path / "killed", cache)
    parts = tmp_path / "killed" / "parts"
    deadline = time.time() + 300
    while len(list(parts.glob("job-*.pkl"))) < 4 and time.time() < deadline and killed.poll() is None:
        time.sleep(0.05)
    os.kill(killed.pid, signal.SIGKILL)
    killed.wait()
    done = {f: f.stat().st_mtime_ns for f in parts.glob("job-*.pkl")}
    assert 4 <= len(done) < 12
    resumed = _bench(tmp_path / "killed", cache, "--resume")
    _, err = resumed.communicate(timeout=600)
    assert resumed.returncode == 0, err
    assert {f: f.stat().st_mtime_ns for f in done} == done
    same(pd.read_csv(tmp_path / "whole" / "results.csv"), pd.read_csv(tmp_path / "killed" / "results.csv"))



def test_a_conversations_rows_do_not_depend_on_what_the_process_ran_before():
    from memkit.eval.conversation import run_conversation, scoped

    convs = {c.id: c for c in load(ROOT / "data" / "chats.jsonl")}

    def rows(cid):
        store = FactStore.ephemeral(shared_embedder())
        try:
            found, _ = run_conversation(scoped(convs[cid], "rag:dense"), "rag:dense", [100, 400], 5, store,
                                        per_turn_tokens=False)
        finally:
            store.close()
        return [{k: v for k, v in r.items() if k != "read_ms"} for r in found]

    first = rows("chat05")
    rows("chat04")  # another conversation's store writes to the process's Chroma in between
    assert rows("chat05") == first


def test_a_conversations_ids_do_not_depend_on_the_budgets_it_is_asked_at(convs):
    """Ties between items of equal score go by id, so ids drawn by budget list made a run at 400 tokens and one
    at 100 and 400 differ at 400 (docs/decisions.md, "The cold run with four passages' vectors")."""
    from memkit.eval.conversation import run_conversation, scoped

    def ids(budgets):
        store = FactStore.ephemeral(shared_embedder())
        try:
            conv = scoped(convs[0], "two-layer:keyed")
            found, _ = run_conversation(conv, "two-layer:keyed", budgets, 5, store, per_turn_tokens=False)
            return sorted(f.id for f in store.get(conv.user_id)), [r for r in found if r["budget"] == 400]
        finally:
            store.close()

    (one, at_400), (two, both) = ids([400]), ids([100, 400])
    assert one and one == two
    assert [{k: v for k, v in r.items() if k != "read_ms"} for r in at_400] == \
        [{k: v for k, v in r.items() if k != "read_ms"} for r in both]


def test_a_runs_cost_takes_its_workers_peak_memory_from_them_when_they_say_it():
    from memkit.eval.runner import costed

    cost: dict = {}
    with costed(3, cost) as c:
        c["workers_peak_mb"] = 1234  # what run_jobs records from a Dask cluster's workers
    assert cost["peak_rss_mb"]["largest_worker"] == 1234 and "workers_peak_mb" not in cost
