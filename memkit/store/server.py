"""Chroma's own server (``chroma run``) on a loopback port, bounded by a config memkit writes.

Without a config, ``chroma run`` keeps every index it has touched loaded (its pool holds 65,536), each with
four open files: measured, 2.6 MB and 4 files per collection, until a write fails at the open-file limit
("Failed to apply logs to the hnsw segment writer"). With ``server_config(..., max_users=64)`` it keeps
one index per user for that many users, like ``FactStore.persistent(path, max_users=64)`` does in process.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

from .. import validate
from ..models.server import LoopbackServer, executable, free_port
from .chroma import MAX_USERS


def server_config(path: str | Path, port: int, host: str = "127.0.0.1", max_users: int = MAX_USERS) -> str:
    """A ``chroma run`` config (YAML) storing under ``path`` and keeping ``max_users`` users' indexes loaded
    (one index each: facts and episodes share it); the least recently used are unloaded and reload from disk when read."""
    validate.positive_int("max_users", max_users)
    validate.positive_int("port", port)
    return (f"persist_path: {json.dumps(str(path))}\nport: {int(port)}\nlisten_address: {json.dumps(host)}\n"
            "segment_manager:\n  hnsw_index_pool_cache_config:\n    memory:\n"
            f"      capacity: {int(max_users)}\n")



class ChromaServer(LoopbackServer):
    """A ``chroma run`` on a loopback port, bounded by ``server_config``; its config and log sit beside ``path``.

    ``start()`` waits for the heartbeat; ``stop()`` ends it, and ``start()`` again reopens the same data.
    """

    name = "chroma run"

    def __init__(self, path: str | Path | None = None, port: int | None = None, host: str = "127.0.0.1",
                 max_users: int = MAX_USERS) -> None:
        self.path = Path(path) if path is not None else Path(tempfile.mkdtemp(prefix="memkit-chroma-")) / "data"
        port = port or free_port(host)
        super().__init__(self.path.parent / f"chroma-{port}.log", port, host)
        self.config = self.path.parent / f"chroma-{self.port}.yaml"
        self.config.write_text(server_config(self.path, self.port, host, max_users))

    def command(self) -> list[str]:
        return [executable("chroma"), "run", str(self.config)]

    @property
    def ready_url(self) -> str:
        return f"http://{self.host}:{self.port}/api/v2/heartbeat"
