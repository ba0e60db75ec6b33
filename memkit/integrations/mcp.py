"""``memkit mcp``: memkit as an MCP server (the official ``mcp`` SDK), so any MCP client (a desktop assistant, an
IDE, an agent framework) can remember and recall (docs/usage.md, "memkit over MCP").

Five tools, each taking the user id explicitly (a client serves many users; one never reads another's):
``remember`` (a turn), ``recall`` (the context for a question within a token budget), ``search_facts``,
``profile`` and ``forget``. They run on ``AsyncMemory``, so calls of different users run at once. memkit's
named errors come back as tool errors that name it (``...: MissingUserId: user_id must be ...``).
"""

from __future__ import annotations

from typing import Any, Awaitable, Callable, TypeVar

from .. import config
from ..aio import AsyncMemory
from ..errors import ConfigError, MemkitError

T = TypeVar("T")
SESSION = "mcp"  # the session a turn belongs to when the client names none


class Tools:
    """The tools, as methods over one memory (their docstrings are what a client reads)."""

    def __init__(self, memory: AsyncMemory, tool_error: type[Exception]) -> None:
        self.memory, self.tool_error = memory, tool_error

    async def _named(self, call: Awaitable[T]) -> T:
        try:
            return await call
        except MemkitError as e:  # the client sees which named error, and its advice
            raise self.tool_error(f"{type(e).__name__}: {e}") from None

    async def remember(self, user_id: str, content: str, session_id: str = SESSION, role: str = "user",
                       time: float | None = None) -> list[dict[str, Any]]:
        """Record one turn of a conversation (role "user" or "assistant"); durable facts in a user's turn are
        extracted and kept. Returns what changed in the user's facts."""
        events = await self._named(self.memory.observe(user_id, session_id, role, content, time=time))
        return [{"kind": e.kind.value, "fact": (e.after or e.before).text if (e.after or e.before) else None,
                 "reason": e.reason} for e in events]

    async def recall(self, user_id: str, question: str, budget: int = 1200, session_id: str = SESSION) -> dict[str, Any]:
        """The user's memory for a question within ``budget`` tokens: their profile, the facts and past turns
        that answer it, and this session's recent turns; with what each part holds and why."""
        ctx = await self._named(self.memory.context(user_id, session_id, question, budget=budget))
        return {"text": ctx.text, "tokens": ctx.tokens, "notes": list(ctx.notes), "parts": ctx.account()}

    async def search_facts(self, user_id: str, query: str, k: int = 5) -> list[dict[str, Any]]:
        """The user's current facts for ``query``, best first."""
        hits = await self._named(self.memory.search(user_id, query, k=k))
        return [{"text": h.fact.text, "key": h.fact.key, "value": h.fact.value, "score": round(h.score, 4),
                 "why": h.why} for h in hits]

    async def profile(self, user_id: str, limit: int = 20) -> str:
        """The user's most important current facts as one block."""
        return await self._named(self.memory.profile(user_id, limit))

    async def forget(self, user_id: str) -> str:
        """Remove the user from everything this memory holds (facts, past turns, sessions, indexes)."""
        await self._named(self.memory.forget(user_id))
        return f"forgot {user_id}"


def server(memory: AsyncMemory) -> Any:
    """An ``MCPServer`` whose tools read and write ``memory``."""
    try:
        from mcp.server.mcpserver import MCPServer
        from mcp.server.mcpserver.exceptions import ToolError
    except ImportError as e:  # the extra is not installed
        raise ConfigError(f"memkit mcp needs the MCP SDK: pip install 'memkit-lab[mcp]' ({e})") from None

    app = MCPServer("memkit", instructions="Two-layer memory: remember what a user says, recall what matters for a "
                                           "question, within a token budget. Every tool takes the user's id.")
    tools = Tools(memory, ToolError)
    for tool in (tools.remember, tools.recall, tools.search_facts, tools.profile, tools.forget):
        app.tool()(tool)
    return app


def open_memory(store: str | None) -> AsyncMemory:
    """The memory an MCP server serves: the store ``store`` names (a URL or a folder, else ``MEMKIT_STORE``), with
    the models ``MEMKIT_*`` configures (offline by default)."""
    from ..memory import Memory
    from ..store import FactStore

    where = store or config.store_url()
    if not where:
        raise ConfigError("memkit mcp needs a store that outlives it: --store file://FOLDER (or postgresql://..., "
                          "chroma://HOST:PORT), or MEMKIT_STORE; memory:// keeps nothing after the server stops")
    url = where if "://" in where else f"file://{where}"
    settings = config.Settings.from_env()
    return AsyncMemory(Memory.from_settings(settings, store=FactStore.from_url(url, settings.embedder())))


def run(store: str | None, transport: str = "stdio", port: int = 8765, log: Callable[[str], None] = print) -> int:
    """Serve until the client goes away (stdio) or Ctrl-C (streamable HTTP on loopback)."""
    import anyio

    memory = open_memory(store)
    app = server(memory)

    async def serve() -> None:
        try:
            if transport == "stdio":
                await app.run_stdio_async()
            else:
                log(f"memkit mcp: streamable HTTP on http://127.0.0.1:{port}/mcp")
                await app.run_streamable_http_async(host="127.0.0.1", port=port)
        finally:
            await memory.aclose()
            memory.memory.store.close()

    anyio.run(serve)
    return 0
