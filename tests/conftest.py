"""Shared fixtures: an isolated environment, the three real Chroma backends, a fake OpenAI-compatible server."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

sys.path.insert(0, str(Path(__file__).parent))

from fake_openai import FakeOpenAI  # noqa: E402


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def chroma_cli() -> str:
    exe = Path(sys.executable).parent / "chroma"
    return str(exe) if exe.exists() else (shutil.which("chroma") or "chroma")


class ChromaServer:
    """A real `chroma run` on a free loopback port, with its log in a file."""

    def __init__(self, path: Path) -> None:
        self.path, self.port, self.proc = path, free_port(), None
        self.log = path.parent / f"chroma-{self.port}.log"

    def start(self) -> "ChromaServer":
        self.proc = subprocess.Popen([chroma_cli(), "run", "--path", str(self.path), "--host", "127.0.0.1",
                                      "--port", str(self.port)], stdout=self.log.open("w"), stderr=subprocess.STDOUT)
        deadline = time.time() + 60
        while time.time() < deadline:
            try:
                if httpx.get(f"http://127.0.0.1:{self.port}/api/v2/heartbeat", timeout=1).status_code == 200:
                    return self
            except httpx.HTTPError:
                time.sleep(0.3)
            if self.proc.poll() is not None:
                break
        raise RuntimeError(f"chroma run did not start; log: {self.log.read_text()[-2000:]}")

    def stop(self) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


@pytest.fixture(scope="session")
def chroma_server(tmp_path_factory: pytest.TempPathFactory):
    server = ChromaServer(tmp_path_factory.mktemp("chroma-server") / "data").start()
    yield server
    server.stop()


@pytest.fixture(scope="session")
def embedder():
    from memkit.embed import MiniLMEmbedder

    return MiniLMEmbedder()


BACKENDS = ["ephemeral", "persistent", "http", "http+postgres"]


def open_store(kind: str, tmp_path: Path, request: pytest.FixtureRequest, embedder, namespace: str | None = None):
    from memkit import FactStore

    ns = namespace or f"t{abs(hash(request.node.nodeid)) % 10**8}"
    if kind == "ephemeral":
        return FactStore.ephemeral(embedder)
    if kind == "persistent":
        return FactStore.persistent(str(tmp_path / "chroma"), embedder, namespace=ns)
    server = request.getfixturevalue("chroma_server")
    log = request.getfixturevalue("postgres_url") if kind == "http+postgres" else None
    return FactStore.http("127.0.0.1", server.port, embedder, namespace=ns, log=log)


@pytest.fixture(params=BACKENDS)
def store(request: pytest.FixtureRequest, tmp_path: Path, embedder):
    """The same FactStore API over each real Chroma backend (and the server with a PostgreSQL event log)."""
    s = open_store(request.param, tmp_path, request, embedder)
    yield s
    if not s._closed:
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
