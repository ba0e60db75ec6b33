"""MemkitStore, LangGraph's BaseStore on memkit's semantic layer: the same answers as LangGraph's own
InMemoryStore for a seeded random run of puts, deletes, gets, filtered searches and namespace listings (a
differential check: LangGraph publishes no store conformance suite); query search by memkit's recall, within
a namespace only; the async forms; and what a put leaves in the event log, across a reopen."""

import asyncio
import random

import pytest

pytest.importorskip("langgraph")
from langgraph.store.base import InvalidNamespaceError, MatchCondition  # noqa: E402
from langgraph.store.memory import InMemoryStore  # noqa: E402

from memkit import FactStore  # noqa: E402
from memkit.errors import InvalidArgument  # noqa: E402
from memkit.integrations.langgraph import MemkitStore, user_of  # noqa: E402


def _view(items):
    return sorted((tuple(i.namespace), i.key, repr(sorted(i.value.items()))) for i in items)


def test_a_seeded_random_run_answers_as_langgraphs_own_store(tmp_path, embedder):
    rng = random.Random(7)
    ours, theirs = MemkitStore(FactStore.persistent(str(tmp_path / "s"), embedder)), InMemoryStore()
    spaces = [("memories", "ana"), ("memories", "bob"), ("memories", "bob", "work"), ("prefs", "ana")]
    for step in range(150):
        ns, key, op = rng.choice(spaces), f"k{rng.randrange(6)}", rng.random()
        if op < 0.45:
            value = {"text": f"note {rng.randrange(4)}", "n": rng.randrange(5), "tag": rng.choice(["a", "b", "B"])}
            ours.put(ns, key, value)
            theirs.put(ns, key, value)
        elif op < 0.55:
            ours.delete(ns, key)
            theirs.delete(ns, key)
        elif op < 0.7:
            a, b = ours.get(ns, key), theirs.get(ns, key)
            assert (a is None) == (b is None) and (a is None or (a.value, a.key, a.namespace) == (b.value, b.key, b.namespace)), step
        elif op < 0.9:
            prefix = ns[:rng.choice([1, 2])]
            flt = rng.choice([None, {"tag": "a"}, {"n": {"$gte": 2}}, {"n": {"$ne": 3}, "tag": "B"}])
            assert _view(ours.search(prefix, filter=flt, limit=1000)) == _view(theirs.search(prefix, filter=flt, limit=1000)), step
        else:
            for cond in ((), (MatchCondition("prefix", ("memories",)),), (MatchCondition("suffix", ("ana",)),)):
                for depth in (None, 1):
                    assert sorted(ours.list_namespaces(prefix=None, max_depth=depth, limit=100) if not cond else
                                  ours.batch([_list(cond, depth)])[0]) == \
                        sorted(theirs.list_namespaces(max_depth=depth, limit=100) if not cond else
                               theirs.batch([_list(cond, depth)])[0]), (step, cond, depth)
    ours.store.close()
    ours.close()


def _list(cond, depth):
    from langgraph.store.base import ListNamespacesOp

    return ListNamespacesOp(match_conditions=cond, max_depth=depth, limit=100, offset=0)


def test_query_search_ranks_by_recall_within_the_namespace_only(embedder):
    s = MemkitStore(FactStore.ephemeral(embedder))
    s.put(("memories", "ana"), "1", {"text": "Ana loves pizza with anchovies."})
    s.put(("memories", "ana"), "2", {"text": "Ana works as a nurse in Lisbon."})
    s.put(("memories", "ana"), "3", {"text": "A secret kept apart.", "kind": "private"}, index=False)
    s.put(("memories", "bob"), "1", {"text": "Bob loves pizza too."})
    found = s.search(("memories", "ana"), query="What food does she like?", limit=5)
    assert [i.key for i in found][:1] == ["1"] and all(i.namespace == ("memories", "ana") for i in found)
    assert "3" not in [i.key for i in found] and found[0].score is not None  # index=False: not in a query search
    assert [i.key for i in s.search(("memories", "ana"), filter={"kind": "private"})] == ["3"]
    both = s.search(("memories",), query="pizza", limit=10)
    assert {(i.namespace, i.key) for i in both} >= {(("memories", "ana"), "1"), (("memories", "bob"), "1")}
    page = [i.key for i in s.search(("memories", "ana"), limit=1, offset=1)]
    assert page == ["2"]  # items in the order they were first put
    s.close()


