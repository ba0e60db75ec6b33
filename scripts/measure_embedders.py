"""What each offline embedder costs: the passages of long assistant turns and short chat lines embedded as a
store embeds them, and questions embedded one at a time as a read does.

    python scripts/measure_embedders.py --out docs/results/embedders

For every registered embedder (``minilm``, ``e5``): a warm-up call, then the passages (``passages.PASSAGE_TOKENS``)
of ``--turns`` assistant turns of 250-350 tokens from the generated assistant suite (seeds 100+, as
scripts/measure_ingest.py takes them) in one call, the same number of short user lines in one call, and
``--queries`` questions one call each; each pass ``--rounds`` times, the median kept; and ``CHINESE``, eight
questions in Chinese, each against three lines, one of which answers it. Writes ``embedders.csv``
(passages/s, lines/s, query p50 ms, Chinese questions whose line ranks first, the process's peak RSS) and
``embedders.cmd``. Not a
test: run it alone on the machine, it is a timing. Each embedder runs in a process of its own, so its RSS is
its own.
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))


def texts(turns: int) -> tuple[list[str], list[str], list[str]]:
    """Passages of long assistant turns, short user lines, and questions, from the generated assistant suite."""
    from measure_ingest import long_turns

    from memkit.eval.data import generate
    from memkit.store.passages import PASSAGE_TOKENS
    from memkit.store.base import episode_items
    from memkit.types import Episode

    passages = [text for i, turn in enumerate(long_turns(turns))
                for _, text in episode_items(Episode(f"e{i}", "u", "s", f"t{i}", "assistant", "assistant", turn,
                                                     0.0, passage_tokens=PASSAGE_TOKENS))]
    lines, questions = [], []
    for conv in generate("assistant", 100):
        for s in conv["sessions"]:
            lines += [t["content"] for t in s["turns"] if t["role"] == "user"]
        questions += [p["question"] for p in conv.get("probes", [])]
    return passages, list(dict.fromkeys(lines))[:turns], list(dict.fromkeys(questions))


# Questions in Chinese, each with three stored lines and the index of the one that answers it (written for this
# script): an embedder that cannot read Chinese finds the right line by chance, one time in three
CHINESE = [("她在哪里工作？", ["我在多伦多做数据科学家。", "我的猫叫汤姆。", "我喜欢吃辣的川菜。"], 0),
           ("他喜欢吃什么？", ["我在多伦多做数据科学家。", "我的猫叫汤姆。", "我喜欢吃辣的川菜。"], 2),
           ("宠物叫什么名字？", ["我在多伦多做数据科学家。", "我的猫叫汤姆。", "我喜欢吃辣的川菜。"], 1),
           ("用什么单位？", ["我更喜欢公制单位。", "我的猫叫汤姆。", "我住在北京。"], 0),
           ("住在哪个城市？", ["我更喜欢公制单位。", "我的猫叫汤姆。", "我住在北京。"], 2),
           ("我妹妹在学什么乐器？", ["我妹妹在学大提琴。", "我每天跑五公里。", "我用 Python 写代码。"], 0),
           ("我平时锻炼吗？", ["我妹妹在学大提琴。", "我每天跑五公里。", "我用 Python 写代码。"], 1),
           ("我用哪种编程语言？", ["我妹妹在学大提琴。", "我每天跑五公里。", "我用 Python 写代码。"], 2)]


def chinese_top1(embedder) -> int:
    """How many of the ``CHINESE`` questions find their line first."""
    import numpy as np

    from memkit.models.embed import embed_queries

    right = 0
    for question, lines, gold in CHINESE:
        stored = np.array(embedder(lines))
        right += int(np.argmax(stored @ np.array(embed_queries(embedder, [question]))[0]) == gold)
    return right


def one(name: str, turns: int, queries: int, rounds: int) -> dict:
    """The row of one embedder, measured in this process."""
    from memkit.models.embed import embed_queries, shared_embedder

    passages, lines, questions = texts(turns)
    questions = (questions * (queries // max(len(questions), 1) + 1))[:queries]
    embedder = shared_embedder(name)
    embedder(passages[:4])
    embed_queries(embedder, questions[:2])
    timed: dict[str, list[float]] = {"passages": [], "lines": [], "query": []}
    for _ in range(rounds):
        start = time.perf_counter()
        embedder(passages)
        timed["passages"].append(time.perf_counter() - start)
        start = time.perf_counter()
        embedder(lines)
        timed["lines"].append(time.perf_counter() - start)
        each = []
        for q in questions:
            start = time.perf_counter()
            embed_queries(embedder, [q])
            each.append(time.perf_counter() - start)
        timed["query"].append(statistics.median(each))
    return {"embedder": name, "model": embedder.model_id, "passages": len(passages),
            "passages_per_s": round(len(passages) / statistics.median(timed["passages"]), 1),
            "lines": len(lines), "lines_per_s": round(len(lines) / statistics.median(timed["lines"]), 1),
            "query_p50_ms": round(1000 * statistics.median(timed["query"]), 1),
            "chinese_top1": f"{chinese_top1(embedder)} of {len(CHINESE)}",
            "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--turns", type=int, default=96, help="long assistant turns (their passages) and user lines")
    ap.add_argument("--queries", type=int, default=100, help="questions, one call each")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--only", default=None, help=argparse.SUPPRESS)  # one embedder, in a child process
    ap.add_argument("--out", default=None, help="folder for embedders.csv and embedders.cmd")
    args = ap.parse_args()
    if args.only:
        print(json.dumps(one(args.only, args.turns, args.queries, args.rounds)))
        return 0
    import pandas as pd

    from memkit import registry

    rows = []
    for name in registry.names("embedder"):
        out = subprocess.run([sys.executable, __file__, "--only", name, "--turns", str(args.turns), "--queries",
                              str(args.queries), "--rounds", str(args.rounds)], capture_output=True, text=True,
                             check=True)
        rows.append(json.loads(out.stdout.strip().splitlines()[-1]))
        print(rows[-1], flush=True)
    table = pd.DataFrame(rows)
    print(table.to_string(index=False))
    if args.out:
        folder = Path(args.out)
        folder.mkdir(parents=True, exist_ok=True)
        table.to_csv(folder / "embedders.csv", index=False)
        (folder / "embedders.cmd").write_text("python scripts/measure_embedders.py " + " ".join(sys.argv[1:]) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
