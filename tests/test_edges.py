"""The catalogue of edges (issue 62): inputs a careless or hostile caller can pass, each with its named error or
its right result. Grouped by door: times, sizes, options, namespaces and URLs, forget, damage, model replies,
benchmark files. Every case asserts; none passes by not running."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from datetime import datetime, timezone
from pathlib import Path

import pytest
from conftest import interruptible

from memkit import FactStore, Memory, ReadOptions
from memkit.errors import (DatasetError, InvalidArgument, MemkitError, StoreClosed, StoreCorrupt, StorePathError,
                           StoreURLError)
from memkit.read.recall import RecallOptions
from memkit.types import Candidate, Episode

YEAR_10000 = datetime(9999, 12, 31, tzinfo=timezone.utc).timestamp() + 86400 * 2


@pytest.fixture(scope="module")
def memory(embedder):
    m = Memory(store=FactStore.ephemeral(embedder))
    m.observe("ann", "s1", "user", "I prefer metric units.", time=1.7e9)
    yield m
    m.close()


# ---- times -------------------------------------------------------------------------------------------------
BAD_TIMES = [1e18, -1e12, float("nan"), float("inf"), float("-inf"), YEAR_10000, 10**30, "yesterday", b"1", [1.7e9],
             True, complex(1, 1)]
GOOD_TIMES = [0, 1.7e9, -1e9, datetime(2024, 2, 29, 12, 0), datetime(2024, 2, 29, tzinfo=timezone.utc),
              datetime(9998, 12, 31)]


@pytest.mark.parametrize("t", BAD_TIMES, ids=repr)
def test_observe_refuses_a_time_out_of_range_and_the_user_still_reads(memory, t):
    with pytest.raises(InvalidArgument, match="time"):
        memory.observe("ann", "s1", "user", "I live in Oslo.", time=t)
    assert "metric" in memory.context("ann", "s1", "Which units?", budget=300).text


@pytest.mark.parametrize("t", BAD_TIMES, ids=repr)
def test_context_refuses_a_question_time_out_of_range(memory, t):
    with pytest.raises(InvalidArgument, match="now"):
        memory.context("ann", "s1", "Which units?", budget=300, now=t)


@pytest.mark.parametrize("t", BAD_TIMES, ids=repr)
def test_as_of_refuses_a_time_out_of_range(memory, t):
    with pytest.raises(InvalidArgument):
        memory.store.as_of("ann", t)


@pytest.mark.parametrize("t", GOOD_TIMES, ids=repr)
def test_a_time_in_range_is_kept_and_read_back(embedder, t):
    with Memory(store=FactStore.ephemeral(embedder)) as m:
        m.observe("bo", "s1", "user", "I prefer metric units.", time=t)
        m.end_session("bo", "s1")
        ctx = m.context("bo", "s2", "Which units do I prefer?", budget=300, now=t)
        assert "metric" in ctx.text


@pytest.mark.parametrize("t", [1e18, -1e15, 1e300], ids=repr)
def test_a_stored_episode_whose_date_cannot_be_written_never_fails_a_read(embedder, t):
    with Memory(store=FactStore.ephemeral(embedder)) as m:
        m.observe("cy", "s1", "user", "I keep bees in the garden.", time=1.7e9)
        with pytest.raises(InvalidArgument, match="time"):  # the store's own door refuses it too
            m.store.add_episode("cy", Episode("", "cy", "old", "old:1", "user", "user", "The bees swarmed.", t, 8))
        m.end_session("cy", "s1")
        m.store.records.db.execute("UPDATE episodes SET time = ?", (t,))  # as a store written before the check
        ctx = m.context("cy", "s2", "What about the bees?", budget=400)
        assert "bees" in ctx.text and "unknown date" in ctx.text


# ---- sizes ---------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("budget", [10**12, 10**7 + 1, 2**63, 0, -1, 1.5, "400", True, None, float("nan")], ids=repr)
def test_context_budget_out_of_range_is_refused_by_name(memory, budget):
    with pytest.raises(InvalidArgument, match="budget"):
        memory.context("ann", "s1", "Which units?", budget=budget)


@pytest.mark.parametrize("k", [10**12, 10**5 + 1, 0, -3, 2.0, "5", False], ids=repr)
def test_k_out_of_range_is_refused_by_name(memory, k):
    with pytest.raises(InvalidArgument, match="k"):
        memory.context("ann", "s1", "Which units?", budget=300, k=k)
    with pytest.raises(InvalidArgument, match="k"):
        memory.store.search("ann", "units", k=k)
    with pytest.raises(InvalidArgument, match="k"):
        memory.search("ann", "units", k=k)


def test_the_largest_budget_allowed_reads(memory):
    from memkit.validate import MAX_BUDGET

    assert "metric" in memory.context("ann", "s1", "Which units?", budget=MAX_BUDGET).text


@pytest.mark.parametrize("depth", [10**15, 10**5 + 1, 0, -1, 1.5, "30", True, None], ids=repr)
def test_recall_depth_out_of_range_is_refused_at_construction(depth):
    with pytest.raises(InvalidArgument, match="depth"):
        RecallOptions(depth=depth)


@pytest.mark.parametrize("k", [10**12, -1, 1.5], ids=repr)
def test_store_level_searches_bound_their_sizes(memory, k):
    with pytest.raises(InvalidArgument):
        memory.store.lexical("ann", "facts", "metric", k)
    with pytest.raises(InvalidArgument):
        memory.store.dense("ann", [0.0] * 384, {"facts": k})


# ---- options --------------------------------------------------------------------------------------------------
BAD_READ = [("k", 0), ("k", "5"), ("k", 10**9), ("min_score", float("nan")), ("min_score", "0.2"), ("min_score", 2.0),
            ("min_score", -2.0), ("profile_tokens", -1), ("profile_tokens", 1.5), ("profile_tokens", 10**12),
            ("recall", {"depth": 5}), ("facts", "yes"), ("facts", 1), ("episodes", "no"), ("episodes", None),
            ("neighbours", -1), ("neighbours", 10**6), ("episode_dates", "false"), ("speaker_runs", 0),
            ("episodes_for_facts", "True"), ("window_share", 1.5), ("window_share", float("nan")),
            ("document_share", -0.1), ("fold_repeats", "off"), ("near_repeats", float("nan")),
            ("passages_per_turn", -1), ("passages_per_turn", 10**9), ("profile_after", -1), ("profile_after", 1.5), ("diversity", 2), ("headers", ["facts"]),
            ("headers", {"nope": "x"}), ("headers", {"facts": 3})]


@pytest.mark.parametrize("name,value", BAD_READ, ids=lambda v: repr(v))
def test_read_options_validate_every_field(name, value):
    with pytest.raises(MemkitError, match=name):
        ReadOptions(**{name: value})


BAD_RECALL = [("channels", "lexical"), ("channels", ("bm25",)), ("channels", ()), ("channels", ("dense", "dense")),
              ("weights", (("sparse", 1.0),)), ("weights", (("dense", float("nan")),)), ("weights", (("dense", -1.0),)),
              ("weights", {"dense": 1.0}), ("weights", (("dense",),)), ("rrf_k", 0), ("rrf_k", -1), ("rrf_k", "10"),
              ("rrf_k", 10**9), ("timeframes", "no"), ("subjects", 1), ("subject_words", "false"),
              ("dense_names", None), ("name_variants", "yes"), ("instructions", -1), ("instructions", True),
              ("instructions", 10**6), ("first_person_only", "True")]


@pytest.mark.parametrize("name,value", BAD_RECALL, ids=lambda v: repr(v))
def test_recall_options_validate_every_field(name, value):
    with pytest.raises(MemkitError, match=name):
        RecallOptions(**{name: value})


def test_recall_options_take_a_list_of_channels_as_a_tuple():
    assert RecallOptions(channels=["dense"]).channels == ("dense",)


@pytest.mark.parametrize("read", [{"k": 3}, RecallOptions(), "fast", 5], ids=repr)
def test_memory_takes_only_read_options(read):
    with pytest.raises(MemkitError, match="ReadOptions"):
        Memory(read=read)


# ---- namespaces and URLs -------------------------------------------------------------------------------------
BAD_NAMESPACES = ["../escaped", "a/b", "a\\b", "..", ".", "", " ", "x" * 100, "with space", "ns\x00", "ns\n", "-lead",
                  "trail-", "é", "a.b", 123, None]


@pytest.mark.parametrize("ns", BAD_NAMESPACES, ids=repr)
@pytest.mark.parametrize("how", ["url", "persistent"])
def test_a_namespace_is_validated_before_anything_is_written(tmp_path, embedder, ns, how):
    folder = tmp_path / "store"
    with pytest.raises(InvalidArgument, match="namespace"):
        if how == "url":
            FactStore.from_url(f"file://{folder}", embedder, namespace=ns)
        else:
            FactStore.persistent(str(folder), embedder, namespace=ns)
    assert sorted(p.name for p in tmp_path.iterdir()) == []


@pytest.mark.parametrize("url,where", [("file://localhost{p}", "{p}"), ("file://{p}", "{p}"), ("file:{p}", "{p}"),
                                       ("file://{q}", "{p} x"), ("file://localhost{q}", "{p} x")], ids=str)
def test_file_urls_follow_rfc_8089(tmp_path, url, where):
    from memkit.store.base import parse_store_url

    p, q = str(tmp_path / "d"), str(tmp_path / "d") + "%20x"
    assert parse_store_url(url.format(p=p, q=q)) == ("file", where.format(p=p))


@pytest.mark.parametrize("url,said", [("file://otherhost/data", "host"), ("file://~/data", "~"),
                                      ("file:///tmp/x?mode=ro", "query"), ("file:///tmp/x#frag", "fragment"),
                                      ("file://relative/dir", "host"), ("file://", "path"), ("file:///", "path"),
                                      ("file:relative", "absolute")], ids=str)
def test_file_urls_that_name_no_local_folder_are_refused(url, said):
    from memkit.store.base import parse_store_url

    with pytest.raises(StoreURLError, match=said):
        parse_store_url(url)


def test_unusable_paths_get_a_named_error(tmp_path, embedder):
    a_file = tmp_path / "a-file"
    a_file.write_text("x")
    loop = tmp_path / "loop"
    loop.symlink_to(loop)
    for path in ("/proc/memkit-store", f"{tmp_path}/nul%00here", str(a_file), str(loop), f"{a_file}/under"):
        with pytest.raises(StorePathError):
            FactStore.from_url(f"file://{path}", embedder)


# ---- forget -----------------------------------------------------------------------------------------------------
SECRET = "zorblaxquintet"


def _files_holding(folder: Path, secret: str) -> list[str]:
    found = []
    for p in folder.rglob("*"):
        if p.is_file() and secret.encode() in p.read_bytes():
            found.append(str(p.relative_to(folder)))
    return found


def _persistent_memory(folder: Path, embedder):
    from memkit.write.episodic import SessionStore

    return Memory(store=FactStore.persistent(str(folder / "store"), embedder),
                  sessions=SessionStore(folder / "sessions.db"))


def test_forget_removes_a_user_from_everything_on_disk_and_in_every_read(tmp_path, embedder):
    m = _persistent_memory(tmp_path, embedder)
    m.observe("vic", "s1", "user", f"My password hint is {SECRET}.", time=1.7e9)
    m.observe("vic", "s1", "assistant", f"Noted: {SECRET}.", time=1.7e9 + 1)
    m.observe("vic", "kept", "user", f"Remember {SECRET} for the vault.", time=1.7e9 + 2)
    m.end_session("vic", "kept", keep=True)
    m.observe("vic", "s2", "user", "I prefer metric units.", time=1.7e9 + 3)
    m.observe("ola", "s1", "user", "I prefer imperial units.", time=1.7e9)
    m.store.queue.wait("vic", [Candidate(f"User said {SECRET}.", source=("x",))], 1.7e9)
    assert _files_holding(tmp_path, SECRET)  # the check can see it before
    m.forget("vic")
    assert _files_holding(tmp_path, SECRET) == []
    assert m.store.get("vic") == [] and m.store.episodes("vic") == [] and m.store.history("vic") == []
    assert not any(u == "vic" for u, *_ in m.pending) and m.sessions_store.sessions("vic") == []
    assert SECRET not in m.context("vic", "s1", f"What is {SECRET}?", budget=1000).text
    assert "imperial" in m.context("ola", "s1", "Which units?", budget=300).text
    m.close()
    m = _persistent_memory(tmp_path, embedder)  # reopened: nothing old comes back
    ctx = m.context("vic", "kept", f"What is {SECRET}? units?", budget=1000)
    assert SECRET not in ctx.text and "metric" not in ctx.text
    assert m.store.count("vic") == 0 and m.store.episodes("vic") == []
    m.close()
    assert _files_holding(tmp_path, SECRET) == []


def test_drop_user_is_forget_in_the_store_and_memory_forgets_its_open_sessions(embedder):
    with Memory(store=FactStore.ephemeral(embedder)) as m:
        m.observe("vic", "s1", "user", f"I am called {SECRET}.", time=1.7e9)
        m.forget("vic")
        assert ("vic", "s1") not in m.open_sessions
        assert SECRET not in m.context("vic", "s1", "what am I called?", budget=500).text


@pytest.mark.parametrize("user", ["", None, 3, ["vic"]], ids=repr)
def test_forget_needs_a_user_id(memory, user):
    with pytest.raises(MemkitError):
        memory.forget(user)


def test_forget_on_a_closed_memory_is_named(embedder):
    m = Memory(store=FactStore.ephemeral(embedder))
    m.close()
    with pytest.raises(StoreClosed):
        m.forget("vic")


# ---- a Memory after its with block ----------------------------------------------------------------------------
@pytest.mark.parametrize("call", ["observe", "context", "search", "flush", "forget", "session"])
@pytest.mark.parametrize("own", [True, False], ids=["own-store", "given-store"])
def test_a_memory_used_after_its_with_block_raises_a_named_error(embedder, call, own):
    store = FactStore.ephemeral(embedder)
    with (Memory() if own else Memory(store=store)) as m:
        m.observe("u", "s", "user", "I prefer metric units.", time=1.7e9)
    args = {"observe": ("u", "s", "user", "hi"), "context": ("u", "s", "units?"), "search": ("u", "units"),
            "flush": (), "forget": ("u",), "session": ("u", "s")}[call]
    with pytest.raises(StoreClosed):
        getattr(m, call)(*args)
    store.close()


# ---- damage -----------------------------------------------------------------------------------------------------
def _filled_store(folder: Path, embedder, n: int = 12) -> None:
    m = Memory(store=FactStore.persistent(str(folder), embedder))
    for i in range(n):
        m.observe("dan", "s1", "user", f"I prefer metric units number {i}.", time=1.7e9 + i)
    m.end_session("dan", "s1")
    m.close()


def _truncate(p: Path) -> None:
    p.write_bytes(p.read_bytes()[: max(1, p.stat().st_size // 3)])


DAMAGE = {"deleted": lambda p: p.unlink(), "emptied": lambda p: p.write_bytes(b""), "truncated": _truncate,
          "noise": lambda p: p.write_bytes(os.urandom(p.stat().st_size or 4096))}


@pytest.mark.parametrize("how", sorted(DAMAGE))
def test_records_damaged_while_vectors_remain_is_store_corrupt_never_an_empty_store(tmp_path, embedder, how):
    folder = tmp_path / "s"
    _filled_store(folder, embedder)
    records = folder / "memkit.sqlite3"
    for extra in ("-wal", "-shm"):
        Path(f"{records}{extra}").unlink(missing_ok=True)
    DAMAGE[how](records)
    with pytest.raises(StoreCorrupt, match="memkit store repair") as caught:
        s = FactStore.persistent(str(folder), embedder)
        s.episodes("dan")  # a damage found only on a read is named too
        s.close()
    assert str(records) in str(caught.value)


def test_a_deleted_lexical_index_is_rebuilt_with_nothing_lost(tmp_path, embedder):
    import shutil

    folder = tmp_path / "s"
    _filled_store(folder, embedder)
    shutil.rmtree(folder / "memkit.lexical")
    s = FactStore.persistent(str(folder), embedder)
    assert len(s.lexical("dan", "episodes", "metric units", 50)) == 12
    s.close()


def test_store_check_and_repair_on_the_command_line(tmp_path, embedder, capsys):
    import shutil

    from memkit.cli import main

    folder = tmp_path / "s"
    _filled_store(folder, embedder)
    assert main(["store", "check", str(folder)]) == 0
    assert "ok" in capsys.readouterr().out
    shutil.rmtree(folder / "memkit.lexical")
    (folder / "chroma.sqlite3").unlink()
    assert main(["store", "check", str(folder)]) == 1
    assert "vectors" in capsys.readouterr().out
    assert main(["store", "repair", str(folder)]) == 0
    assert main(["store", "check", str(folder)]) == 0
    s = FactStore.persistent(str(folder), embedder)
    assert len(s.episodes("dan")) == 12 and s.dense("dan", s.embed_query("metric"), {"episodes": 50})["episodes"]
    s.close()
    (folder / "memkit.sqlite3").write_bytes(b"")
    assert main(["store", "repair", str(folder)]) == 1
    assert "cannot" in capsys.readouterr().out


def test_a_records_file_that_is_not_a_database_is_named(tmp_path, embedder):
    folder = tmp_path / "s"
    folder.mkdir()
    (folder / "memkit.sqlite3").write_bytes(b"this is not a database" * 100)
    with pytest.raises(StoreCorrupt):
        FactStore.persistent(str(folder), embedder)


def test_store_corrupt_is_a_memkit_error():
    assert issubclass(StoreCorrupt, MemkitError) and not issubclass(StoreCorrupt, sqlite3.Error)


# ---- model replies ----------------------------------------------------------------------------------------------
SUPPORTED = [("I use python3 at work.", "User uses python3 at work."),
             ("I drive a BMW X5.", "User drives a BMW X5."),
             ("number1 is 101", "User says number1 is 101."),
             ("My flat is 3B on floor 12.", "User's flat is 3B on floor 12."),
             ("I run Ubuntu 24.04 on my laptop.", "User runs Ubuntu 24.04 on their laptop."),
             ("I have 2 cats.", "User has 2 cats.")]
UNSUPPORTED = [("I use python3 at work.", "User uses python2 at work."),
               ("I drive a BMW X5.", "User drives a BMW X7."),
               ("I'm 53.", "User is 35."),
               ("My sister lives in Oslo.", "User's sister Maria lives in Oslo."),
               ("I'm a pescatarian.", "User is a vegan."),
               ("I play the cello.", "Sofia is a cello player."),
               ("我喜欢喝茶。", "User loves football.")]


@pytest.mark.parametrize("turn,fact", SUPPORTED, ids=str)
def test_the_support_check_keeps_a_fact_that_repeats_its_turn(turn, fact):
    from memkit.write.support import unsupported

    assert unsupported(Candidate(fact), turn) is None


@pytest.mark.parametrize("turn,fact", UNSUPPORTED, ids=str)
def test_the_support_check_refuses_an_invented_or_misattributed_fact(turn, fact):
    from memkit.write.support import unsupported

    assert unsupported(Candidate(fact), turn)


@pytest.mark.parametrize("policy", ["keyed", "temporal"])
@pytest.mark.parametrize("values", [("Oslo", "Bergen"), ("Oslo", "Oslo"), ("Oslo", "Bergen", "Tromso")], ids=str)
def test_one_reply_with_one_key_twice_leaves_one_current_fact(embedder, policy, values):
    with Memory(store=FactStore.ephemeral(embedder), policy=policy) as m:
        cands = [Candidate(f"User lives in {v}.", key="user.city", value=v, source=("t1",)) for v in values]
        m.write("eve", cands, 1.7e9)
        now = [f for f in m.store.get("eve") if f.key == "user.city"]
        assert len(now) == 1 and now[0].value == values[-1]
        m.write("eve", [Candidate("User lives in Paris.", key="user.city", value="Paris", source=("t2",))], 1.7e9 + 1)
        now = [f for f in m.store.get("eve") if f.key == "user.city"]
        assert len(now) == 1 and now[0].value == "Paris"


@pytest.mark.parametrize("key", ["episodic", "User.Name", "user", "user..city", ".user.city", "user.city.",
                                 "user city", "user/city", "x" * 300, "user.ünits"], ids=repr)
def test_a_reply_with_a_junk_key_keeps_the_fact_without_the_key(key):
    from memkit.write.extract import candidates_from_json

    reply = {"facts": [{"text": "User prefers metric units.", "kind": "semantic", "key": key, "value": "metric",
                        "importance": 0.5}]}
    got = candidates_from_json(reply, json.dumps(reply))
    assert len(got) == 1 and got[0].key is None and any("key" in r for r in got.refused)


@pytest.mark.parametrize("reply", ['{"facts": [{"text": "User plays\nthe cello.", "kind": "semantic", "key": null, '
                                   '"value": null, "importance": 0.5}]}'])
def test_a_raw_newline_inside_a_json_string_is_read(reply):
    from memkit.models.llm import parse_json

    assert parse_json(reply)["facts"][0]["text"] == "User plays\nthe cello."


def test_the_retry_prompt_does_not_offer_an_empty_answer():
    from memkit.write.extract import RETRY_PROMPT

    assert '"facts": []' not in RETRY_PROMPT.replace("{{", "{").replace("}}", "}")


def test_a_plain_json_body_to_a_streamed_request_is_understood(fake_llm):
    from memkit import OpenAIChat

    fake_llm.fail("plain")
    fake_llm.enqueue('{"facts": []}')
    chat = OpenAIChat("m", base_url=fake_llm.base_url)
    assert chat.complete([{"role": "user", "content": "hi"}]) == '{"facts": []}'


# ---- benchmark files ----------------------------------------------------------------------------------------
def _conv(**probe):
    return {"id": "c1", "user_id": "u1",
            "sessions": [{"id": "s1", "time": "2026-03-03T09:00:00",
                          "turns": [{"id": "s1:1", "role": "user", "content": "I prefer metric units."}]}],
            "probes": [{"id": "p1", "after_session": "s1", "question": "Units?", "answer": "metric",
                        "evidence": ["s1:1"], **probe}]}


@pytest.mark.parametrize("evidence", ["s1:1", 3, 1.5, [3], [None], {"s1:1": 1}, [["s1:1"]]], ids=repr)
def test_evidence_of_the_wrong_type_is_a_dataset_error_naming_the_record(tmp_path, evidence):
    from memkit.eval.data import load_memkit

    path = tmp_path / "bad.jsonl"
    path.write_text(json.dumps(_conv(evidence=evidence)) + "\n")
    with pytest.raises(DatasetError, match=r"bad\.jsonl:1.*evidence"):
        load_memkit(path)


def test_a_binary_file_is_named(tmp_path):
    from memkit.eval.data import load_memkit

    path = tmp_path / "bin.jsonl"
    path.write_bytes(os.urandom(2000) + b"\xff\xfe")
    with pytest.raises(DatasetError, match="bin.jsonl"):
        load_memkit(path)


@pytest.mark.parametrize("limit", ["0", "-1", "x"])
def test_bench_limit_must_be_positive(tmp_path, limit, capsys):
    from memkit.cli import main

    with pytest.raises(SystemExit) as e:
        main(["bench", "--data", str(tmp_path / "x.jsonl"), "--limit", limit, "--out", str(tmp_path)])
    assert e.value.code == 2 and "--limit" in capsys.readouterr().err


def test_a_file_without_probes_says_so(tmp_path, capsys):
    from memkit.cli import main

    path = tmp_path / "noprobes.jsonl"
    conv = _conv()
    conv["probes"] = []
    path.write_text(json.dumps(conv) + "\n")
    assert main(["bench", "--data", str(path), "--out", str(tmp_path / "o"), "--strategy", "two-layer"]) == 2
    assert "probe" in capsys.readouterr().err


def test_flush_tries_a_model_that_came_back_and_an_outage_costs_one_error_per_flush(fake_llm, embedder):
    from memkit import EventKind, LLMExtractor, OpenAIChat

    chat = OpenAIChat("m", base_url=fake_llm.base_url, max_retries=0, breaker_after=1, breaker_cooldown=3600)
    good = json.dumps({"facts": [{"text": "User prefers metric units.", "kind": "semantic", "key": "user.units",
                                  "value": "metric", "importance": 0.8}]})
    with Memory(store=FactStore.ephemeral(embedder), extractor=LLMExtractor(chat)) as m:
        fake_llm.fail("500")
        for i in range(5):  # the first meets the fault and opens the breaker; the others fail at once
            m.observe("u", "s", "user", "I prefer metric units.", time=1.7e9 + i)
        assert len(m.pending_turns) == 5 and len(fake_llm.requests) == 1
        fake_llm.fail("500")  # still down: one try, one ERROR, the rest wait without an event each
        events = m.flush()
        assert [e.kind for e in events] == [EventKind.ERROR] and len(fake_llm.requests) == 2
        fake_llm.enqueue(*[good] * 5)  # back, long before the cooldown ends: flush() finds it at once
        events = m.flush()
        assert m.pending_turns == [] and EventKind.ERROR not in {e.kind for e in events}
        assert [f.value for f in m.store.get("u")] == ["metric"]


def test_two_stores_on_one_folder_in_one_process_write_at_once_and_one_closing_leaves_the_other(tmp_path, embedder):
    import threading

    a, b = (FactStore.persistent(str(tmp_path / "s"), embedder) for _ in range(2))
    errors: list[BaseException] = []

    def write(store: FactStore, user: str) -> None:
        try:
            m = Memory(store=store)
            for i in range(15):
                m.observe(user, "s", "user", f"I prefer metric units, note {i}.", time=1.7e9 + i)
            m.end_session(user, "s")
        except BaseException as e:  # noqa: BLE001 - collected and asserted below
            errors.append(e)

    threads = [threading.Thread(target=write, args=(s, u)) for s, u in ((a, "u"), (b, "v"))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    b.close()
    Memory(store=a).observe("u", "s2", "user", "I live in Oslo.", time=1.8e9)
    a.embed_pending("u")
    assert len(a.lexical("u", "episodes", "metric units note", 100)) == 15 and a.lexical("u", "episodes", "Oslo", 5)
    assert len(a.lexical("v", "episodes", "metric units note", 100)) == 15
    a.close()


def _children(pid: int) -> list[int]:
    """The processes ``pid`` started that still run, from any of its threads (Linux /proc lists each thread's
    children apart: Dask's nannies start workers from the cluster's event-loop thread)."""
    found = []
    for task in Path(f"/proc/{pid}/task").glob("*"):
        try:
            found += [int(k) for k in (task / "children").read_text().split()]
        except OSError:
            pass
    return found


def _ends(pid: int) -> bool:
    """Whether process ``pid`` ends (gone, or a zombie left for init to reap) within a minute: an orphan never
    does, and a child still importing on a loaded machine can take more than ten seconds to."""
    import time

    for _ in range(600):
        try:
            if "Z" in Path(f"/proc/{pid}/stat").read_text().split()[2]:
                return True
        except OSError:
            return True
        time.sleep(0.1)
    return False


@pytest.mark.server
@pytest.mark.parametrize("sig,when", [("SIGTERM", "running"), ("SIGINT", "running"), ("SIGTERM", "starting"),
                                      ("SIGINT", "starting")])
def test_memkit_serve_stops_its_chroma_child_on_a_signal(tmp_path, sig, when):
    import signal
    import subprocess
    import sys
    import time

    from memkit.models.server import free_port

    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "memkit.cli", "serve", str(tmp_path / "data"), "--port", str(port)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, preexec_fn=interruptible)

    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and not _children(proc.pid):  # the chroma child exists
        time.sleep(0.05)
    kids = _children(proc.pid)
    assert kids, proc.communicate(timeout=30)
    if when == "running":
        import urllib.request

        while time.monotonic() < deadline:
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{port}/api/v2/heartbeat", timeout=1)
                break
            except OSError:
                time.sleep(0.2)
    proc.send_signal(getattr(signal, sig))
    proc.communicate(timeout=60)
    assert all(_ends(kid) for kid in kids)  # gone, not orphaned


def test_a_turn_extracted_again_after_an_unusable_reply_is_not_the_identical_request(fake_llm):
    from memkit import ExtractionError, LLMExtractor, OpenAIChat

    x = LLMExtractor(OpenAIChat("m", base_url=fake_llm.base_url))
    fake_llm.enqueue("not json at all", "still not json")
    with pytest.raises(ExtractionError):
        x.extract("I prefer metric units.")
    first = fake_llm.requests[0]["body"]["messages"]
    fake_llm.enqueue(json.dumps({"facts": []}))
    x.extract("I prefer metric units.")  # what flush() does with a turn that waits
    again = fake_llm.requests[-1]["body"]["messages"]
    assert again != first and again[:2] == first[:2] and "still not json" in again[2]["content"]
    fake_llm.enqueue(json.dumps({"facts": []}))
    x.extract("I prefer metric units.")  # settled: asked plainly again
    assert fake_llm.requests[-1]["body"]["messages"] == first


@pytest.mark.parametrize("turns,summary,faithful", [
    ("I run Ubuntu 24.04 on my laptop since 2021.", "User runs Ubuntu 24.04 since 2021.", True),
    ("I run Ubuntu 24.04 on my laptop.", "User runs Ubuntu 22.04.", False),
    ("I use python3 at work.", "User uses python3 at work.", True),
    ("I drive a BMW X5.", "User drives a BMW X7.", False)], ids=str)
def test_a_summary_keeps_words_that_hold_a_digit_whole(turns, summary, faithful):
    from memkit.write.support import unfaithful

    assert (unfaithful(turns, summary) is None) is faithful


@pytest.mark.parametrize("where", [["--jobs", "2"], ["--scheduler", "local:2"]], ids=["processes", "dask"])
def test_ctrl_c_in_a_bench_with_workers_ends_it_and_every_worker(tmp_path, where):
    """SIGINT to the bench alone (not to its process group) while its two worker processes (or the two workers
    of a Dask cluster it started) run jobs: the run ends with 130 and says so, and no process under it outlives
    it."""
    import signal
    import time

    out = tmp_path / "out"
    suite = Path(__file__).parents[1] / "data" / "suite.jsonl"
    proc = subprocess.Popen([sys.executable, "-m", "memkit.cli", "bench", "--data", str(suite), "--strategy",
                             "window,rag:hybrid,two-layer:keyed", *where, "--out", str(out)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, preexec_fn=interruptible)
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline and not list((out / "parts").glob("job-*.pkl")):  # the workers run jobs
        time.sleep(0.05)
    running = _descendants(proc.pid)
    assert len(running) >= 2, proc.communicate(timeout=60)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=300)  # a bound against a hang only
    assert proc.returncode == 130 and "interrupted" in err and "Traceback" not in err, err[-2000:]
    assert all(_ends(pid) for pid in running)


def test_an_interrupted_pool_cancels_its_queued_calls_and_ends_its_running_ones():
    """What an interrupted bench does with its worker processes (``Workers.close(now=True)``): the calls still
    queued are cancelled, the running ones ended with their processes, instead of run to their end."""
    import time

    from memkit.eval.execution import Workers

    workers = Workers(2)
    workers._renew()
    futures = [workers._pool.submit(time.sleep, 600) for _ in range(6)]
    while not any(f.running() for f in futures):
        time.sleep(0.05)
    processes = list(workers._pool._processes.values())
    workers.close(now=True)
    assert len(processes) == 2 and all(_ends(p.pid) for p in processes)  # killed: gone, or a zombie to reap
    # every call ends without running to its end: cancelled while queued, or failed with its ended process
    # (which of the two is a race inside the executor: it cancels in its own thread)
    deadline = time.monotonic() + 60  # a bound against a hang only
    while not all(f.done() for f in futures) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert all(f.cancelled() or f.exception() is not None for f in futures)


TZ_SCRIPT = """
import json
from datetime import datetime
from memkit import FactStore, Memory
from memkit.eval.data import timestamp
m = Memory(store=FactStore.ephemeral())
m.observe("u", "s1", "user", "I started at the clinic.", time=datetime(2023, 5, 8, 23, 30))
m.observe("u", "s2", "user", "We watched the fireworks together.", time=1703807999.0)  # 28 Dec 2023, 23:59:59 UTC
m.observe("u", "s3", "user", "Ann brought a cake.", time=timestamp("30.12.2023, 22:42:04"))
for s in ("s1", "s2", "s3"):
    m.end_session("u", s)
out = [m.context("u", "s9", q, budget=300, now=1704242000.0).text
       for q in ("When did I start at the clinic?", "What did we watch last week?", "What happened in December?")]
print(json.dumps(out))
"""


def test_a_context_reads_the_same_in_every_time_zone():
    """Dates are read and written in UTC (a naive datetime or a dataset's time included), not in the machine's
    zone: the same memory gives the same context in Tokyo, in Los Angeles and in UTC."""
    texts = {}
    for zone in ("UTC", "Asia/Tokyo", "America/Los_Angeles"):
        done = subprocess.run([sys.executable, "-c", TZ_SCRIPT], capture_output=True, text=True, timeout=300,
                              env={**os.environ, "TZ": zone})
        assert done.returncode == 0, done.stderr[-2000:]
        texts[zone] = done.stdout
    assert "28 December 2023" in texts["UTC"] and "30 December 2023" in texts["UTC"]
    assert texts["Asia/Tokyo"] == texts["UTC"] == texts["America/Los_Angeles"]


def _descendants(pid: int) -> list[int]:
    """Every process under ``pid``."""
    found, todo = [], [pid]
    while todo:
        kids = _children(todo.pop())
        found += kids
        todo += kids
    return found