def test_a_wrong_namespace_shape_or_argument_is_a_named_error_and_writes_nothing(embedder):
    s = MemkitStore(FactStore.ephemeral(embedder))
    s.put(("memories", "ana"), "1", {"text": "Ana loves pizza."})
    for namespace in ["memories", (), ("memories", 7), ("memories", ""), ["a", None]]:
        with pytest.raises(InvalidNamespaceError):
            s.put(namespace, "1", {"text": "x"})
    with pytest.raises(InvalidNamespaceError):
        s.search("memories")  # a string would be read one letter per label
    with pytest.raises(InvalidNamespaceError):
        s.get((), "1")
    for bad in [{"limit": -1}, {"offset": -2}, {"query": b"pizza"}]:
        with pytest.raises(InvalidArgument):
            s.search(("memories",), **bad)
    with pytest.raises(InvalidArgument):
        s.list_namespaces(max_depth=0)
    for value in [{"n": float("nan")}, {"when": object()}, ["not", "a", "dict"]]:
        with pytest.raises(InvalidArgument):
            s.put(("memories", "ana"), "2", value)
    assert _view(s.search((), limit=100)) == [(("memories", "ana"), "1", repr([("text", "Ana loves pizza.")]))]
    assert s.list_namespaces() == [("memories", "ana")]
    s.close()


def test_the_async_forms_and_what_a_put_leaves_in_the_log(tmp_path, embedder):
    folder = str(tmp_path / "s")

    async def main():
        s = MemkitStore(FactStore.persistent(folder, embedder))
        await asyncio.gather(*(s.aput(("u", str(i)), "city", {"city": f"City{i}"}) for i in range(5)))
        await s.aput(("u", "0"), "city", {"city": "Porto"})
        await s.aput(("u", "0"), "city", {"city": "porto"})  # a change of case is a change
        got = await s.aget(("u", "0"), "city")
        spaces = await s.alist_namespaces(prefix=("u",))
        await s.adelete(("u", "4"), "city")
        gone = await s.aget(("u", "4"), "city")
        s.store.close()
        s.close()
        return got, spaces, gone

    got, spaces, gone = asyncio.run(main())
    assert got.value == {"city": "porto"} and gone is None and spaces == [("u", str(i)) for i in range(5)]
    store = FactStore.persistent(folder, embedder)  # reopened: the items and their history are there
    kinds = [e.kind.value for e in store.history(user_of(("u", "0")))]
    assert kinds == ["ADD", "UPDATE", "UPDATE"] and [f.value for f in store.get(user_of(("u", "0")))] == ['{"city": "porto"}']
    assert MemkitStore(store).get(("u", "1"), "city").value == {"city": "City1"}
    assert [e.kind.value for e in store.history(user_of(("u", "4")))] == ["ADD", "DELETE"]
    store.close()


def test_the_langgraph_agent_example_keeps_the_thread_in_the_checkpointer_and_the_user_in_memkit(tmp_path):
    """examples/langgraph_agent.py against the fake OpenAI-compatible server: two threads; the second one's
    request carries what the first was told, though its checkpoint starts empty."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    sys.path.insert(0, str(root / "tests"))
    from fake_openai import FakeOpenAI

    with FakeOpenAI() as fake:
        fake.enqueue("Noted: metric it is.")
        fake.enqueue("About 16 km this weekend.")
        env = {**os.environ, "MEMKIT_LLM_BASE_URL": fake.base_url, "MEMKIT_LLM_MODEL": "fake"}
        r = subprocess.run([sys.executable, str(root / "examples" / "langgraph_agent.py"), str(tmp_path / "agent")],
                           capture_output=True, text=True, timeout=300, env=env)
        assert r.returncode == 0, r.stderr[-3000:]
        chats = [q["body"]["messages"] for q in fake.requests if q["path"].endswith("/chat/completions")]
    assert "[fri] assistant: About 16 km this weekend." in r.stdout
    assert "[fri] the checkpointer holds 2 messages of this thread" in r.stdout  # the new thread's own
    assert len(chats) == 2 and "metric" in " ".join(m["content"] for m in chats[1][:-1])  # Tuesday's, on Friday
    assert (tmp_path / "agent" / "threads.sqlite3").exists() and (tmp_path / "agent" / "memory").is_dir()
