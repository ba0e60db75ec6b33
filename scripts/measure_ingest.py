"""The ingest targets of issue 22, measured on long assistant-style turns (250-350 tokens) from the assistant suite.

    python scripts/measure_ingest.py --turns 320 --rounds 3 --out results/ingest

1. bare: the offline embedder alone on the turns, in batches of 32 (what an ideal write path would cost); it
   cuts each turn at its 256-token window, so it also runs on the passages the turns are indexed as (every
   token, as memkit embeds them) and on the whole turns in a 512-token window (every token in one pass per
   turn: what late chunking, pooling one pass per passage, would cost the encoder); and on the passages one
   call per session of 8 turns, as ``observe`` embeds them;
2. observe, cache cold: the same turns observed by ``Memory`` (sessions of 8, each ended), with the embedding
   cache empty (passages, lexical index, records, summary and extraction included); and once more with
   ``passage_tokens=0``, each turn embedded whole and cut at 256 tokens, so the encoder does exactly the bare
   embedder's work and the difference is the rest of the write path;
3. observe, cache warm: the same turns into a fresh store, the cache now holding every vector;
4. observe in ``Memory.bulk`` mode, cache cold, with passages and whole: the same sessions, their turns
   embedded in one call on leaving (one commit of each index) instead of one call per ended session.
Every pass runs once per round (``--rounds``, default 3), in this order; prints each pass's median and per-round
seconds, and the ratios the issue sets targets for (bare / cold >= 0.9, warm / cold >= 5) within each round, so
that a machine's drift between rounds cancels. Each pass also times its encoder's forward passes (ONNX Runtime's
run and the pooling, by the embedder's own clock), so a pass splits into the encoder and the rest: the share
of a pass its encoder takes is measured within that pass, so drift between passes cancels too, and where an
observe pass and a bare pass run the same forward passes (the passages, one call per session), the ratio of
their encoder shares is the target's ratio with the machine's drift taken out. Not a test: run it alone on
the machine, it is a timing.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import statistics
import tempfile
import time
from pathlib import Path

import pandas as pd

from memkit import FactStore, Memory
from memkit.models.embed import MiniLMEmbedder
from memkit.store.embed_cache import cached
from memkit.store.passages import PASSAGE_TOKENS
from memkit.store.base import episode_items
from memkit.types import Episode
from memkit.models.tokens import count

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


class TimedEncoder(MiniLMEmbedder):
    """memkit's embedder, adding up the seconds of its forward passes (``encoder_s``)."""

    encoder_s = 0.0

    def _encode(self, ids, mask):
        start = time.perf_counter()
        try:
            return super()._encode(ids, mask)
        finally:
            self.encoder_s += time.perf_counter() - start


def observe(turns: list[str], embedder, passage_tokens: int = PASSAGE_TOKENS, bulk: bool = False) -> float:
    """Seconds to observe ``turns`` in sessions of 8, each ended (in ``Memory.bulk`` mode: all embedded on leaving)."""
    store = FactStore.ephemeral(embedder)
    memory = Memory(store=store, passage_tokens=passage_tokens)
    start = time.perf_counter()
    with memory.bulk() if bulk else contextlib.nullcontext():
        for i in range(0, len(turns), 8):
            sid = f"s{i // 8}"
            for t in turns[i:i + 8]:
                memory.observe("u1", sid, "assistant", t)
            memory.end_session("u1", sid)
    elapsed = time.perf_counter() - start
    assert not store.pending_episodes("u1")
    memory.close()
    return elapsed


def timed(fn, encoder: TimedEncoder) -> tuple[float, float]:
    """Seconds of ``fn()`` (an observe pass returns its own, which leave out the store's opening and closing),
    and of ``encoder``'s forward passes in it."""
    encoder.encoder_s = 0.0
    start = time.perf_counter()
    own = fn()
    return (own if isinstance(own, float) else time.perf_counter() - start), encoder.encoder_s


# the ratios the issue sets targets for (and their neighbours): (name, numerator pass, denominator pass)
RATIOS = [("bare / observe (target >= 0.90)", "bare", "cold"),
          ("bare on the passages / observe", "bare passages", "cold"),
          ("bare on the passages per session / observe", "bare sessions", "cold"),
          ("bare / observe whole turns", "bare", "whole"),
          ("bare / observe in bulk mode", "bare", "bulk"),
          ("bare on the passages / observe in bulk mode", "bare passages", "bulk"),
          ("bare / observe whole turns in bulk mode", "bare", "bulk whole"),
          ("warm speed-up: observe / observe warm (target >= 5)", "cold", "warm")]
