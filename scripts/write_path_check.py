"""The write path's targets, measured with real threads, real processes, a real `chroma run` and SIGKILL.

    python scripts/write_path_check.py --writes 200 --kills 20 --postgres --out results/write-path

1. 8 threads in one process, each writing ``--writes`` new values of one key (keyed policy): current facts
   left for that key (target 1).
2. 4 processes against one `chroma run` server sharing one records file, ``--writes`` each: the same count.
   With ``--postgres``, again with a records file per process (separate machines) and one PostgreSQL log,
   and 4 processes on the whole memory in one PostgreSQL database (``FactStore.postgres``).
3. ``--kills`` rounds of a writer process killed with SIGKILL after a random number of acknowledged writes
   on one on-disk store (and with ``--postgres`` on one PostgreSQL memory): acknowledged facts missing
   afterwards, and whether history order equals acknowledgement order (targets 0 and yes).
Prints a table and writes it as CSV. Not a test: it takes minutes.
"""

from __future__ import annotations

import argparse
import os
import random
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import pandas as pd

from memkit import FactStore, Memory
from memkit.store.server import ChromaServer
from memkit.types import Candidate, EventKind

# a store named by one argument: a folder, or a postgresql:// URL (the whole memory in PostgreSQL)
OPEN = """
import sys
from memkit import FactStore, Memory
from memkit.types import Candidate
def open_store(where):
    return FactStore.postgres(where, namespace="writepath") if where.startswith("postgresql") else FactStore.persistent(where)
"""
CHILD = OPEN + """
m = Memory(store=open_store(sys.argv[1]))
start = int(sys.argv[2])
for i in range(start, start + 100000):
    m.write("u", [Candidate(f"Fact number {i}.", key=f"k.{i}", value=str(i))], time=float(i))
    print(i, flush=True)
"""
WRITER = OPEN + """
log = sys.argv[5] if len(sys.argv) > 5 else None
if sys.argv[1] == "postgres":
    m = Memory(store=open_store(log))
else:
    m = Memory(store=FactStore.http("127.0.0.1", int(sys.argv[1]), records=sys.argv[2], log=log))
for j in range(int(sys.argv[4])):
    m.write("u", [Candidate(f"User lives in P{sys.argv[3]}x{j}.", key="user.city", value=f"P{sys.argv[3]}x{j}")])
"""


def threads(writes: int) -> dict:
    m = Memory()
    barrier = threading.Barrier(8)

    def run(i: int) -> None:
        barrier.wait()
        for j in range(writes):
            m.write("u", [Candidate(f"User lives in T{i}x{j}.", key="user.city", value=f"T{i}x{j}")])

    start = time.perf_counter()
    ts = [threading.Thread(target=run, args=(i,)) for i in range(8)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    return {"check": "8 threads, one key", "writes": 8 * writes, "seconds": time.perf_counter() - start,
            "current facts for the key": len(m.store.get("u", where={"key": "user.city"})),
            "lost": None, "history order = ack order": None}


def processes(writes: int, log: str | None = None, whole: bool = False) -> dict:
    """4 writer processes; with ``log`` (a PostgreSQL URL) each has its own records file, as on separate
    machines, and they share only the Chroma server and the log; with ``whole`` as well, they share only the
    PostgreSQL database, which holds the whole memory."""
    if whole:
        start = time.perf_counter()
        procs = [subprocess.Popen([sys.executable, "-c", WRITER, "postgres", "-", str(i), str(writes), log])
                 for i in range(4)]
        codes = [p.wait() for p in procs]
        seconds = time.perf_counter() - start
        store = FactStore.postgres(log, namespace="writepath")
        n = len(store.get("u", where={"key": "user.city"}))
        events = len(store.history("u"))
        store.drop_user("u")
        store.close()
        return {"check": "4 processes, one PostgreSQL memory, one key", "writes": 4 * writes, "seconds": seconds,
                "current facts for the key": n, "lost": 4 * writes - events if not any(codes) else "a writer failed",
                "history order = ack order": None}
    folder = Path(tempfile.mkdtemp(prefix="memkit-wp-"))
    server = ChromaServer().start()
    port = server.port
    try:
        records = str(folder / "shared.sqlite3")
        start = time.perf_counter()
        procs = [subprocess.Popen([sys.executable, "-c", WRITER, str(port),
                                   str(folder / f"machine{i}.sqlite3") if log else records, str(i), str(writes)]
                                  + ([log] if log else [])) for i in range(4)]
        codes = [p.wait() for p in procs]
        seconds = time.perf_counter() - start
        store = FactStore.http("127.0.0.1", port, records=records, log=log)
        n = len(store.get("u", where={"key": "user.city"}))
        events = len(store.history("u"))
        store.close()
    finally:
        server.stop()
    check = "4 processes, own records, one server + PostgreSQL log" if log else "4 processes, one server + records"
    return {"check": check + ", one key", "writes": 4 * writes, "seconds": seconds,
            "current facts for the key": n, "lost": 4 * writes - events if not any(codes) else "a writer failed",
            "history order = ack order": None}


def kills(rounds: int, seed: int = 0, url: str | None = None) -> dict:
    rng = random.Random(seed)
    path = url or tempfile.mkdtemp(prefix="memkit-kill-")
    acked: list[int] = []
    start = time.perf_counter()
    for r in range(rounds):
        child = subprocess.Popen([sys.executable, "-c", CHILD, path, str(r * 100000)], stdout=subprocess.PIPE, text=True)
        want, got = rng.randint(1, 40), []
        while len(got) < want:
            line = child.stdout.readline()
            if not line:
                break
            got.append(int(line))
        os.kill(child.pid, signal.SIGKILL)
        child.wait()
        acked += got
    store = FactStore.postgres(url, namespace="writepath") if url else FactStore.persistent(path)
    current = {f.key for f in store.get("u")}
    lost = sum(1 for i in acked if f"k.{i}" not in current)
    order = [int(e.after.value) for e in store.history("u") if e.kind == EventKind.ADD]
    in_order = [i for i in order if i in set(acked)] == acked
    if url:
        store.drop_user("u")
    store.close()
    return {"check": f"{rounds} SIGKILLs during writes" + (", PostgreSQL memory" if url else ""), "writes": len(acked), "seconds": time.perf_counter() - start,
            "current facts for the key": None, "lost": lost, "history order = ack order": in_order}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--writes", type=int, default=200)
    ap.add_argument("--kills", type=int, default=20)
    ap.add_argument("--out", default="results/write-path")
    ap.add_argument("--postgres", action="store_true",
                    help="also run the checks with a PostgreSQL log and on a PostgreSQL memory (starts pgserver: "
                         "pip install 'memkit-lab[bench]')")
    args = ap.parse_args()
    rows = [threads(args.writes), processes(args.writes)]
    if args.postgres:
        import pgserver

        pg = pgserver.get_server(tempfile.mkdtemp(prefix="memkit-pg-"), cleanup_mode="stop")
        rows.append(processes(args.writes, pg.get_uri()))
        rows.append(processes(args.writes, pg.get_uri(), whole=True))
        rows.append(kills(args.kills, url=pg.get_uri()))
        pg.cleanup()
    rows.append(kills(args.kills))
    table = pd.DataFrame(rows)
    table["writes/s"] = table["writes"] / table["seconds"]
    print(table.round(1).to_string(index=False))
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    table.to_csv(out / "write_path.csv", index=False)
    print(f"\nwrote {out}/write_path.csv")


if __name__ == "__main__":
    main()
