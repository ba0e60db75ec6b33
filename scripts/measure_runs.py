"""The parallel targets of issue 22 (serial, ``--jobs 2`` and a Dask ``LocalCluster``), measured in rounds.

    python scripts/measure_runs.py --data data/suite.jsonl --limit 20 --rounds 3 --out results/runs

One wall time on this machine moves by 15-25% from run to run (the same serial run took 389 s and 458 s), more
than the 10% the Dask target allows. So each round runs every mode once, in a rotated order, on the same jobs
(the first suite's strategies, as in the README), and the ratios are taken within a round, where the machine's
state is shared; the table gives each round and the median. Each mode runs with the cache cold (a new file)
and then warm (the same file again). The Dask
cluster (2 worker processes, 1 thread each) is started before the timing, as a user's cluster would be; the
processes of ``--jobs`` start inside it, as they do in ``memkit bench``. Every run's rows are checked equal to
the first run's (timings aside). Each run is the ``memkit bench`` command in a process of its own, as a user
runs it (a run in this script's process would share it with the cluster's scheduler, and with what the runs
before it left behind). Not a test: run it alone on the machine, it is a timing.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pandas as pd

STRATEGIES = ["full", "window", "summary", "two-layer:keyed", "two-layer:temporal", "two-layer:append",
              "two-layer:similarity", "rag:bm25", "rag:hybrid"]
MODES = ["serial", "jobs 2", "dask"]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", default="data/suite.jsonl")
    ap.add_argument("--limit", type=int, default=20, help="the first N conversations")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--modes", default=",".join(MODES))
    ap.add_argument("--out", default="")
    args = ap.parse_args()
    from distributed import LocalCluster

    modes = args.modes.split(",")
    rows, first = [], None
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster, \
            tempfile.TemporaryDirectory() as tmp:
        options = {"serial": [], "jobs 2": ["--jobs", "2"], "dask": ["--scheduler", cluster.scheduler_address]}
        bench = [sys.executable, "-m", "memkit", "bench", "--data", args.data, "--limit", str(args.limit),
                 "--budget", "1200", "--no-turn-tokens"] + [a for s in STRATEGIES for a in ("--strategy", s)]
        for r in range(args.rounds):
            order = modes[r % len(modes):] + modes[:r % len(modes)]  # each mode goes first in some round
            for cache in ("cold", "warm"):
                for mode in order:
                    path = Path(tmp) / f"{r}-{mode}.sqlite3"  # cold: new; warm: the file its cold run filled
                    out = Path(tmp) / f"{r}-{mode}-{cache}"
                    start = time.perf_counter()
                    subprocess.run(bench + options[mode] + ["--embed-cache", str(path), "--out", str(out)],
                                   check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                    seconds = time.perf_counter() - start
                    results = pd.read_csv(out / "results.csv").drop(columns=["read_ms"])
                    if first is None:
                        first = results
                    same = results.equals(first)
                    rows.append({"round": r, "cache": cache, "mode": mode, "seconds": round(seconds, 1), "same_rows": same})
                    print(rows[-1], flush=True)
    table = pd.DataFrame(rows)
    wide = table.pivot_table(index=["cache", "round"], columns="mode", values="seconds")
    for mode in modes:
        if mode != "serial" and "serial" in wide:
            wide[f"{mode} / serial"] = (wide[mode] / wide["serial"]).round(2)
    if "dask" in wide and "jobs 2" in wide:
        wide["dask / jobs 2"] = (wide["dask"] / wide["jobs 2"]).round(2)
    medians = wide.groupby(level="cache").median().round(2)
    print(f"\n{args.limit} conversations x {len(STRATEGIES)} strategies, {args.rounds} rounds; every run's rows "
          f"{'equal' if table['same_rows'].all() else 'NOT equal'} to the first's\n")
    print(wide.to_string())
    print("\nmedian of the rounds\n" + medians.to_string())
    if args.out:
        out = Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
        table.to_csv(out / "runs.csv", index=False)
        wide.to_csv(out / "runs_by_round.csv")


if __name__ == "__main__":
    main()