# the same texts embedded in both: the same forward passes for the passages (per session, or in one call), the
# same cut turns in a little other batching for whole turns (one call per session in observe, one in all bare)
SHARES = [("encoder share: observe / bare on the passages per session", "cold", "bare sessions"),
          ("encoder share: observe in bulk mode / bare on the passages", "bulk", "bare passages"),
          ("encoder share: observe whole turns / bare", "whole", "bare"),
          ("encoder share: observe whole turns in bulk mode / bare", "bulk whole", "bare")]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--turns", type=int, default=320)
    ap.add_argument("--rounds", type=int, default=3, help="every pass once per round; medians are reported")
    ap.add_argument("--out", default="")
    args = ap.parse_args()
    turns = long_turns(args.turns)
    tokens = sum(count(t) for t in turns)
    by_session = [[text for t in turns[i:i + 8] for _, text in episode_items(
        Episode("", "u1", "s", "t", "assistant", "assistant", t, 0.0, 0, passage_tokens=PASSAGE_TOKENS))]
        for i in range(0, len(turns), 8)]
    passages = [text for texts in by_session for text in texts]
    bare_encoder = TimedEncoder(batch_size=32)
    whole_encoder = TimedEncoder(batch_size=32, max_tokens=512)
    encoder = TimedEncoder(batch_size=32)
    for e in (bare_encoder, whole_encoder, encoder):
        e(turns[:32])  # load the model outside the timing
    names = {"bare": "bare embedder (each turn cut at 256 tokens)",
             "bare passages": f"bare embedder on their {len(passages)} passages",
             "bare sessions": "bare embedder on the passages, one call per session",
             "bare whole": "bare embedder, whole turns, 512 window",
             "cold": "observe, cache cold",
             "whole": "observe whole turns (passage_tokens=0), cache cold",
             "bulk": "observe in bulk mode, cache cold",
             "bulk whole": "observe whole turns in bulk mode, cache cold",
             "warm": "observe, cache warm"}
    seconds: dict[str, list[float]] = {k: [] for k in names}
    forward_s: dict[str, list[float]] = {k: [] for k in names}  # seconds of forward passes in each pass
    for r in range(args.rounds):
        with tempfile.TemporaryDirectory() as tmp:
            cache = Path(tmp)
            for key, fn in (("bare", lambda: bare_encoder(turns)),
                            ("bare passages", lambda: bare_encoder(passages)),
                            ("bare sessions", lambda: [bare_encoder(texts) for texts in by_session]),
                            ("bare whole", lambda: whole_encoder(turns)),
                            ("cold", lambda: observe(turns, cached(encoder, cache / "e.sqlite3"))),
                            ("warm", lambda: observe(turns, cached(encoder, cache / "e.sqlite3"))),
                            ("whole", lambda: observe(turns, cached(encoder, cache / "whole.sqlite3"), passage_tokens=0)),
                            ("bulk", lambda: observe(turns, cached(encoder, cache / "bulk.sqlite3"), bulk=True)),
                            ("bulk whole", lambda: observe(turns, cached(encoder, cache / "bulk-whole.sqlite3"),
                                                           passage_tokens=0, bulk=True))):
                total, forward = timed(fn, whole_encoder if key == "bare whole" else
                                       bare_encoder if key.startswith("bare") else encoder)
                seconds[key].append(total)
                forward_s[key].append(forward)
        print(f"round {r + 1}/{args.rounds}: " + ", ".join(f"{k} {v[-1]:.2f} s" for k, v in seconds.items()), flush=True)
    share = {k: [e / t for e, t in zip(forward_s[k], v)] for k, v in seconds.items()}  # the encoder's, per round
    table = pd.DataFrame([{"run": names[k], "seconds (median)": round(statistics.median(v), 2),
                           "seconds (each round)": " / ".join(f"{x:.2f}" for x in v),
                           "turns_per_s": round(len(turns) / statistics.median(v), 1),
                           "tokens_per_s": round(tokens / statistics.median(v)),
                           "encoder share (median)": round(statistics.median(share[k]), 3)}
                          for k, v in seconds.items()])
    ratios = pd.DataFrame([{"ratio": name, "median": round(statistics.median(per), 2),
                            "each round": " / ".join(f"{x:.2f}" for x in per)}
                           for pairs, values in ((RATIOS, seconds), (SHARES, share)) for name, a, b in pairs
                           for per in [[x / y for x, y in zip(values[a], values[b])]]])
    print(f"\n{len(turns)} turns, {tokens} tokens (cl100k), mean {tokens / len(turns):.0f}; {args.rounds} rounds")
    print(table.to_string(index=False))
    print("\nratios of time, within each round (higher: observe is nearer the bare embedder); the encoder share"
          " ratios take\nthe machine's drift between the two passes out (each share is measured within its pass)")
    print(ratios.to_string(index=False))
    if args.out:
        out = Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
        table.to_csv(out / "ingest.csv", index=False)
        ratios.to_csv(out / "ratios.csv", index=False)
        (out / "ingest.json").write_text(json.dumps({"turns": len(turns), "tokens": tokens, "rounds": args.rounds,
                                                     "seconds": seconds, "encoder_seconds": forward_s}))


if __name__ == "__main__":
    main()
