"""Print the README's result tables (markdown) from a `memkit bench` output folder, so no number is copied by hand.

    python scripts/readme_tables.py results/chats [--against rag:bm25] [--by-type 400]

Evidence recall per strategy and budget with its 95% interval (answer in context beside it), the paired
difference of two-layer memory against a baseline at each budget (from compare.csv), and, with
``--by-type B``, evidence recall by probe type at budget B.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import pandas as pd


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("folder")
    ap.add_argument("--two-layer", default="two-layer:keyed")
    ap.add_argument("--against", action="append", default=None, help="baselines to compare with (default rag:bm25)")
    ap.add_argument("--by-type", type=int, default=None, help="a budget: evidence recall by probe type there")
    args = ap.parse_args()
    folder = Path(args.folder)
    summary = pd.read_csv(folder / "summary.csv")
    every = summary[summary["type"] == "all"]
    budgets = sorted(every["budget"].unique())
    print("| evidence recall [95% interval] (answer in context) | " + " | ".join(f"{b:,}" for b in budgets) + " |")
    print("|---" * (len(budgets) + 1) + "|")
    for name, rows in every.groupby("strategy", sort=False):
        rows = rows.set_index("budget")
        cells = [f"{r.evidence_recall:.2f} [{r.evidence_recall_ci_low:.2f}, {r.evidence_recall_ci_high:.2f}] "
                 f"({r.answer_in_context:.2f})" for _, r in rows.loc[budgets].iterrows()]
        label = f"**{name}**" if name == args.two_layer else name
        print(f"| {label} | " + " | ".join(cells) + " |")
    compare = folder / "compare.csv"
    if compare.exists():
        pairs = pd.read_csv(compare)
        pairs = pairs[(pairs["type"] == "all") & (pairs["metric"] == "evidence_recall")]
        print()
        print(f"| {args.two_layer} minus | " + " | ".join(f"{b:,}" for b in budgets) + " |")
        print("|---" * (len(budgets) + 1) + "|")
        for base in args.against or ["rag:bm25"]:
            cells = []
            for b in budgets:
                row = pairs[(pairs["budget"] == b) & (((pairs["strategy_a"] == args.two_layer) & (pairs["strategy_b"] == base))
                                                     | ((pairs["strategy_a"] == base) & (pairs["strategy_b"] == args.two_layer)))]
                if row.empty:
                    cells.append("–")
                    continue
                r = row.iloc[0]
                sign = 1 if r.strategy_a == args.two_layer else -1
                d, lo, hi = sign * r.difference, *sorted((sign * r.ci_low, sign * r.ci_high))
                word = "indistinguishable" if r.verdict == "indistinguishable" else ("higher" if d > 0 else "lower")
                cells.append(f"{d:+.2f} [{lo:+.2f}, {hi:+.2f}] p={r.p_value:.3f} {word}")
            print(f"| {base} | " + " | ".join(cells) + " |")
    if args.by_type is not None:
        typed = summary[(summary["type"] != "all") & (summary["budget"] == args.by_type)]
        table = typed.pivot_table(index="type", columns="strategy", values="evidence_recall", sort=False)
        table = table[[s for s in every["strategy"].unique() if s in table]]
        print(f"\nAt {args.by_type:,} tokens, by probe type (evidence recall):\n")
        print("| type | " + " | ".join(table.columns) + " |")
        print("|---" * (len(table.columns) + 1) + "|")
        for t, r in table.iterrows():
            print(f"| {t} | " + " | ".join(f"{v:.2f}" for v in r) + " |")


if __name__ == "__main__":
    main()
