"""The ingest targets of issue 22, measured on long assistant-style turns (250-350 tokens) from the assistant suite.

    python scripts/measure_ingest.py --turns 320 --out results/ingest

1. bare: the offline embedder alone on the turns, in batches of 32 (what an ideal write path would cost); it
   cuts each turn at its 256-token window, so it also runs on the passages the turns are indexed as (every
   token, as memkit embeds them) and on the whole turns in a 512-token window (every token in one pass per
   turn: what late chunking, pooling one pass per passage, would cost the encoder); and on the passages one
   call per session of 8 turns, as ``observe`` embeds them;
2. observe, cache cold: the same turns observed by ``Memory`` (sessions of 8, each ended), with the embedding
   cache empty (passages, lexical index, records, summary and extraction included); and once more with
   ``passage_tokens=0``, each turn embedded whole and cut at 256 tokens, so the encoder does exactly the bare
   embedder's work and the difference is the rest of the write path;
3. observe, cache warm: the same turns into a fresh store, the cache now holding every vector.
Prints turns/s and tokens/s for each and the ratios the issue sets targets for (bare / cold >= 0.9, warm /
cold >= 5). Not a test: run it alone on the machine, it is a timing.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

import pandas as pd

from memkit import FactStore, Memory
from memkit.embed import MiniLMEmbedder
from memkit.embed_cache import cached
from memkit.passages import PASSAGE_TOKENS
from memkit.store.base import episode_items
from memkit.types import Episode
from memkit.tokens import count

ROOT = Path(__file__).resolve().parents[1]


def long_turns(n: int) -> list[str]:
    """Assistant turns of 250-350 tokens from data/assistant.jsonl, then from fresh seeds' suites if short."""
    from memkit.eval.data import generate

    out: list[str] = []
    seed = 0
    while len(out) < n:
        for conv in generate("assistant", seed + 100):  # seeds that are neither the dev nor the reported ones
            for s in conv["sessions"]:
                out += [t["content"] for t in s["turns"] if t["role"] == "assistant" and 250 <= count(t["content"]) <= 350]
        seed += 1
    return list(dict.fromkeys(out))[:n]


def observe(turns: list[str], embedder, passage_tokens: int = PASSAGE_TOKENS) -> float:
    store = FactStore.ephemeral(embedder)
    memory = Memory(store=store, passage_tokens=passage_tokens)
    start = time.perf_counter()
    for i in range(0, len(turns), 8):
        sid = f"s{i // 8}"
        for t in turns[i:i + 8]:
            memory.observe("u1", sid, "assistant", t)
        memory.end_session("u1", sid)
    elapsed = time.perf_counter() - start
    store.close()
    return elapsed


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--turns", type=int, default=320)
    ap.add_argument("--out", default="")
    args = ap.parse_args()
    turns = long_turns(args.turns)
    tokens = sum(count(t) for t in turns)
    bare_encoder = MiniLMEmbedder(batch_size=32)
    bare_encoder(turns[:32])  # load the model outside the timing
    start = time.perf_counter()
    bare_encoder(turns)
    bare = time.perf_counter() - start
    passages = [text for t in turns for _, text in episode_items(
        Episode("", "u1", "s", "t", "assistant", "assistant", t, 0.0, 0, passage_tokens=PASSAGE_TOKENS))]
    start = time.perf_counter()
    bare_encoder(passages)
    bare_passages = time.perf_counter() - start
    by_session = [[text for t in turns[i:i + 8] for _, text in episode_items(
        Episode("", "u1", "s", "t", "assistant", "assistant", t, 0.0, 0, passage_tokens=PASSAGE_TOKENS))]
        for i in range(0, len(turns), 8)]
    start = time.perf_counter()
    for texts in by_session:  # as observe embeds them: one call per session of 8 turns
        bare_encoder(texts)
    bare_sessions = time.perf_counter() - start
    whole_encoder = MiniLMEmbedder(batch_size=32, max_tokens=512)
    whole_encoder(turns[:32])
    start = time.perf_counter()
    whole_encoder(turns)
    bare_whole = time.perf_counter() - start
    encoder = MiniLMEmbedder(batch_size=32)
    encoder(["load"])
    with tempfile.TemporaryDirectory() as tmp:
        cold = observe(turns, cached(encoder, Path(tmp) / "e.sqlite3"))
        warm = observe(turns, cached(encoder, Path(tmp) / "e.sqlite3"))
        whole = observe(turns, cached(encoder, Path(tmp) / "whole.sqlite3"), passage_tokens=0)
    rows = [{"run": name, "seconds": round(s, 2), "turns_per_s": round(len(turns) / s, 1),
             "tokens_per_s": round(tokens / s)} for name, s in (("bare embedder", bare),
                                                                (f"bare embedder on their {len(passages)} passages", bare_passages),
                                                                ("bare embedder on the passages, one call per session", bare_sessions),
                                                                ("bare embedder, whole turns, 512 window", bare_whole),
                                                                ("observe, cache cold", cold),
                                                                ("observe whole turns (passage_tokens=0), cache cold", whole),
                                                                ("observe, cache warm", warm))]
    table = pd.DataFrame(rows)
    print(f"{len(turns)} turns, {tokens} tokens (cl100k), mean {tokens / len(turns):.0f}")
    print(table.to_string(index=False))
    print(f"\nbare / cold = {bare / cold:.2f} (target >= 0.90); bare on the passages / cold = {bare_passages / cold:.2f}; "
          f"per session / cold = {bare_sessions / cold:.2f}; bare on the whole turns / cold = {bare_whole / cold:.2f}; "
          f"bare / observe whole turns = {bare / whole:.2f}; warm speed-up = {cold / warm:.1f}x (target >= 5)")
    if args.out:
        out = Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
        table.to_csv(out / "ingest.csv", index=False)
        (out / "ingest.json").write_text(json.dumps({"turns": len(turns), "tokens": tokens}))


if __name__ == "__main__":
    main()
