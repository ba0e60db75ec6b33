"""AsyncMemory: Memory's surface as coroutines, on a real persistent store; concurrent users stay isolated,
a session's turns keep the order they were awaited in, and a closed memory says so by name."""

import asyncio

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
