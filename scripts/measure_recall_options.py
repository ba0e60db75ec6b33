"""Choose recall options on a *development* split, never on the reported one.

    python scripts/measure_recall_options.py --data ../shared/devdata/realtalk/Chat_{1,2,3,4,5}_*.json \
        --format realtalk --budget 400,1200 --name realtalk-dev --out results/recall-options
    python scripts/measure_recall_options.py --data ../shared/devdata/beam/100K --format beam \
        --budget 400,1200 --name beam-dev --out results/recall-options

With ``--data``, the conversations are real ones (``memkit.eval.datasets``: choose on REALTALK chats 1-5 and
BEAM 100K, confirm on REALTALK 6-10 and BEAM 500K). Without it, the script

generates the realistic chat suite (or, with ``--suite assistant``, the user-assistant one) with a seed other
than 0 (seed 0 is the committed, reported ``data/chats.jsonl`` / ``data/assistant.jsonl``) and compares the options memkit could default to: channels and their weights,
neighbours of a hit, dates beside episodes, the source episode of a shown fact, the profile block, and the
whole memory on PostgreSQL (full-text search in place of tantivy; needs ``memkit-lab[bench]``). Prints
one table (evidence recall, answer in context, tokens) and writes it as CSV, and evidence recall per question
type beside it (``<name>-types.csv``).
"""

from __future__ import annotations

import argparse
import shlex
import sys
import tempfile
from pathlib import Path

import pandas as pd

from memkit.eval.cli import embed_cache_file
from memkit.eval.data import write_suite
from memkit.eval.datasets import expand, load
from memkit.eval.runner import run
from memkit.read.recall import RecallOptions
from memkit.strategies import RawTurnRetrieval

