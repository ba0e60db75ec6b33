"""AsyncMemory: Memory's surface as coroutines, on a real persistent store; concurrent users stay isolated,
a session's turns keep the order they were awaited in, and a closed memory says so by name."""

import asyncio
import re

import pytest

from memkit import AsyncMemory, FactStore, Memory
from memkit.errors import MissingUserId, StoreClosed


def test_concurrent_users_are_isolated_and_each_session_keeps_its_order(tmp_path, embedder):
    users = [f"user{i}" for i in range(6)]

    async def one_user(m: AsyncMemory, n: int, user: str):
        for i in range(5):  # awaited one after another on purpose: and all six users at once
            await m.observe(user, "s", "user", f"I keep box{n}x{i} in the attic.", time=1.7e9 + i)
        turns = [t.content for t in m.memory.session(user, "s").window]
        ctx = await m.context(user, "s", "Where is the box?", budget=2000)
        await m.observe(user, "s", "user", f"I live in City{n}x.", time=1.7e9 + 10)
        await m.end_session(user, "s")
        return turns, ctx

    async def main():
        async with AsyncMemory(store=FactStore.persistent(str(tmp_path / "s"), embedder), workers=3) as m:
            got = await asyncio.gather(*(one_user(m, n, u) for n, u in enumerate(users)))
            hits = await asyncio.gather(*(m.search(u, "Where do I live?") for u in users))
            profiles = await asyncio.gather(*(m.profile(u) for u in users))
            await m.forget(users[0])
            after = await m.search(users[0], "Where do I live?")
        return got, hits, profiles, after

    got, hits, profiles, after = asyncio.run(main())
    for n, (turns, ctx) in enumerate(got):
        assert turns == [f"I keep box{n}x{i} in the attic." for i in range(5)]  # in the order awaited
        others = [f"box{o}x" for o in range(len(users)) if o != n]
        assert f"box{n}x" in ctx.text and not any(o in ctx.text for o in others)
    for n, (found, profile) in enumerate(zip(hits, profiles)):
        assert [h.fact.user_id for h in found] == [users[n]] * len(found) and f"City{n}x" in found[0].fact.text
        assert f"City{n}x" in profile and not any(f"City{o}x" in profile for o in range(len(users)) if o != n)
    assert after == []


def test_a_closed_async_memory_and_bad_input_are_named_errors(embedder):
    async def main():
        given = Memory(store=FactStore.ephemeral(embedder))
        m = AsyncMemory(given)
        with pytest.raises(MissingUserId):
            await m.observe("", "s", "user", "hello")
        await m.observe("u", "s", "user", "I prefer tea.")
        await m.aclose()
        with pytest.raises(StoreClosed):
            await m.context("u", "s", "tea?")
        assert "tea" in given.profile("u")  # a memory it was given stays open
        given.close()
        with pytest.raises(TypeError):
            AsyncMemory(given, policy="keyed")

    asyncio.run(main())


@pytest.mark.parametrize("backend", ["folder", "postgres"])
def test_forty_two_users_at_once_keep_their_own_facts_one_per_key_and_lose_nothing(backend, tmp_path, embedder,
                                                                                     request):
    """The issue's bar: 40+ users observing and reading concurrently in one event loop, on the embedded store
    and on PostgreSQL: each context holds the user's own current fact and no other user's; every user ends
    with one current city (the changed mind replaced the first), an ADD and an UPDATE in its history, and every
    turn kept as an episode."""
    if backend == "postgres":
        store = FactStore.postgres(request.getfixturevalue("postgres_url"), embedder,
                                   namespace=f"aio{tmp_path.name[-12:].replace('-', '_')}")
    else:
        store = FactStore.persistent(str(tmp_path / "s"), embedder)
    users = [f"user{n}" for n in range(42)]
    turns = ["I live in Town{n}a.", "I prefer tea, blend {n}.", "Actually I moved to Town{n}b last week."]

    async def one_user(m: AsyncMemory, n: int, user: str):
        for i, turn in enumerate(turns):
            await m.observe(user, "s", "user", turn.format(n=n), time=1.7e9 + i)
        await m.end_session(user, "s", keep=True)
        return await m.context(user, "s2", "Where do I live now?", budget=400)

    async def main():
        async with AsyncMemory(store=store, workers=4) as m:
            contexts = await asyncio.gather(*(one_user(m, n, u) for n, u in enumerate(users)))
            return contexts, [(store.profile(u), store.history(u), store.episodes(u)) for u in users]

    contexts, held = asyncio.run(main())
    for n, (ctx, (facts, history, episodes)) in enumerate(zip(contexts, held)):
        assert f"Town{n}b" in ctx.text and set(re.findall(r"Town(\d+)", ctx.text)) == {str(n)}  # no one else's
        cities = [f for f in facts if f.key == "user.location"]
        assert [f.value for f in cities] == [f"Town{n}b"]  # one current fact per key, the newest
        assert {"ADD", "UPDATE"} <= {e.kind.value for e in history}
        assert sorted(e.content for e in episodes) == sorted(t.format(n=n) for t in turns)  # nothing lost
