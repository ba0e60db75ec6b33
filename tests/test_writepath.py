"""The write path: event log (write-ahead, replay), one fact per key under concurrency, model faults kept,
bad input named. Real Chroma, real processes (SIGKILL), the real openai client against a fake server."""

import json
import os
import shutil
import signal
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import chromadb
import pytest

from conftest import ChromaServer
from memkit import EventKind, FactStore, LLMExtractor, Memory, OpenAIChat, ReadOptions
from memkit.errors import (ConfigError, InvalidArgument, InvalidContent, IsolationError, MemkitError, MissingSessionId, MissingUserId,
                           ModelUnavailable, StorePathError)
from memkit.write.episodic import EpisodicBuffer
from memkit.store.log import EventLog
from memkit.store.records import Records
from memkit.store.chroma import ChromaIndex
from memkit.types import Fact
from memkit.write.reconcile import plan
from memkit.write.summarize import LLMSummarizer
from memkit.types import Candidate

ROOT = Path(__file__).resolve().parents[1]


def test_logged_events_are_replayed_not_replanned_after_an_outage(tmp_path, embedder):
    server = ChromaServer(tmp_path / "srv").start()
    records = str(tmp_path / "records.sqlite3")
    try:
        s1 = FactStore.http("127.0.0.1", server.port, embedder, records=records)
        events = plan("keyed", s1, "u", [Candidate("User lives in Oslo.", key="user.city", value="Oslo")], t=123.0)
        server.stop()
        with pytest.raises(MemkitError):
            s1.apply("u", events)  # logged, then the index was unreachable
        assert [e.id for _, e in s1.log.unapplied()] == [e.id for e in events]
        server.start()
        s2 = FactStore.http("127.0.0.1", server.port, embedder, records=records)  # replays on open
        assert [f.text for f in s2.get("u")] == ["User lives in Oslo."]
        assert [(e.id, e.time) for e in s2.history("u")] == [(e.id, 123.0) for e in events]
        assert s2.log.unapplied() == []
    finally:
        server.stop()


CHILD = textwrap.dedent("""
    import sys
    from memkit import FactStore, Memory
    from memkit.types import Candidate
    m = Memory(store=FactStore.persistent(sys.argv[1]))
    start = int(sys.argv[2])
    for i in range(start, start + 1000):
        m.write("u", [Candidate(f"Fact number {i}.", key=f"k.{i}", value=str(i))], time=float(i))
        print(i, flush=True)  # acknowledged
""")


def test_acknowledged_writes_survive_sigkill_in_order(tmp_path):
    path = str(tmp_path / "store")
    acked: list[int] = []
    for round_ in range(3):
        child = subprocess.Popen([sys.executable, "-c", CHILD, path, str(round_ * 1000)], stdout=subprocess.PIPE,
                                 text=True, cwd=ROOT)
        want = 5 + 7 * round_
        got = []
        while len(got) < want:
            line = child.stdout.readline()
            assert line, "the writer died before it was killed"
            got.append(int(line))
        os.kill(child.pid, signal.SIGKILL)
        child.wait()
        acked += got
    store = FactStore.persistent(path)
    current = {f.key for f in store.get("u")}
    assert {f"k.{i}" for i in acked} <= current  # no acknowledged fact lost
    order = [int(e.after.value) for e in store.history("u") if e.kind == EventKind.ADD]
    assert [i for i in order if i in set(acked)] == acked  # history order is acknowledgement order
    store.close()


