"""The lexical candidates, measured side by side: SQLite FTS5 (memkit's ``Records``, its episodes' index), bm25s
and tantivy (memkit's ``FactIndex``, its facts' index, here over turns).

    pip install -e ".[bench]" && python scripts/measure_lexical.py --seed 1 --out results/lexical

Both index the same text per turn (speaker and words) of every conversation of a chat suite and rank the
turns for every probe; the ranked turns are packed into 400 and 1,200 tokens in rank order, and the
share of evidence turns packed is reported, with the cost of indexing one more turn (FTS5: one insert;
bm25s: a rebuild of the user's index, as it has no incremental update; tantivy: one change, as memkit commits it)
and of one query (tantivy: BM25 with block-max WAND, which stops scoring what cannot reach the top k).
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

import bm25s
import pandas as pd

from memkit import tokens
from memkit.eval.data import write_suite
from memkit.eval.data import load
from memkit.lexicon import FactIndex
from memkit.records import Records, lexical_text, query_terms
from memkit.types import Episode


def pack(ranked: list[str], text: dict[str, str], budget: int) -> set[str]:
    used, out = 0, set()
    for tid in ranked:
        cost = tokens.count(text[tid]) + 1
        if used + cost <= budget:
            out.add(tid)
            used += cost
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--data", default=None, help="a memkit JSONL file instead of a generated suite")
    ap.add_argument("--out", default="results/lexical")
    args = ap.parse_args()
    path = args.data or write_suite(Path(tempfile.mkdtemp()) / "dev.jsonl", "chats", args.seed)
    names = ("fts5", "bm25s", "tantivy")
    rows, add_ms, query_ms = [], {n: [] for n in names}, {n: [] for n in names}
    for conv in load(path):
        turns = [t for s in conv.sessions for t in s.turns]
        text = {t.id: f"{t.speaker or t.role}: {t.content}" for t in turns}
        records = Records()
        ids = {}
        for t in turns:
            start = time.perf_counter()
            ep = records.add_episode("o", Episode("", "u", "s", t.id, t.speaker or t.role, t.role, t.content, 0.0))
            add_ms["fts5"].append((time.perf_counter() - start) * 1000)
            ids[ep.id] = t.id
        corpus = [lexical_text(f"{t.speaker or t.role} {t.content}") for t in turns]
        start = time.perf_counter()
        retriever = bm25s.BM25()
        retriever.index(bm25s.tokenize(corpus, stopwords="en", show_progress=False), show_progress=False)
        add_ms["bm25s"].append((time.perf_counter() - start) * 1000)  # one rebuild: bm25s's cost of one more turn
        index = FactIndex()  # in memory
        for t, body in zip(turns, corpus):
            start = time.perf_counter()
            index.change("o", [(t.id, body)])  # searchable now, as an observed turn is in FTS5
            add_ms["tantivy"].append((time.perf_counter() - start) * 1000)
        for p in conv.probes:
            start = time.perf_counter()
            fts = [ids[ref] for ref, _ in records.search("o", p.question, 200)]
            query_ms["fts5"].append((time.perf_counter() - start) * 1000)
            start = time.perf_counter()
            q = bm25s.tokenize([" ".join(query_terms(p.question))], stopwords="en", show_progress=False)
            docs, scores = retriever.retrieve(q, k=min(200, len(turns)), show_progress=False)
            bm = [turns[int(i)].id for i, s in zip(docs[0], scores[0]) if s > 0]
            query_ms["bm25s"].append((time.perf_counter() - start) * 1000)
            start = time.perf_counter()
            tv = [ref for ref, _ in index.search("o", p.question, 200)]
            query_ms["tantivy"].append((time.perf_counter() - start) * 1000)
            for name, ranked in (("fts5", fts), ("bm25s", bm), ("tantivy", tv)):
                for budget in (400, 1200):
                    got = pack(ranked, text, budget)
                    rows.append({"index": name, "budget": budget, "type": p.type,
                                 "evidence_recall": len(got & set(p.evidence)) / len(p.evidence)})
        records.close()
    df = pd.DataFrame(rows)
    table = df.groupby(["index", "budget"])["evidence_recall"].mean().unstack().round(3)
    for name in names:
        table.loc[name, "add one turn ms (p50)"] = round(statistics.median(add_ms[name]), 2)
        table.loc[name, "query ms (p50)"] = round(statistics.median(query_ms[name]), 2)
    print(table.to_string())
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    table.to_csv(out / "lexical.csv")
    print(f"\nwrote {out}/lexical.csv")


if __name__ == "__main__":
    main()
