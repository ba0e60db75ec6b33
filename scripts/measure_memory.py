"""How big a ``memkit bench --jobs`` run's worker processes grow, with and without ``--recycle``.

    python scripts/measure_memory.py --seeds 6 --recycle 0,30 --rounds 2 --out results/memory

Generates assistant-shaped conversations (the assistant suite's generator, seeds from 300: neither the dev
nor the reported ones), runs ``memkit bench`` on them with ``--jobs 2`` for each ``--recycle`` value (the
first run of all warms the embedding cache, so every timed run has it warm), samples the resident memory of
every process of the run once a second, and prints for each run the wall time, how many worker processes
it had and the largest any of them grew to; the runs' ``results.csv`` must be the same. Not a test: run it
alone on the machine, it is a timing.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pandas as pd

from memkit.eval.data import generate

STRATEGIES = ["two-layer:similarity", "rag:dense", "two-layer:keyed"]


def descendants(pid: int) -> list[int]:
    out: list[int] = []
    try:
        children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    except OSError:
        return out
    for child in map(int, children):
        out += [child, *descendants(child)]
    return out


def rss_mb(pid: int) -> int | None:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) // 1024
    except OSError:
        pass
    return None


def bench(data: Path, cache: Path, out: Path, recycle: int) -> dict:
    """One ``memkit bench`` run, its wall time and its worker processes' peak memory."""
    cmd = [sys.executable, "-m", "memkit", "bench", "--data", str(data), "--jobs", "2", "--recycle", str(recycle),
           "--no-turn-tokens", "--embed-cache", str(cache), "--out", str(out)]
    for name in STRATEGIES:
        cmd += ["--strategy", name]
    start = time.perf_counter()
    run = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    peak: dict[int, int] = {}
    while run.poll() is None:
        for pid in descendants(run.pid):
            mb = rss_mb(pid)
            if mb is not None:
                peak[pid] = max(peak.get(pid, 0), mb)
        time.sleep(1)
    err = run.stderr.read() if run.stderr else ""
    if run.returncode:
        raise SystemExit(f"memkit bench failed:\n{err[-2000:]}")
    workers = {pid: mb for pid, mb in peak.items() if mb > 100}  # spawn's resource tracker stays ~12 MB
    return {"recycle": recycle, "seconds": round(time.perf_counter() - start, 1), "worker_processes": len(workers),
            "largest_worker_mb": max(workers.values(), default=0)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=6, help="generated suites of 10 conversations each")
    ap.add_argument("--recycle", default="0,30", help="--recycle values to compare, comma-separated")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--out", default="")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        data, cache = Path(tmp) / "conversations.jsonl", Path(tmp) / "embeddings.sqlite3"
        convs = [{**c, "id": f"{seed}-{c['id']}"} for seed in range(300, 300 + args.seeds)
                 for c in generate("assistant", seed)]
        data.write_text("".join(json.dumps(c) + "\n" for c in convs), "utf-8")
        turns = sum(len(s["turns"]) for c in convs for s in c["sessions"])
        bench(data, cache, Path(tmp) / "warm-up", 0)
        rows, results = [], []
        for r in range(args.rounds):
            for recycle in (int(v) for v in args.recycle.split(",")):
                out = Path(tmp) / f"run-{r}-{recycle}"
                rows.append({"round": r, **bench(data, cache, out, recycle)})
                results.append(pd.read_csv(out / "results.csv").drop(columns=["read_ms"]))
    table = pd.DataFrame(rows)
    print(f"{len(convs)} conversations, {turns} turns, {len(STRATEGIES)} strategies, "
          f"{len(convs) * len(STRATEGIES)} jobs, --jobs 2, cache warm")
    print(table.to_string(index=False))
    same = all(r.equals(results[0]) for r in results)
    print(f"results.csv the same in every run ({len(results[0])} rows, read_ms aside): {same}")
    if args.out:
        out = Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
        table.to_csv(out / "memory.csv", index=False)
    if not same:
        raise SystemExit("the runs' results differ")


if __name__ == "__main__":
    main()
