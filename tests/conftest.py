"""Shared fixtures: an isolated environment, the three real Chroma backends, a fake OpenAI-compatible server."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from fake_openai import FakeOpenAI  # noqa: E402
from memkit.store.server import ChromaServer  # noqa: E402


@pytest.fixture(scope="session", autouse=True)
def embedding_cache_folder(tmp_path_factory: pytest.TempPathFactory):
    """Bench runs in the tests keep their embedding cache in a temporary folder, never in the user's home."""
    import os

    before = os.environ.get("MEMKIT_CACHE_DIR")
    os.environ["MEMKIT_CACHE_DIR"] = str(tmp_path_factory.mktemp("memkit-cache"))
    yield
    if before is None:
        os.environ.pop("MEMKIT_CACHE_DIR", None)
    else:
        os.environ["MEMKIT_CACHE_DIR"] = before


@pytest.fixture(scope="session")
def chroma_server(tmp_path_factory: pytest.TempPathFactory):
    server = ChromaServer(tmp_path_factory.mktemp("chroma-server") / "data").start()
    yield server
    server.stop()


@pytest.fixture(scope="session")
def embedder():
    from memkit.models.embed import MiniLMEmbedder

    return MiniLMEmbedder()


BACKENDS = ["ephemeral", "persistent", "http", "http+postgres", "postgres"]


def open_store(kind: str, tmp_path: Path, request: pytest.FixtureRequest, embedder, namespace: str | None = None):
    from memkit import FactStore

    ns = namespace or f"t{abs(hash(request.node.nodeid)) % 10**8}"
    if kind == "ephemeral":
        return FactStore.from_url("memory://", embedder)
    if kind == "persistent":
        return FactStore.from_url(f"file://{tmp_path / 'chroma'}", embedder, namespace=ns)
    if kind == "postgres":  # the whole memory in PostgreSQL + pgvector
        return FactStore.from_url(request.getfixturevalue("postgres_url"), embedder, namespace=ns)
    server = request.getfixturevalue("chroma_server")
    log = request.getfixturevalue("postgres_url") if kind == "http+postgres" else None
    return FactStore.from_url(f"chroma://127.0.0.1:{server.port}", embedder, namespace=ns, log=log)


@pytest.fixture(params=BACKENDS)
def store(request: pytest.FixtureRequest, tmp_path: Path, embedder):
    """The same FactStore API over each real backend: Chroma in memory, on disk and as a server (also with a
    PostgreSQL event log), and the whole memory in PostgreSQL with pgvector."""
    s = open_store(request.param, tmp_path, request, embedder)
    yield s
    if not s.closed:
        s.close()


@pytest.fixture
def fake_llm():
    with FakeOpenAI() as fake:
        yield fake


@pytest.fixture(scope="session")
def postgres_url(tmp_path_factory: pytest.TempPathFactory):
    """A real PostgreSQL server from the pgserver wheel, on a Unix socket in a temporary folder."""
    import pgserver

    server = pgserver.get_server(str(tmp_path_factory.mktemp("pg")), cleanup_mode="stop")
    yield server.get_uri()
    server.cleanup()


def interruptible() -> None:
    """``preexec_fn`` of a child a test interrupts: SIGINT back to its default, so the child's Python raises
    KeyboardInterrupt on it even when this run was started where SIGINT is ignored (a shell's background job)."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_DFL)
