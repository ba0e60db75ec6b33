"""What each layer adds on real conversations: two-layer memory with its facts, its profile block or its
episodes switched off, beside raw retrieval, at 100, 200, 400 and 1,200 tokens (memkit/eval/layers.py).

    python scripts/measure_layers.py --data '../shared/devdata/realtalk/Chat_[1-5]_*.json' --format realtalk \
        --name realtalk-dev --jobs 2 --out docs/results/layers
    python scripts/measure_layers.py --data ../shared/devdata/beam/100K --format beam --name beam-dev ...

Writes ``<name>.csv`` (each variant's means and its paired difference from full two-layer memory with a 95%
interval, per budget and question type: ``layers.table``) and ``<name>.cmd`` (this command); with ``--rows``,
the per-probe rows too. docs/benchmarks.md shows the tables (``scripts/docs_pages.py``).
"""

from __future__ import annotations

import argparse
import shlex
import sys
from pathlib import Path

import pandas as pd

from memkit.config import Settings
from memkit.errors import MemkitError
from memkit.eval import layers
from memkit.eval.cli import embed_cache_file, positive
from memkit.eval.datasets import expand, load


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", nargs="+", help="real conversations (as memkit bench --data)")
    ap.add_argument("--from-rows", nargs="+", default=None,
                    help="make the table from rows runs wrote (--rows; one file per variant or several), not a new run")
    ap.add_argument("--format", default=None, help="their format (as memkit bench --format)")
    ap.add_argument("--name", required=True, help="the CSV's name (the split: realtalk-dev, beam-confirm, ...)")
    ap.add_argument("--budget", default=",".join(map(str, layers.BUDGETS)))
    ap.add_argument("--variant", action="append", help=f"variants to run (default: all of {list(layers.VARIANTS)})")
    ap.add_argument("--out", default="docs/results/layers")
    ap.add_argument("--rows", default=None, help="also write the per-probe rows to this CSV")
    ap.add_argument("--jobs", type=int, default=1, help="processes, as memkit bench --jobs")
    ap.add_argument("--embed-cache", default="", type=embed_cache_file,
                    help="an embedding-cache file or 'off', as memkit bench --embed-cache (default: its default file)")
    ap.add_argument("--limit", type=positive, default=None,
                    help="only the first N conversations, as memkit bench --limit")
    ap.add_argument("--extractor", default="rules",
                    help="the write path's extractor, as memkit bench --extractor. Another than the rules names the "
                         "variants '<variant> (<extractor> facts)', to be tabled beside a rules run's rows with "
                         "--from-rows; a model's (llm, on MEMKIT_LLM_*) runs in this process (--jobs 1)")
    args = ap.parse_args()
    if args.from_rows:
        rows = pd.concat([pd.read_csv(f) for f in args.from_rows], ignore_index=True)
    elif args.data:
        convs = [c for p in expand(args.data) for c in load(p, args.format)][: args.limit]
        budgets = [int(b) for b in args.budget.split(",")]
        rows = layers.measure(convs, budgets, args.variant, jobs=args.jobs, embed_cache=args.embed_cache,
                              **Settings.from_env().components([], args.extractor))
        if args.extractor != "rules":
            rows["strategy"] += f" ({args.extractor} facts)"
    else:
        ap.error("give --data (a new run) or --from-rows (a run's rows)")
    if args.rows and not args.from_rows:
        rows.to_csv(args.rows, index=False)
    table = layers.table(rows)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    table.to_csv(out / f"{args.name}.csv", index=False)
    if not args.from_rows:  # a table remade from rows keeps the command of the run that measured them
        (out / f"{args.name}.cmd").write_text(shlex.join(["python", "scripts/measure_layers.py", *sys.argv[1:]]) + "\n")
    print(table[table["type"] == "all"].round(3).to_string(index=False))
    print(f"\nwrote {out}/{args.name}.csv")


if __name__ == "__main__":
    try:
        main()
    except MemkitError as e:  # a bad option or input: its named error, not a traceback
        sys.exit(f"measure_layers.py: {type(e).__name__}: {e}")
