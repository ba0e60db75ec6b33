"""memkit mcp, end to end: the official SDK's stdio client starts `python -m memkit mcp` on a store folder,
lists its tools and calls each; users stay apart; a bad input comes back as a tool error naming memkit's error;
what was remembered is there after the server restarts."""

import asyncio
import json
import sys

import pytest

mcp = pytest.importorskip("mcp")
from mcp import Client  # noqa: E402
from mcp.client.stdio import StdioServerParameters  # noqa: E402

TOOLS = {"remember", "recall", "search_facts", "profile", "forget"}


def _server(folder, **env):
    return StdioServerParameters(command=sys.executable, args=["-m", "memkit", "mcp", "--store", f"file://{folder}"],
                                 env={"MEMKIT_LLM_BASE_URL": "", **env})


def _data(result):
    assert not result.is_error, result.content
    if result.structured_content is not None:
        return result.structured_content.get("result", result.structured_content)
    return json.loads(result.content[0].text) if result.content[0].text[:1] in "[{" else result.content[0].text


def test_an_mcp_client_remembers_recalls_and_forgets_per_user(tmp_path):
    async def session_one():
        async with Client(_server(tmp_path / "s")) as client:
            assert TOOLS <= {t.name for t in (await client.list_tools()).tools}
            changed = _data(await client.call_tool("remember", {"user_id": "ann", "content": "I live in Lisbon."}))
            assert [c["kind"] for c in changed] == ["ADD"]
            await client.call_tool("remember", {"user_id": "bob", "content": "I live in Oslo."})
            await client.call_tool("remember", {"user_id": "ann", "content": "I prefer metric units.",
                                                "session_id": "tue"})
            ctx = _data(await client.call_tool("recall", {"user_id": "ann", "question": "Which units?", "budget": 300}))
            assert "metric" in ctx["text"] and "Oslo" not in ctx["text"] and ctx["tokens"] <= 300
            facts = _data(await client.call_tool("search_facts", {"user_id": "bob", "query": "Where do I live?"}))
            assert [f["value"] for f in facts][:1] == ["Oslo"] and "Lisbon" not in json.dumps(facts)
            bad = await client.call_tool("recall", {"user_id": "", "question": "x"})
            assert bad.is_error and "MissingUserId: user_id" in bad.content[0].text
            huge = await client.call_tool("recall", {"user_id": "ann", "question": "x", "budget": 10**15})
            assert huge.is_error and "InvalidArgument: budget must be at most" in huge.content[0].text
            empty = await client.call_tool("remember", {"user_id": "ann", "content": " "})
            assert empty.is_error and "InvalidContent" in empty.content[0].text

    async def session_two():  # a new server process on the same folder
        async with Client(_server(tmp_path / "s")) as client:
            assert "Lisbon" in _data(await client.call_tool("profile", {"user_id": "ann"}))
            _data(await client.call_tool("forget", {"user_id": "ann"}))
            assert "Lisbon" not in _data(await client.call_tool("profile", {"user_id": "ann"}))
            assert "Oslo" in _data(await client.call_tool("profile", {"user_id": "bob"}))

    asyncio.run(session_one())
    asyncio.run(session_two())


def test_memkit_mcp_without_a_store_says_how_to_give_one(monkeypatch, capsys):
    from memkit.cli import main

    monkeypatch.delenv("MEMKIT_STORE", raising=False)
    assert main(["mcp"]) != 0
    assert "--store" in capsys.readouterr().err