VARIANTS: dict[str, tuple[str, dict]] = {
    "rag:bm25": ("rag:bm25", {}),
    "rag:dense": ("rag:dense", {}),
    "rag:hybrid (rrf 1:1)": ("rag:hybrid", {}),
    "rag:hybrid (rrf k=10)": ("rag:hybrid", {"recall": RecallOptions(rrf_k=10, weights=RawTurnRetrieval.EVEN)}),
    "rag:hybrid (rrf k=2)": ("rag:hybrid", {"recall": RecallOptions(rrf_k=2, weights=RawTurnRetrieval.EVEN)}),
    "two-layer (defaults)": ("two-layer:keyed", {}),
    "two-layer, rrf k=2": ("two-layer:keyed", {"recall": RecallOptions(rrf_k=2)}),
    "two-layer, rrf k=30": ("two-layer:keyed", {"recall": RecallOptions(rrf_k=30)}),
    "two-layer, lexical 0.5 : dense 1": ("two-layer:keyed", {"recall": RecallOptions(weights=(("lexical", 0.5), ("dense", 1.0)))}),
    "two-layer, lexical 1 : dense 0.5": ("two-layer:keyed", {"recall": RecallOptions(weights=(("lexical", 1.0), ("dense", 0.5)))}),
    "two-layer, lexical 1 : dense 1": ("two-layer:keyed", {"recall": RecallOptions(weights=RawTurnRetrieval.EVEN)}),
    "two-layer, depth 50": ("two-layer:keyed", {"recall": RecallOptions(depth=50)}),
    "two-layer, depth 30": ("two-layer:keyed", {"recall": RecallOptions(depth=30)}),
    "two-layer, depth 40": ("two-layer:keyed", {"recall": RecallOptions(depth=40)}),
    "two-layer, depth 120": ("two-layer:keyed", {"recall": RecallOptions(depth=120)}),
    "two-layer, depth 240": ("two-layer:keyed", {"recall": RecallOptions(depth=240)}),
    "two-layer, neighbours 1": ("two-layer:keyed", {"neighbours": 1}),
    "two-layer, no dates": ("two-layer:keyed", {"episode_dates": False}),
    "two-layer, a speaker's name on every line": ("two-layer:keyed", {"speaker_runs": False}),
    "two-layer, source episodes of facts too": ("two-layer:keyed", {"episodes_for_facts": True}),
    # the similarity floor of the facts' dense channel (ReadOptions.min_score, store.DEFAULT_FLOOR = 0.3)
    "two-layer, fact floor 0.2": ("two-layer:keyed", {"min_score": 0.2}),
    "two-layer, fact floor 0.25": ("two-layer:keyed", {"min_score": 0.25}),
    "two-layer, fact floor 0.4": ("two-layer:keyed", {"min_score": 0.4}),
    "two-layer, profile 50": ("two-layer:keyed", {"profile_tokens": 50}),
    "two-layer, profile 0": ("two-layer:keyed", {"profile_tokens": 0}),
    "two-layer, episodes only (no facts)": ("two-layer:keyed", {"facts": False, "profile_tokens": 0}),
    # fewer recalled facts on the one list (ReadOptions.k, 5 by default; standing instructions and the profile
    # block as they are): run(k=...)
    "two-layer, 1 recalled fact": ("two-layer:keyed", {"k": 1}),
    "two-layer, 2 recalled facts": ("two-layer:keyed", {"k": 2}),
    "two-layer, 3 recalled facts": ("two-layer:keyed", {"k": 3}),
    "two-layer, repeats not folded": ("two-layer:keyed", {"fold_repeats": False}),
    "two-layer, identical repeats only": ("two-layer:keyed", {"near_repeats": 1.0}),
    "two-layer, near repeats 0.6": ("two-layer:keyed", {"near_repeats": 0.6}),
    "two-layer, no question time": ("two-layer:keyed", {"recall": RecallOptions(timeframes=False)}),
    # long turns as passages (memkit/store/passages.py): off, and sizes around the default
    "two-layer, passages off (turns whole)": ("two-layer:keyed", {"passage_tokens": 0}),
    "two-layer, passages 16": ("two-layer:keyed", {"passage_tokens": 16}),
    "two-layer, passages 24": ("two-layer:keyed", {"passage_tokens": 24}),
    "two-layer, passages 32": ("two-layer:keyed", {"passage_tokens": 32}),
    "two-layer, passages 48": ("two-layer:keyed", {"passage_tokens": 48}),
    "two-layer, passages 64": ("two-layer:keyed", {"passage_tokens": 64}),
    "two-layer, passages 128": ("two-layer:keyed", {"passage_tokens": 128}),
    "two-layer, passages 192": ("two-layer:keyed", {"passage_tokens": 192}),
    "two-layer, passages 64, any number per turn": ("two-layer:keyed", {"passage_tokens": 64, "passages_per_turn": 0}),
    "two-layer, passages 128, any number per turn": ("two-layer:keyed", {"passage_tokens": 128, "passages_per_turn": 0}),
    "two-layer, passages 192, any number per turn": ("two-layer:keyed", {"passage_tokens": 192, "passages_per_turn": 0}),
    # maximal marginal relevance over the fused list (assemble.diversified), words alike as the penalty
    "two-layer, diversity 0": ("two-layer:keyed", {"diversity": 0.0}),
    "two-layer, diversity 0.2": ("two-layer:keyed", {"diversity": 0.2}),
    "two-layer, diversity 0.4": ("two-layer:keyed", {"diversity": 0.4}),
    "two-layer, diversity 0.6": ("two-layer:keyed", {"diversity": 0.6}),
    "two-layer, diversity 0.8": ("two-layer:keyed", {"diversity": 0.8}),
    "two-layer, no subject": ("two-layer:keyed", {"recall": RecallOptions(subjects=False)}),
    "two-layer, profile 0, no subject": ("two-layer:keyed", {"profile_tokens": 0, "recall": RecallOptions(subjects=False)}),
    "two-layer, subject weight 2": ("two-layer:keyed", {"recall": RecallOptions(weights=(("lexical", 1.0), ("dense", 1.0), ("subject", 2.0)))}),
    "two-layer, subject weight 1": ("two-layer:keyed", {"recall": RecallOptions(weights=(("lexical", 0.5), ("dense", 1.0), ("subject", 1.0)))}),
    "two-layer, subject weight 3": ("two-layer:keyed", {"recall": RecallOptions(weights=(("lexical", 1.0), ("dense", 1.0), ("subject", 3.0)))}),
    "two-layer, lexical 0.75 : dense 1": ("two-layer:keyed", {"recall": RecallOptions(weights=(("lexical", 0.75), ("dense", 1.0)))}),
    "two-layer, subject weight 2, lexical 0.5 : dense 1": ("two-layer:keyed", {"recall": RecallOptions(weights=(("lexical", 0.5), ("dense", 1.0), ("subject", 2.0)))}),
    "two-layer, subject weight 3, lexical 0.5 : dense 1": ("two-layer:keyed", {"recall": RecallOptions(weights=(("lexical", 0.5), ("dense", 1.0), ("subject", 3.0)))}),
    "two-layer, profile 0, subject weight 2": ("two-layer:keyed", {"profile_tokens": 0, "recall": RecallOptions(weights=(("lexical", 1.0), ("dense", 1.0), ("subject", 2.0)))}),
    # the names a question gives kept in both queries (the label is older than the dense channel's leaving them out)
    "two-layer, lexical with the subject's name": ("two-layer:keyed", {"recall": RecallOptions(subject_words=True)}),
    # combinations tried on the real dev splits (REALTALK chats 1-5, BEAM 100K)
    "two-layer, profile 0, depth 120": ("two-layer:keyed", {"profile_tokens": 0, "recall": RecallOptions(depth=120)}),
    "two-layer, profile 0, depth 120, no dates": ("two-layer:keyed", {"profile_tokens": 0, "episode_dates": False,
                                                                      "recall": RecallOptions(depth=120)}),
    "two-layer, profile 0, diversity 0.2": ("two-layer:keyed", {"profile_tokens": 0, "diversity": 0.2}),
    "two-layer, profile 0, diversity 0": ("two-layer:keyed", {"profile_tokens": 0, "diversity": 0.0}),
    # the names a question gives (recall._scored_episodes): kept in the dense query, the pre-0.3 default
    "two-layer, names kept in the dense query": ("two-layer:keyed", {"recall": RecallOptions(dense_names=True)}),
    # a name spelt another way names its person (subject.spelt_like): off, names as they are spelt only
    "two-layer, names spelt exactly only": ("two-layer:keyed", {"recall": RecallOptions(name_variants=False)}),
    # the user's standing instructions most like the question shown first (recall.instruction_hits): none, two
    "two-layer, no standing instructions shown first": ("two-layer:keyed", {"recall": RecallOptions(instructions=0)}),
    "two-layer, 2 standing instructions": ("two-layer:keyed", {"recall": RecallOptions(instructions=2)}),
    # the user's own turns in a user-assistant memory (recall.PERSON_WEIGHT, 3 by default): their ranking's weight 1, 2, 5
    "two-layer, user weight 1": ("two-layer:keyed", {"recall": RecallOptions(weights=(("lexical", 1.0), ("dense", 1.0), ("user", 1.0)))}),
    "two-layer, user weight 2": ("two-layer:keyed", {"recall": RecallOptions(weights=(("lexical", 1.0), ("dense", 1.0), ("user", 2.0)))}),
    "two-layer, user weight 5": ("two-layer:keyed", {"recall": RecallOptions(weights=(("lexical", 1.0), ("dense", 1.0), ("user", 5.0)))}),
    # the question's time ranking (memkit/read/timeframe.py) at another weight than 1
    "two-layer, time weight 0.5": ("two-layer:keyed", {"recall": RecallOptions(weights=(("lexical", 1.0), ("dense", 1.0), ("time", 0.5)))}),
    "two-layer, time weight 2": ("two-layer:keyed", {"recall": RecallOptions(weights=(("lexical", 1.0), ("dense", 1.0), ("time", 2.0)))}),
    # only a first-person question names the user of a user-assistant memory (RecallOptions.first_person_only)
    "two-layer, first-person questions only": ("two-layer:keyed", {"recall": RecallOptions(first_person_only=True)}),
    "two-layer, profile 0, rrf k=2": ("two-layer:keyed", {"profile_tokens": 0, "recall": RecallOptions(rrf_k=2)}),
    # the whole memory in PostgreSQL (pgvector, and BM25 written in SQL in place of tantivy; the ts_rank_cd
    # variants measured before it are in docs/measurements.md, from this script)
    "rag:bm25 on PostgreSQL": ("rag:bm25", {"store": True}),
    "two-layer on PostgreSQL": ("two-layer:keyed", {"store": True}),
}
# the variants measured on the real dev splits (docs/benchmarks.md): --only-set real
REAL = ["two-layer (defaults)", "two-layer, no subject", "two-layer, subject weight 1",
        "two-layer, lexical with the subject's name", "two-layer, profile 0",
        "two-layer, no dates", "two-layer, a speaker's name on every line", "two-layer, episodes only (no facts)",
        "two-layer, passages off (turns whole)",
        "two-layer, neighbours 1", "two-layer, diversity 0.2", "two-layer, depth 120",
        "two-layer, lexical 1 : dense 1", "two-layer, lexical 1 : dense 0.5", "rag:hybrid (rrf k=2)"]