def test_eight_threads_changing_one_key_leave_one_current_fact(embedder):
    m = Memory(store=FactStore.ephemeral(embedder))
    m.write("u", [Candidate("User lives in Rome.", key="user.city", value="Rome")])
    barrier = threading.Barrier(8)

    def writer(i: int) -> None:
        barrier.wait()
        for j in range(5):
            m.write("u", [Candidate(f"User lives in City{i}x{j}.", key="user.city", value=f"City{i}x{j}")])

    threads = [threading.Thread(target=writer, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(m.store.get("u", where={"key": "user.city"})) == 1
    assert len([e for e in m.store.history("u") if e.kind == EventKind.UPDATE]) == 40


def test_a_second_process_on_one_persistent_folder_is_refused(tmp_path, embedder):
    path = tmp_path / "store"
    s = FactStore.persistent(str(path), embedder)
    code = "import sys\nfrom memkit import FactStore\ntry:\n    FactStore.persistent(sys.argv[1])\n" \
           "except Exception as e:\n    print(type(e).__name__, e)\n"
    out = subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert out.stdout.startswith("StoreLocked") and f"memkit serve {path}" in out.stdout
    again = FactStore.persistent(str(path), embedder)  # this process may open it twice: closing one keeps the lock
    s.close()
    out = subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert out.stdout.startswith("StoreLocked")
    again.close()  # the last one closed releases the folder to other processes
    out = subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert out.returncode == 0 and out.stdout == "", out.stdout + out.stderr[-2000:]


WRITER = textwrap.dedent("""
    import sys
    from memkit import FactStore, Memory
    from memkit.types import Candidate
    log = sys.argv[5] if len(sys.argv) > 5 else None
    m = Memory(store=FactStore.http("127.0.0.1", int(sys.argv[1]), namespace=sys.argv[4], records=sys.argv[2], log=log))
    for j in range(25):
        m.write("u", [Candidate(f"User lives in P{sys.argv[3]}x{j}.", key="user.city", value=f"P{sys.argv[3]}x{j}")])
""")


@pytest.mark.server
def test_processes_sharing_a_server_and_records_keep_one_fact_per_key(chroma_server, tmp_path):
    records = str(tmp_path / "shared.sqlite3")
    ns = f"procs{os.getpid()}"
    procs = [subprocess.Popen([sys.executable, "-c", WRITER, str(chroma_server.port), records, str(i), ns], cwd=ROOT)
             for i in range(4)]
    assert all(p.wait(timeout=300) == 0 for p in procs)
    store = FactStore.http("127.0.0.1", chroma_server.port, namespace=ns, records=records)
    current = store.get("u", where={"key": "user.city"})
    assert len(current) == 1
    assert len(store.history("u")) == 100
    # the four writers took turns on the one fact index: it holds the current city, and only it
    assert [i for i, _ in store.lexical("u", "facts", "Where does the user live?", 200)] == [current[0].id]
    store.drop_user("u")


@pytest.mark.parametrize("fault", ["500", "429", "empty", "400"])
def test_model_faults_become_an_error_event_and_a_pending_turn(fake_llm, embedder, fault):
    model = OpenAIChat("m", base_url=fake_llm.base_url, api_key="k", max_retries=0)
    m = Memory(store=FactStore.ephemeral(embedder), extractor=LLMExtractor(model))
    fake_llm.fail(fault)
    [event] = m.observe("u", "s", "user", "I prefer metric units.")
    assert event.kind == EventKind.ERROR and "flush()" in event.reason
    assert m.pending_turns and m.store.history("u")[-1].kind == EventKind.ERROR
    fake_llm.enqueue('{"facts": [{"text": "User prefers metric units.", "key": "user.units", "value": "metric"}]}')
    assert [e.kind for e in m.flush()] == [EventKind.ADD] and not m.pending_turns
    if fault == "400":
        # only a refused response_format turns JSON mode off: the flush still asked for it
        assert "response_format" in fake_llm.requests[-1]["body"]


def test_a_slow_model_times_out_by_configuration(fake_llm):
    from memkit import Settings

    settings = Settings.from_env({"MEMKIT_LLM_MODEL": "m", "MEMKIT_LLM_BASE_URL": fake_llm.base_url,
                                  "MEMKIT_LLM_TIMEOUT": "0.5", "MEMKIT_LLM_MAX_RETRIES": "0"})
    fake_llm.fail("slow:3")
    with pytest.raises(ModelUnavailable, match="timeout"):  # without the setting the reply would arrive after 3 s
        settings.chat_model().complete([{"role": "user", "content": "hi"}])
    with pytest.raises(ConfigError, match="MEMKIT_LLM_TIMEOUT"):
        Settings.from_env({"MEMKIT_LLM_TIMEOUT": "soon"})


def test_a_failing_summarizer_keeps_turns_in_the_window(fake_llm):
    model = OpenAIChat("m", base_url=fake_llm.base_url, api_key="k", max_retries=0)
    buf = EpisodicBuffer("s", "u", window_tokens=20, summary_tokens=50, summarizer=LLMSummarizer(model))
    fake_llm.fail("500", "500")  # both folds (after the 2nd and the 3rd turn) meet a server error
    for i in range(3):
        buf.append("user", f"Turn {i} says something long enough to overflow the window.")
    assert buf.fold_error and len(buf.window) == 3 and not buf.summary.turn_ids  # nothing lost
    fake_llm.enqueue("Turns 0 and 1 overflow the window.")
    buf.append("user", "One more.")
    assert buf.fold_error is None and buf.summary.text == "Turns 0 and 1 overflow the window."
    assert list(buf.summary.turn_ids) + [t.id for t in buf.window] == [t.id for t in buf.turns]  # every turn somewhere


def test_a_summary_that_invents_or_loses_names_and_numbers_is_refused(fake_llm):
    model = OpenAIChat("m", base_url=fake_llm.base_url, api_key="k", max_retries=0)
    buf = EpisodicBuffer("s", "u", window_tokens=25, summary_tokens=60, summarizer=LLMSummarizer(model))
    fake_llm.enqueue("User: Hi! Assistant: Hello, how was the trip with John to Paris?",  # invented
                     "A user introduced themselves.")  # loses every name and number
    buf.append("user", "Priya here, a data scientist in Toronto since 2021; before that, Lisbon.")
    buf.append("assistant", "Welcome, Priya! Toronto in winter must be a change from Lisbon.")
    assert "never did: john, paris" in buf.fold_error and not buf.summary.turn_ids  # the turns stay
    buf.append("user", "It is, and I miss the sun.")
    assert "loses the turns' names and numbers" in buf.fold_error and not buf.summary.turn_ids
    fake_llm.enqueue("Priya, a data scientist in Toronto since 2021, came from Lisbon.")
    buf.append("user", "Anyway.")
    assert buf.fold_error is None and buf.summary.text.startswith("Priya, a data scientist")


@pytest.mark.parametrize("call,error", [
    (lambda m: m.context("u", "s", "q", budget="abc"), InvalidArgument),
    (lambda m: m.context("u", "s", "q", budget=None), InvalidArgument),
    (lambda m: m.context("u", "s", "q", budget=0), InvalidArgument),
    (lambda m: m.context("u", "s", "q", budget=-5), InvalidArgument),
    (lambda m: m.context("u", "s", None), InvalidArgument),
    (lambda m: m.search("u", "q", k=0), InvalidArgument),
    (lambda m: m.search("u", "q", k=-1), InvalidArgument),
    (lambda m: m.store.search("u", "q", k=0), InvalidArgument),
    (lambda m: m.observe("u", "s", "user", "hi", time="abc"), InvalidArgument),
    (lambda m: m.observe("u", "s", "user", "hi", time=float("nan")), InvalidArgument),
    (lambda m: m.observe("u", "s", "user", "hi", speaker=""), InvalidArgument),
    (lambda m: m.observe("u", "s", "user", "bad \ud800 text"), InvalidContent),
    (lambda m: m.observe("u\ud800", "s", "user", "hi"), MissingUserId),
    (lambda m: m.context("u", "s", "bad \udfff"), InvalidArgument),
    (lambda m: m.observe("u", "s\ud800", "user", "hi"), MissingSessionId),
    (lambda m: m.observe("u", "s", "boss", "hi"), InvalidArgument),
    (lambda m: m.store.as_of("u", "yesterday"), InvalidArgument),
    (lambda m: m.store.as_of("u", float("inf")), InvalidArgument),
    (lambda m: m.store.get("nobody-yet", where={"user_id": "x"}), IsolationError),
    (lambda m: m.store.search("nobody-yet", "q", where={"$and": [{"user_id": "x"}]}), IsolationError),
    (lambda m: Memory(store=m.store, policy="llm"), ConfigError),
    (lambda m: ReadOptions(k=0), InvalidArgument),
    (lambda m: Memory(store=m.store, passage_tokens=-1), InvalidArgument),
    (lambda m: Memory(store=m.store, passage_tokens=10**30), InvalidArgument),  # was SQLite's OverflowError
    (lambda m: Memory(store=m.store, dense_passages=-1), InvalidArgument),
    (lambda m: Memory(store=m.store, dense_passages=2.0), InvalidArgument),
    (lambda m: Memory(store=m.store, dense_passages=10**30), InvalidArgument),
    (lambda m: ReadOptions(passages_per_turn=1.5), InvalidArgument),
    (lambda m: ReadOptions(near_repeats=2), InvalidArgument),
    (lambda m: ReadOptions(diversity=-0.1), InvalidArgument),
    (lambda m: m.context("u", "s", "two weeks ago?", now="last Tuesday"), InvalidArgument),
])
def test_bad_input_gets_a_named_error_and_changes_nothing(embedder, call, error):
    m = Memory(store=FactStore.ephemeral(embedder))
    m.observe("u", "s", "user", "I prefer metric units.")
    before = (len(m.store.get("u")), len(m.store.episodes("u")))
    with pytest.raises(error):
        call(m)
    assert (len(m.store.get("u")), len(m.store.episodes("u"))) == before


def test_bad_store_paths_are_named(tmp_path):
    f = tmp_path / "a-file"
    f.write_text("x")
    with pytest.raises(StorePathError, match="is a file"):
        FactStore.persistent(str(f))
    with pytest.raises(StorePathError, match="lies under .*a-file, which is a file"):
        FactStore.persistent(str(f / "store"))
    if os.geteuid() == 0:
        pytest.skip("root can write anywhere: the unwritable-folder case cannot be shown")
    ro = tmp_path / "ro"
    ro.mkdir(mode=0o500)
    with pytest.raises(StorePathError, match="cannot write"):
        FactStore.persistent(str(ro / "store"))


def test_a_store_url_opens_its_kind_and_a_wrong_one_is_named(tmp_path, embedder, chroma_server, postgres_url):
    from memkit.errors import StoreURLError

    urls = {"memory": "memory://", "persistent": f"file://{tmp_path / 'disk'}",
            "http": f"chroma://127.0.0.1:{chroma_server.port}", "postgres": postgres_url}
    for backend, url in urls.items():
        store = FactStore.from_url(url, embedder, namespace=f"url{os.getpid()}")
        store.upsert("u", [Fact("f1", "u", "User prefers metric units.", key="user.units", value="metric")])
        assert [f.value for f in store.get("u")] == ["metric"], backend
        store.close()
    again = FactStore.from_url(urls["persistent"], embedder, namespace=f"url{os.getpid()}")
    assert [f.value for f in again.get("u")] == ["metric"]  # the same folder, opened by its URL
    again.close()
    for bad in ("", "sqlite:///x.db", "chroma://host-without-port", "file://", "/a/path", 3):
        with pytest.raises(StoreURLError, match="memory://"):
            FactStore.from_url(bad, embedder)
    with pytest.raises(StoreURLError, match="max_users"):
        FactStore.from_url("memory://", embedder, max_users=3)  # an option of another kind of store


def test_a_megabyte_turn_is_observed_and_folded_quickly(embedder):
    m = Memory(store=FactStore.ephemeral(embedder), window_tokens=50)
    text = " ".join(f"Sentence {i} talks about tea, trains and the garden." for i in range(20000))
    m.observe("u", "s", "user", text)  # a quadratic fold took minutes here; speed itself is a benchmark
    m.observe("u", "s", "assistant", "Noted.")  # the megabyte turn leaves the window: it is folded
    buf = m.session("u", "s")
    assert buf.summary.turn_ids and m.store.episodes("u")[0].content == text


def test_extraction_error_is_an_event_not_an_exception(fake_llm, embedder):
    m = Memory(store=FactStore.ephemeral(embedder),
               extractor=LLMExtractor(OpenAIChat("m", base_url=fake_llm.base_url, api_key="k")))
    fake_llm.enqueue("no json here", "still no json")  # asked again once
    [event] = m.observe("u", "s", "user", "I prefer metric units.")
    assert event.kind == EventKind.ERROR and "no valid JSON" in event.reason and "attempt 1 of 3" in event.reason
    assert len(m.pending_turns) == 1  # not settled: flush() tries it again, a bounded number of times
    fake_llm.enqueue("no json", "no json")
    [event] = m.flush()
    assert "attempt 2 of 3" in event.reason and len(m.pending_turns) == 1
    fake_llm.enqueue("no json", "no json")
    [event] = m.flush()
    assert "given up after 3 attempts" in event.reason and not m.pending_turns  # reported, and the turn settled
    assert m.flush() == [] and len(fake_llm.requests) == 6  # each attempt: one request, and one asking again


def test_a_turn_whose_reply_was_unusable_is_extracted_by_a_later_flush(fake_llm, embedder):
    m = Memory(store=FactStore.ephemeral(embedder),
               extractor=LLMExtractor(OpenAIChat("m", base_url=fake_llm.base_url, api_key="k")))
    fake_llm.enqueue("no json here", "still no json")
    m.observe("u", "s", "user", "I prefer metric units.")
    fake_llm.enqueue('{"facts": [{"text": "User prefers metric units.", "key": "user.units", "value": "metric"}]}')
    assert [e.kind for e in m.flush()] == [EventKind.ADD] and not m.pending_turns


def test_policies_are_objects_with_typed_options(embedder):
    from memkit import SimilarityPolicy, as_policy

    assert as_policy("similarity", threshold=0.9) == SimilarityPolicy(threshold=0.9)
    with pytest.raises(ConfigError, match="treshold"):
        as_policy("similarity", treshold=0.9)

    class PlanNothing:  # any object with the Policy protocol's two methods is a policy
        name = "nothing"
        resolves_at_read = False

        def plan(self, store, user_id, cands, t):
            return []

        def resolve(self, facts):
            return list(facts)

    m = Memory(store=FactStore.ephemeral(embedder), policy=PlanNothing())
    assert m.observe("u", "s", "user", "I prefer metric units.") == [] and m.store.get("u") == []
    assert m.store.episodes("u")  # the turn is still kept as an episode


def test_registry_builds_components_by_name_and_names_the_known_ones(embedder):
    from memkit import registry
    from memkit.write.reconcile import SimilarityPolicy
    from memkit.write.rules import RuleExtractor

    assert registry.build("policy", "similarity", threshold=0.9) == SimilarityPolicy(threshold=0.9)
    assert isinstance(registry.build("extractor", "rules"), RuleExtractor)
    with pytest.raises(ConfigError, match="choose one of"):
        registry.build("extractor", "magic")
    with pytest.raises(ConfigError, match="treshold"):
        registry.build("policy", "similarity", treshold=0.9)
    s = registry.build("strategy", "rag:bm25", user_id="u", store=FactStore.ephemeral(embedder))
    assert s.name == "rag:bm25" and not s.keeps_facts
    # each class says whether it is built with the chat model; a two-layer strategy asks its policy
    assert [registry.needs_model("policy", p) for p in ("keyed", "llm")] == [False, True]
    assert registry.needs_model("strategy", "two-layer:llm") and not registry.needs_model("strategy", "rag:bm25")
    assert registry.needs_model("extractor", "llm") and not registry.needs_model("summarizer", "extractive")
    with pytest.raises(ConfigError, match="takes no options"):  # no option is swallowed
        registry.build("policy", "keyed", threshold=0.9)
    with pytest.raises(ConfigError, match="not a policy"):
        Memory(store=FactStore.ephemeral(embedder), policy=RuleExtractor())
    assert FactStore.ephemeral().embedder is FactStore.ephemeral().embedder  # one MiniLM per process


def test_the_registry_is_a_leaf_that_loads_the_built_in_components_it_is_asked_for():
    code = ("import sys, memkit.registry as r\n"
            "print(sorted(m for m in sys.modules if m.startswith('memkit.')))\n"
            "print(r.names('policy'))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=300)
    loaded, policies = out.stdout.splitlines()
    assert loaded == "['memkit.errors', 'memkit.lazy', 'memkit.registry']", out.stderr[-2000:]
    assert policies == "['similarity', 'keyed', 'llm', 'append', 'temporal']"


def _profile_matches_index(store, user_id="u"):
    return sorted(f.id for f in store.profile(user_id)) == sorted(f.id for f in store.get(user_id))


@pytest.mark.parametrize("policy", ["keyed", "temporal", "similarity", "append"])
def test_the_maintained_profile_follows_every_change_and_a_restart(tmp_path, embedder, policy):
    path = str(tmp_path / "store")
    m = Memory(store=FactStore.persistent(path, embedder), policy=policy)
    for t, text in enumerate(["I live in Rome.", "I prefer metric units.", "I use Go.", "I moved to Oslo.",
                              "I switched from Go to Python.", "Actually I prefer imperial units."]):
        m.observe("u", "s1", "user", text, time=float(t))
    assert _profile_matches_index(m.store) and len(m.store.profile("u")) >= 3
    city = m.store.profile("u", keys=["user.location"])
    assert city and all(f.key == "user.location" for f in city)
    assert any("Oslo" in f.text for f in city)
    assert m.store.profile("u", limit=2) == m.store.profile("u")[:2]  # the most important first
    m.store.close()
    reopened = FactStore.persistent(path, embedder)
    assert _profile_matches_index(reopened)
    assert reopened.profile("someone-else") == []
    reopened.close()


def chromadb_client():
    return chromadb.EphemeralClient()


def test_a_log_written_before_the_profile_existed_is_folded_into_it(tmp_path, embedder):
    records = tmp_path / "old.sqlite3"
    m = Memory(store=FactStore(ChromaIndex(chromadb_client(), embedder, "old", "custom"), Records(records),
                               embedder=embedder))
    for text in ["I live in Rome.", "I moved to Oslo.", "I use Go."]:
        m.observe("u", "s", "user", text)
    want = sorted((f.id, f.text) for f in m.store.profile("u"))
    m.store.log.db.execute("DELETE FROM profile")  # what a records file of the previous version holds
    again = EventLog(Records(records).db)
    assert sorted((f.id, f.text) for f in again.profile(m.store.owner("u"), "u")) == want


def test_the_lexical_index_is_filled_from_the_records_when_new_missing_damaged_or_older(tmp_path, embedder):
    path = tmp_path / "store"
    store = FactStore.persistent(str(path), embedder)
    Memory(store=store).observe("u", "s", "user", "I live in Rome and I prefer metric units.")
    Memory(store=store).observe("v", "s", "user", "I live in Lisbon.")
    store.embed_pending("u")
    Memory(store=store).observe("u", "s2", "user", "My neighbour plays the oboe.")  # still pending at close
    # what an older memkit left: episodes (and facts before that) in FTS5, a facts-only tantivy folder
    db = store.records.db
    db.execute("CREATE VIRTUAL TABLE lexical USING fts5(owner, body)")
    db.execute("CREATE TABLE lex_refs (id INTEGER PRIMARY KEY, owner TEXT, kind TEXT, ref TEXT)")
    store.close()
    folder = path / "memkit.lexical"
    (path / "memkit.facts-index").mkdir()
    for damage in ("older", "remove", "garble"):
        if damage in ("older", "remove"):
            shutil.rmtree(folder)
        else:
            (folder / "meta.json").write_text("not json")
        store = FactStore.persistent(str(path), embedder)
        rome = [f.id for f in store.profile("u") if "Rome" in f.text]
        assert rome and [i for i, _ in store.lexical("u", "facts", "Which city, Rome?", 10)] == rome  # from the profile
        assert store.lexical("u", "facts", "Lisbon", 10) == []  # and within the user only
        said = store.episodes("u")
        found = [i for i, _ in store.lexical("u", "episodes", "metric units Rome oboe", 10)]
        assert sorted(found) == sorted(e.id for e in said) and len(said) == 2  # from the records, the pending one too
        assert store.lexical("v", "episodes", "Rome oboe", 10) == []
        tables = {r[0] for r in store.records.db.rows("SELECT name FROM sqlite_master WHERE type = 'table'")}
        assert not tables & {"lexical", "lex_refs"} and not (path / "memkit.facts-index").exists()
        store.close()


def test_a_profile_read_refuses_a_row_of_another_user(embedder):
    store = FactStore.ephemeral(embedder)
    store.log.put_profile(store.owner("bob"), [Fact(id="x", user_id="alice", text="Alice lives in Rome.")])
    with pytest.raises(IsolationError):
        store.profile("bob")


def test_a_postgres_log_replays_what_an_outage_left_unapplied(tmp_path, embedder, postgres_url):
    server = ChromaServer(tmp_path / "srv").start()
    try:
        s1 = FactStore.http("127.0.0.1", server.port, embedder, records=tmp_path / "a.sqlite3", log=postgres_url,
                            namespace="pgreplay")
        events = plan("keyed", s1, "u", [Candidate("User lives in Oslo.", key="user.city", value="Oslo")], t=123.0)
        server.stop()
        with pytest.raises(MemkitError):
            s1.apply("u", events)
        server.start()
        # another machine: its own records file, the same server and the same log
        s2 = FactStore.http("127.0.0.1", server.port, embedder, records=tmp_path / "b.sqlite3", log=postgres_url,
                            namespace="pgreplay")
        assert [f.text for f in s2.get("u")] == ["User lives in Oslo."]
        assert [f.text for f in s2.profile("u")] == ["User lives in Oslo."]
        assert [(e.id, e.time) for e in s2.history("u")] == [(e.id, 123.0) for e in events]
        s2.drop_user("u")
    finally:
        server.stop()


@pytest.mark.server
def test_machines_sharing_a_server_and_a_postgres_log_keep_one_fact_per_key(chroma_server, tmp_path, postgres_url):
    ns = f"pg{os.getpid()}"
    # every process has its own records file, as app processes on separate machines would
    procs = [subprocess.Popen([sys.executable, "-c", WRITER, str(chroma_server.port),
                               str(tmp_path / f"machine{i}.sqlite3"), str(i), ns, postgres_url], cwd=ROOT)
             for i in range(4)]
    assert all(p.wait(timeout=300) == 0 for p in procs)
    store = FactStore.http("127.0.0.1", chroma_server.port, namespace=ns, records=tmp_path / "reader.sqlite3",
                           log=postgres_url)
    assert len(store.get("u", where={"key": "user.city"})) == 1
    assert len(store.profile("u", keys=["user.city"])) == 1
    seqs = [e.time for e in store.history("u")]
    assert len(seqs) == 100
    store.drop_user("u")


OPENER = "import sys; from memkit import FactStore; FactStore.http('127.0.0.1', int(sys.argv[1]), namespace=sys.argv[2], " \
         "records=sys.argv[3], log=sys.argv[4]).close()"


@pytest.mark.server
def test_a_store_opening_between_another_machines_fact_vector_and_its_profile_row_waits_for_the_row(
        chroma_server, tmp_path, postgres_url):
    # a first fact is being written by another machine: its vector is in the shared index, its profile row not
    # yet. An open that looked then saw "a log with no fact, an index with facts" and refused a sound store
    ns = f"mid{os.getpid()}"
    writer = FactStore.http("127.0.0.1", chroma_server.port, namespace=ns, records=tmp_path / "w.sqlite3",
                            log=postgres_url)
    events = plan("keyed", writer, "u", [Candidate("User lives in Oslo.", key="user.city", value="Oslo")], t=1.0)
    owner = writer.owner("u")
    with writer.user_lock("u"):
        seqs = writer.log.append(owner, events)
        fact = events[0].after
        writer.vectors.put(owner, "u", "facts", [fact.id], writer.embedder([fact.text]))
        opener = subprocess.Popen([sys.executable, "-c", OPENER, str(chroma_server.port), ns,
                                   str(tmp_path / "r.sqlite3"), postgres_url], cwd=ROOT, stderr=subprocess.PIPE, text=True)
        with pytest.raises(subprocess.TimeoutExpired):  # the opener waits for the write to complete
            opener.wait(timeout=20)
        writer.facts.effect(owner, "u", events)
        writer.log.mark_applied(owner, seqs)
    assert opener.wait(timeout=120) == 0, opener.stderr.read()
    assert [f.value for f in writer.get("u")] == ["Oslo"]
    writer.drop_user("u")
    writer.close()


def test_a_postgres_log_that_cannot_be_reached_is_named(tmp_path, chroma_server):
    from memkit.errors import StoreUnavailable

    with pytest.raises(StoreUnavailable, match="event log"):
        FactStore.http("127.0.0.1", chroma_server.port, records=tmp_path / "r.sqlite3",
                       log=f"postgresql://postgres@/postgres?host={tmp_path}/nowhere")


OUTAGE_WRITER = """
import os, signal, sys
from memkit import FactStore, LLMExtractor, Memory, OpenAIChat
from memkit.types import EventKind
model = OpenAIChat("m", base_url="http://127.0.0.1:9/v1", api_key="k", max_retries=0, timeout=2)  # nothing listens
where = sys.argv[1]
store = FactStore.postgres(where, namespace=sys.argv[2]) if where.startswith("postgresql") else FactStore.persistent(where)
m = Memory(store=store, extractor=LLMExtractor(model))
errors = 0
for i in range(12):
    [event] = m.observe("u", "s", "user", f"My favourite number is {i}.", turn_id=f"t{i}")
    errors += event.kind == EventKind.ERROR and "ModelUnavailable" in event.reason
print(errors, len(m.pending_turns), flush=True)
os.kill(os.getpid(), signal.SIGKILL)  # no shutdown, no flush
"""


@pytest.mark.parametrize("kind", ["persistent", "postgres"])
def test_turns_that_waited_for_the_model_are_extracted_by_flush_in_a_new_process(kind, tmp_path, request, fake_llm,
                                                                                  embedder):
    where = request.getfixturevalue("postgres_url") if kind == "postgres" else str(tmp_path / "store")
    ns = f"outage{os.getpid()}"
    r = subprocess.run([sys.executable, "-c", OUTAGE_WRITER, where, ns], capture_output=True, text=True, timeout=300)
    assert r.returncode == -signal.SIGKILL and r.stdout.split() == ["12", "12"], r.stderr[-2000:]
    model = OpenAIChat("m", base_url=fake_llm.base_url, api_key="k", max_retries=0)
    store = FactStore.postgres(where, embedder, namespace=ns) if kind == "postgres" else FactStore.persistent(where, embedder)
    m = Memory(store=store, extractor=LLMExtractor(model))
    assert [t.id for _, t, _ in m.pending_turns] == [f"t{i}" for i in range(12)]  # read from the records
    fake_llm.enqueue(*[json.dumps({"facts": [{"text": f"User's favourite number is {i}.", "key": f"user.n{i}",
                                              "value": str(i)}]}) for i in range(12)])
    events = m.flush()
    assert len(fake_llm.requests) == 12 and [e.kind for e in events] == [EventKind.ADD] * 12
    assert [e.source for e in events] == [(f"t{i}",) for i in range(12)] and not m.pending_turns
    assert m.flush() == [] and len(fake_llm.requests) == 12  # settled: nothing extracted twice
    assert len(m.store.get("u")) == 12


def test_writes_that_waited_for_the_store_are_planned_by_flush_in_a_new_memory(tmp_path, embedder):
    path = str(tmp_path / "store")
    store = FactStore.persistent(path, embedder)
    store.queue.wait("u", [Candidate("User prefers metric units.", key="user.units", value="metric", source=("t1",))], 5.0)
    store.close()
    m = Memory(store=FactStore.persistent(path, embedder))
    assert [(u, [c.key for c in cands], t) for u, cands, t in m.pending] == [("u", ["user.units"], 5.0)]
    [event] = m.flush()
    assert event.kind == EventKind.ADD and event.time == 5.0 and event.after.source == ("t1",)
    assert m.pending == [] and m.flush() == []


def test_records_of_an_older_memkit_migrate_once_at_open(tmp_path):
    import sqlite3

    from memkit.store.records import MIGRATIONS
    from memkit.types import Episode

    steps = MIGRATIONS["sqlite"]
    path = tmp_path / "old.sqlite3"
    db = sqlite3.connect(path)  # what memkit wrote before schema versions: the episodes table, user_version 0
    db.executescript(steps[0])
    db.execute("INSERT INTO episodes (owner, user_id, session_id, turn_id, speaker, role, content, time, tokens, pos)"
               " VALUES ('o', 'u', 's', 't0', 'user', 'user', 'An old turn.', 1.0, 3, 0)")
    db.commit()
    db.close()
    records = Records(path)
    assert records.version == len(steps)
    assert [e.content for e in records.episodes("o", "u")] == ["An old turn."] and records.to_extract() == []
    new = records.add_episode("o", Episode("", "u", "s", "t1", "user", "user", "A new turn.", 2.0, 3), extract=True)
    assert [e.id for e in records.to_extract()] == [new.id]
    records.close()
    again = Records(path)  # opened again: nothing to migrate, the mark kept
    assert again.version == len(steps) and [e.id for e in again.to_extract()] == [new.id]
    again.close()


def test_the_write_path_works_without_a_memory(embedder):
    """``WritePath`` is the write side on its own (what an async memory or an agent framework's store builds
    on): a turn recorded for extraction is extracted, planned and settled; a plain-list extractor works."""
    from memkit.types import Episode, Turn
    from memkit.write.path import WritePath
    from memkit.write.reconcile import KeyedPolicy

    class Plain:
        def extract(self, text, source=()):
            return [Candidate(text="User lives in Oslo.", key="user.city", value="Oslo", source=source)]

    store = FactStore.ephemeral(embedder)
    path = WritePath(store, Plain(), KeyedPolicy())
    turn = Turn("t1", "s", "u", "user", "I live in Oslo.", 5, 1.7e9)
    episode = store.add_episode("u", Episode("", "u", "s", "t1", "user", "user", turn.content, turn.time, 5), extract=True)
    assert path.pending_turns() == [("u", turn, None)]
    events = path.turn("u", turn, None, episode.id)
    assert [e.kind.value for e in events] == ["ADD"] and [f.value for f in store.get("u")] == ["Oslo"]
    assert path.pending_turns() == [] and path.flush() == []
    store.close()
