"""Choose recall options on a *development* split, never on the reported suite.

    python scripts/measure_recall_options.py --seed 1 --budget 400 --out results/recall-options

Generates the realistic chat suite (or, with ``--suite assistant``, the user-assistant one) with a seed other
than 0 (seed 0 is the committed, reported ``data/chats.jsonl`` / ``data/assistant.jsonl``) and compares the options memkit could default to: channels and their weights,
neighbours of a hit, dates beside episodes, the source episode of a shown fact, the profile block, and the
whole memory on PostgreSQL (full-text search in place of tantivy; needs ``memkit[bench]``). Prints
one table (evidence recall, answer in context, tokens) and writes it as CSV.
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

import pandas as pd

from memkit.eval.data import write_suite
from memkit.eval.datasets import load
from memkit.eval.runner import run
from memkit.recall import RecallOptions

VARIANTS: dict[str, tuple[str, dict]] = {
    "rag:bm25": ("rag:bm25", {}),
    "rag:dense": ("rag:dense", {}),
    "rag:hybrid (rrf 1:1)": ("rag:hybrid", {}),
    "rag:hybrid (rrf k=10)": ("rag:hybrid", {"recall": RecallOptions(rrf_k=10)}),
    "rag:hybrid (rrf k=2)": ("rag:hybrid", {"recall": RecallOptions(rrf_k=2)}),
    "two-layer (defaults)": ("two-layer:keyed", {}),
    "two-layer, lexical 0.5 : dense 1": ("two-layer:keyed", {"recall": RecallOptions(weights=(("lexical", 0.5), ("dense", 1.0)))}),
    "two-layer, lexical 1 : dense 0.5": ("two-layer:keyed", {"recall": RecallOptions(weights=(("lexical", 1.0), ("dense", 0.5)))}),
    "two-layer, depth 50": ("two-layer:keyed", {"recall": RecallOptions(depth=50)}),
    "two-layer, depth 30": ("two-layer:keyed", {"recall": RecallOptions(depth=30)}),
    "two-layer, depth 120": ("two-layer:keyed", {"recall": RecallOptions(depth=120)}),
    "two-layer, depth 240": ("two-layer:keyed", {"recall": RecallOptions(depth=240)}),
    "two-layer, neighbours 1": ("two-layer:keyed", {"neighbours": 1}),
    "two-layer, no dates": ("two-layer:keyed", {"episode_dates": False}),
    "two-layer, source episodes of facts too": ("two-layer:keyed", {"episodes_for_facts": True}),
    "two-layer, profile 50": ("two-layer:keyed", {"profile_tokens": 50}),
    "two-layer, profile 0": ("two-layer:keyed", {"profile_tokens": 0}),
    "two-layer, episodes only (no facts)": ("two-layer:keyed", {"facts": False, "profile_tokens": 0}),
    "two-layer, repeats not folded": ("two-layer:keyed", {"fold_repeats": False}),
    "two-layer, identical repeats only": ("two-layer:keyed", {"near_repeats": 1.0}),
    "two-layer, near repeats 0.6": ("two-layer:keyed", {"near_repeats": 0.6}),
    "two-layer, no question time": ("two-layer:keyed", {"recall": RecallOptions(timeframes=False)}),
    # long turns as passages (memkit/passages.py): off, and sizes around the default
    "two-layer, passages off (turns whole)": ("two-layer:keyed", {"passage_tokens": 0}),
    "two-layer, passages 64": ("two-layer:keyed", {"passage_tokens": 64}),
    "two-layer, passages 128": ("two-layer:keyed", {"passage_tokens": 128}),
    "two-layer, passages 192": ("two-layer:keyed", {"passage_tokens": 192}),
    "two-layer, passages 64, any number per turn": ("two-layer:keyed", {"passage_tokens": 64, "passages_per_turn": 0}),
    "two-layer, passages 128, any number per turn": ("two-layer:keyed", {"passage_tokens": 128, "passages_per_turn": 0}),
    "two-layer, passages 192, any number per turn": ("two-layer:keyed", {"passage_tokens": 192, "passages_per_turn": 0}),
    # maximal marginal relevance over the fused list (assemble.diversified), words alike as the penalty
    "two-layer, diversity 0.2": ("two-layer:keyed", {"diversity": 0.2}),
    "two-layer, diversity 0.4": ("two-layer:keyed", {"diversity": 0.4}),
    "two-layer, diversity 0.6": ("two-layer:keyed", {"diversity": 0.6}),
    "two-layer, diversity 0.8": ("two-layer:keyed", {"diversity": 0.8}),
    # the whole memory in PostgreSQL (pgvector, and BM25 written in SQL in place of tantivy; the ts_rank_cd
    # variants measured before it are in the README, from this script at commit 5001aac)
    "rag:bm25 on PostgreSQL": ("rag:bm25", {"store": True}),
    "two-layer on PostgreSQL": ("two-layer:keyed", {"store": True}),
}
_PG: list = []


def postgres_url() -> str:
    """The URL of a PostgreSQL started once from the pgserver wheel (each run gets a fresh schema of it)."""
    import pgserver

    if not _PG:
        _PG.append(pgserver.get_server(tempfile.mkdtemp(prefix="memkit-options-pg-"), cleanup_mode="stop"))
    return _PG[0].get_uri()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--suite", choices=["chats", "assistant"], default="chats", help="the suite to generate")
    ap.add_argument("--conversations", type=int, default=10)
    ap.add_argument("--budget", default="400")
    ap.add_argument("--only", action="append", help="variant names to run (default: all)")
    ap.add_argument("--out", default="results/recall-options")
    ap.add_argument("--jobs", type=int, default=1, help="processes, as memkit bench --jobs")
    ap.add_argument("--embed-cache", default=None, help="an embedding-cache file, as memkit bench --embed-cache")
    args = ap.parse_args()
    if args.seed == 0:
        raise SystemExit("seed 0 is the reported suite: choose options on another seed")
    path = write_suite(Path(tempfile.mkdtemp()) / "dev.jsonl", args.suite, args.seed, args.conversations)
    convs = load(path)
    budgets = [int(b) for b in args.budget.split(",")]
    rows = []
    for label, (strategy, options) in VARIANTS.items():
        if args.only and label not in args.only:
            continue
        options = dict(options)
        store = postgres_url() if options.pop("store", False) else None
        _, summary, _ = run(convs, [strategy], budget=budgets, per_turn_tokens=False, store=store, jobs=args.jobs,
                            embed_cache=args.embed_cache, **options)
        for _, r in summary[summary["type"] == "all"].iterrows():
            rows.append({"variant": label, "budget": r["budget"], "evidence_recall": r["evidence_recall"],
                         "answer_in_context": r["answer_in_context"], "context_tokens": r["context_tokens"],
                         "repeated_lines": r["repeated_lines"],
                         "turns_per_s": r["turns_per_s"]})
        print(pd.DataFrame(rows[-len(budgets):]).round(3).to_string(index=False, header=len(rows) == len(budgets)), flush=True)
    table = pd.DataFrame(rows)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    table.to_csv(out / f"options-seed{args.seed}.csv", index=False)
    print(f"\nwrote {out}/options-seed{args.seed}.csv")
    for server in _PG:
        server.cleanup()


if __name__ == "__main__":
    main()
