"""Sync against async: N users each playing turns (observe the user's turn, then build the context for it),
through one ``Memory`` called in a loop, and through ``AsyncMemory`` with every user's conversation a
coroutine of one event loop; on each backend, each in a fresh store.

    python scripts/measure_async.py --users 8 --turns 6 --backend persistent --backend http --backend postgres \
        --out docs/results/async

A step is one turn: ``observe`` then ``context`` (budget 400) of that turn's question. Throughput is steps per
second of wall time for all users; latency is each step's own time, as its caller waits for it (in the async
run, from the coroutine's call to its result, waiting for a worker included). The same turns in the same
order per user, MiniLM embedding each turn for real. Writes ``async.csv`` and ``async.cmd``. Not a test: a
timing, run it alone on the machine.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from memkit import AsyncMemory, FactStore, Memory  # noqa: E402
from memkit.eval.scale import short_sentences  # noqa: E402
from memkit.store.server import ChromaServer  # noqa: E402

BUDGET = 400


def _turns(users: int, turns: int, seed: int) -> dict[str, list[str]]:
    rng = random.Random(seed)
    return {f"user{u}": short_sentences(turns, rng) for u in range(users)}


def _store(backend: str, where: str | None, folder: Path) -> FactStore:
    if backend == "postgres":
        return FactStore.from_url(where or "", namespace=f"a{random.randrange(10**6)}")
    if backend == "http":
        return FactStore.from_url(f"chroma://{where}", namespace=f"a{random.randrange(10**6)}",
                                  records=folder / "records.sqlite3")
    return FactStore.from_url(f"file://{folder}")


def _sync(store: FactStore, plan: dict[str, list[str]]) -> tuple[float, list[float]]:
    memory, took = Memory(store=store), []
    store.embed_query("warm up")  # the encoder loaded before the clock starts, in both modes
    start = time.perf_counter()
    for i in range(max(len(t) for t in plan.values())):  # users' turns interleaved, as they would arrive
        for user, turns in plan.items():
            t0 = time.perf_counter()
            memory.observe(user, "s", "user", turns[i], time=1.7e9 + i)
            memory.context(user, "s", turns[i], budget=BUDGET)
            took.append(time.perf_counter() - t0)
    wall = time.perf_counter() - start
    memory.close()
    return wall, took


def _async(store: FactStore, plan: dict[str, list[str]], workers: int) -> tuple[float, list[float]]:
    took: list[float] = []

    async def one(memory: AsyncMemory, user: str, turns: list[str]) -> None:
        for i, text in enumerate(turns):
            t0 = time.perf_counter()
            await memory.observe(user, "s", "user", text, time=1.7e9 + i)
            await memory.context(user, "s", text, budget=BUDGET)
            took.append(time.perf_counter() - t0)

    async def main() -> float:
        async with AsyncMemory(store=store, workers=workers) as memory:
            store.embed_query("warm up")
            start = time.perf_counter()
            await asyncio.gather(*(one(memory, u, t) for u, t in plan.items()))
            return time.perf_counter() - start

    wall = asyncio.run(main())
    store.close()
    return wall, took


def _row(backend: str, mode: str, users: int, wall: float, took: list[float]) -> dict[str, Any]:
    ms = np.array(took) * 1000
    return {"backend": backend, "mode": mode, "users": users, "steps": len(took),
            "steps_per_s": round(len(took) / wall, 2), "p50_ms": round(float(np.percentile(ms, 50)), 1),
            "p95_ms": round(float(np.percentile(ms, 95)), 1)}


def measure(backend: str, users: int, turns: int, workers: int, seed: int) -> list[dict[str, Any]]:
    plan, rows = _turns(users, turns, seed), []
    server, pg, where = None, None, None
    try:
        if backend == "http":
            server = ChromaServer()
            server.start()
            where = f"127.0.0.1:{server.port}"
        elif backend == "postgres":
            import pgserver

            pg = pgserver.get_server(tempfile.mkdtemp(prefix="memkit-async-pg-"), cleanup_mode="stop")
            where = pg.get_uri()
        for mode in ("sync", "async"):
            folder = Path(tempfile.mkdtemp(prefix=f"memkit-async-{mode}-"))
            store = _store(backend, where, folder)
            wall, took = _sync(store, plan) if mode == "sync" else _async(store, plan, workers)
            rows.append(_row(backend, mode if mode == "sync" else f"async ({workers} workers)", users, wall, took))
            print(rows[-1], flush=True)
    finally:
        if server is not None:
            server.stop()
        if pg is not None:
            pg.cleanup()
    return rows


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--users", type=int, default=8)
    ap.add_argument("--turns", type=int, default=6)
    ap.add_argument("--workers", type=int, default=4)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--backend", action="append", choices=["persistent", "http", "postgres"])
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    rows = [r for b in args.backend or ["persistent"] for r in measure(b, args.users, args.turns, args.workers, args.seed)]
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    pd.DataFrame(rows).to_csv(out / "async.csv", index=False)
    (out / "async.cmd").write_text("python scripts/measure_async.py " + " ".join(sys.argv[1:]) + "\n")
    print(f"wrote {out / 'async.csv'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
