"""The lexical candidates, measured side by side over turns: SQLite FTS5 (the episodes' index until memkit moved
them to tantivy: the same table and query, here in memory), bm25s, and tantivy (memkit's ``LexicalIndex``).

    pip install -e ".[bench]" && python scripts/measure_lexical.py --seed 1 --out results/lexical

Both index the same text per turn (speaker and words) of every conversation of a chat suite and rank the
turns for every probe; the ranked turns are packed into 400 and 1,200 tokens in rank order, and the
share of evidence turns packed is reported, with the cost of indexing one more turn (FTS5: one insert;
bm25s: a rebuild of the user's index, as it has no incremental update; tantivy: one change in its own commit,
where memkit commits a batch of turns at once) and of one query (tantivy: BM25 with block-max WAND, which
stops scoring what cannot reach the top k).
"""

from __future__ import annotations

import argparse
import sqlite3
import statistics
import tempfile
import time
from pathlib import Path

import bm25s
import pandas as pd

from memkit.models import tokens
from memkit.eval.data import write_suite
from memkit.eval.datasets import load
from memkit.store.lexicon import LexicalIndex, lexical_text, query_terms


def pack(ranked: list[str], text: dict[str, str], budget: int) -> set[str]:
    used, out = 0, set()
    for tid in ranked:
        cost = tokens.count(text[tid]) + 1
        if used + cost <= budget:
            out.add(tid)
            used += cost
    return out


def fts5_search(db: sqlite3.Connection, query: str, k: int) -> list[str]:
    """BM25 over the turns as memkit's FTS5 query ranked them: any of the query's words, best first."""
    terms = query_terms(query)
    if not terms:
        return []
    match = " OR ".join('"' + t.replace('"', '""') + '"' for t in terms)
    return [r[0] for r in db.execute("SELECT ref FROM turns WHERE turns MATCH ? ORDER BY bm25(turns, 0.0, 1.0)"
                                     " LIMIT ?", (f"body:({match})", k))]


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
        corpus = [lexical_text(f"{t.speaker or t.role} {t.content}") for t in turns]
        db = sqlite3.connect(":memory:")
        db.execute("CREATE VIRTUAL TABLE turns USING fts5(ref UNINDEXED, body, tokenize='porter unicode61')")
        for t, body in zip(turns, corpus):
            start = time.perf_counter()
            with db:
                db.execute("INSERT INTO turns (ref, body) VALUES (?, ?)", (t.id, body))
            add_ms["fts5"].append((time.perf_counter() - start) * 1000)
        start = time.perf_counter()
        retriever = bm25s.BM25()
        retriever.index(bm25s.tokenize(corpus, stopwords="en", show_progress=False), show_progress=False)
        add_ms["bm25s"].append((time.perf_counter() - start) * 1000)  # one rebuild: bm25s's cost of one more turn
        index = LexicalIndex()  # in memory
        for t, body in zip(turns, corpus):
            start = time.perf_counter()
            index.change("o", "episodes", [(t.id, body)])  # searchable now: a commit of its own
            add_ms["tantivy"].append((time.perf_counter() - start) * 1000)
        for p in conv.probes:
            start = time.perf_counter()
            fts = fts5_search(db, p.question, 200)
            query_ms["fts5"].append((time.perf_counter() - start) * 1000)
            start = time.perf_counter()
            q = bm25s.tokenize([" ".join(query_terms(p.question))], stopwords="en", show_progress=False)
            docs, scores = retriever.retrieve(q, k=min(200, len(turns)), show_progress=False)
            bm = [turns[int(i)].id for i, s in zip(docs[0], scores[0]) if s > 0]
            query_ms["bm25s"].append((time.perf_counter() - start) * 1000)
            start = time.perf_counter()
            tv = [ref for ref, _ in index.search("o", "episodes", p.question, 200)]
            query_ms["tantivy"].append((time.perf_counter() - start) * 1000)
            for name, ranked in (("fts5", fts), ("bm25s", bm), ("tantivy", tv)):
                for budget in (400, 1200):
                    got = pack(ranked, text, budget)
                    rows.append({"index": name, "budget": budget, "type": p.type,
                                 "evidence_recall": len(got & set(p.evidence)) / len(p.evidence)})
        db.close()
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
