"""Chroma's own server (``chroma run``) for memkit: a config that bounds how many indexes it keeps loaded,
and a handle that starts it on a loopback port and waits for its heartbeat (docs/architecture.md §6).

Without a config, ``chroma run`` keeps every index it has touched loaded (its pool holds 65,536), each with
four open files: measured, 2.6 MB and 4 files per collection, until a write fails at the open-file limit
("Failed to apply logs to the hnsw segment writer"). With ``server_config(..., max_users=64)`` it keeps
one index per user for that many users, like ``FactStore.persistent(path, max_users=64)`` does in process.
"""

from __future__ import annotations

import json
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

from . import validate
from .store.chroma import MAX_USERS


def server_config(path: str | Path, port: int, host: str = "127.0.0.1", max_users: int = MAX_USERS) -> str:
    """A ``chroma run`` config (YAML) storing under ``path`` and keeping ``max_users`` users' indexes loaded
    (one index each: facts and episodes share it); the least recently used are unloaded and reload from disk when read."""
    validate.positive_int("max_users", max_users)
    validate.positive_int("port", port)
    return (f"persist_path: {json.dumps(str(path))}\nport: {int(port)}\nlisten_address: {json.dumps(host)}\n"
            "segment_manager:\n  hnsw_index_pool_cache_config:\n    memory:\n"
            f"      capacity: {int(max_users)}\n")


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port nothing listens on now."""
    with socket.socket() as s:
        s.bind((host, 0))
        return s.getsockname()[1]


class ChromaServer:
    """A ``chroma run`` on a loopback port, bounded by ``server_config``; its config and log sit beside ``path``.

    ``start()`` waits for the heartbeat; ``stop()`` ends it, and ``start()`` again reopens the same data.
    """

    def __init__(self, path: str | Path | None = None, port: int | None = None, host: str = "127.0.0.1",
                 max_users: int = MAX_USERS) -> None:
        self.path = Path(path) if path is not None else Path(tempfile.mkdtemp(prefix="memkit-chroma-")) / "data"
        self.host, self.port = host, port or free_port(host)
        self.config = self.path.parent / f"chroma-{self.port}.yaml"
        self.log = self.path.parent / f"chroma-{self.port}.log"
        self.config.parent.mkdir(parents=True, exist_ok=True)
        self.config.write_text(server_config(self.path, self.port, host, max_users))
        self.proc: subprocess.Popen | None = None

    def start(self, timeout: float = 120) -> "ChromaServer":
        exe = Path(sys.executable).with_name("chroma")
        cli = str(exe) if exe.exists() else (shutil.which("chroma") or "chroma")
        with self.log.open("a") as out:
            self.proc = subprocess.Popen([cli, "run", str(self.config)], stdout=out, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and self.proc.poll() is None:
            try:
                urllib.request.urlopen(f"http://{self.host}:{self.port}/api/v2/heartbeat", timeout=1)
                return self
            except OSError:
                time.sleep(0.3)
        self.stop()
        raise RuntimeError(f"chroma run did not start; the end of its log:\n{self.log.read_text()[-2000:]}")

    def peak_rss_mb(self) -> float:
        """The server's peak resident memory (Linux /proc), NaN elsewhere."""
        try:
            for line in Path(f"/proc/{self.proc.pid}/status").read_text().splitlines():
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
        except (OSError, AttributeError):
            pass
        return float("nan")

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()

    def __enter__(self) -> "ChromaServer":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