_PG: list = []


def postgres_url() -> str:
    """The URL of a PostgreSQL started once from the pgserver wheel (each run gets a fresh schema of it)."""
    import pgserver

    if not _PG:
        _PG.append(pgserver.get_server(tempfile.mkdtemp(prefix="memkit-options-pg-"), cleanup_mode="stop"))
    return _PG[0].get_uri()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", nargs="+", default=None, help="real conversations (as memkit bench --data)")
    ap.add_argument("--format", default=None, help="their format (as memkit bench --format)")
    ap.add_argument("--limit", type=int, default=None, help="the first N conversations only (as memkit bench --limit)")
    ap.add_argument("--name", default=None, help="the CSV's name (default: options-seed<SEED>)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--suite", choices=["chats", "assistant"], default="chats", help="the suite to generate")
    ap.add_argument("--conversations", type=int, default=10)
    ap.add_argument("--budget", default="400")
    ap.add_argument("--only", action="append", help="variant names to run (default: all)")
    ap.add_argument("--real", action="store_true", help="run the variants measured on the real dev splits (REAL)")
    ap.add_argument("--out", default="results/recall-options")
    ap.add_argument("--jobs", type=int, default=1, help="processes, as memkit bench --jobs")
    ap.add_argument("--embed-cache", default="", type=embed_cache_file,
                    help="an embedding-cache file or 'off', as memkit bench --embed-cache (default: its default file)")
    ap.add_argument("--embedder", default="minilm", help="the offline embedder, as memkit bench --embedder")
    args = ap.parse_args()
    if args.data:
        convs = [c for p in expand(args.data) for c in load(p, args.format)][:args.limit]
    else:
        if args.seed == 0:
            raise SystemExit("seed 0 is the reported suite: choose options on another seed")
        convs = load(write_suite(Path(tempfile.mkdtemp()) / "dev.jsonl", args.suite, args.seed, args.conversations))
    budgets = [int(b) for b in args.budget.split(",")]
    rows, by_type = [], []
    chosen = (args.only or []) + (REAL if args.real else [])
    for label, (strategy, options) in VARIANTS.items():
        if chosen and label not in chosen:
            continue
        options = dict(options)
        store = postgres_url() if options.pop("store", False) else None
        _, summary, _ = run(convs, [strategy], budget=budgets, per_turn_tokens=False, store=store, jobs=args.jobs,
                            embed_cache=args.embed_cache, embedder=args.embedder, **options)
        for _, r in summary[summary["type"] == "all"].iterrows():
            rows.append({"variant": label, "budget": r["budget"], "evidence_recall": r["evidence_recall"],
                         "ci_low": r.get("evidence_recall_ci_low"), "ci_high": r.get("evidence_recall_ci_high"),
                         "answer_in_context": r["answer_in_context"], "context_tokens": r["context_tokens"],
                         "repeated_lines": r["repeated_lines"],
                         "turns_per_s": r["turns_per_s"]})
        by_type += [{"variant": label, "budget": r["budget"], "type": r["type"], "probes": r["probes"],
                     "evidence_recall": r["evidence_recall"]} for _, r in summary[summary["type"] != "all"].iterrows()]
        print(pd.DataFrame(rows[-len(budgets):]).round(3).to_string(index=False, header=len(rows) == len(budgets)), flush=True)
    table = pd.DataFrame(rows)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    name = args.name or f"options-seed{args.seed}"
    table.to_csv(out / f"{name}.csv", index=False)
    pd.DataFrame(by_type).to_csv(out / f"{name}-types.csv", index=False)  # evidence recall per question type
    # the command beside its table, as memkit bench keeps its own in run.json (docs/benchmarks.md shows it)
    (out / f"{name}.cmd").write_text(shlex.join(["python", "scripts/measure_recall_options.py", *sys.argv[1:]]) + "\n")
    print(f"\nwrote {out}/{name}.csv")
    for server in _PG:
        server.cleanup()


if __name__ == "__main__":
    main()
