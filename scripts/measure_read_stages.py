"""Where a warm read's time goes: ``Memory.context`` at 400 tokens on the data of ``memkit bench-scale``, each
step timed on its own, beside the bare embed + 5-nearest query that ``bench-scale`` compares it with.

    python scripts/measure_read_stages.py --size 64x100 --size 1x10000 --reads 1000 --out docs/results/read-stages

For each size (users x items, half of them past turns): the store is filled and reopened as ``bench-scale``
does it, every user read once untimed, then ``--reads`` rounds of one context and one bare query, in random
order, for a random user of at most 64 (the loaded indexes) and one of ``bench-scale``'s questions. The steps are
the store's calls a read makes (embedding the question, the one dense query, the lexical queries, catching up
with other sessions' turns, reading episode records and fact rows) and packing; each step's time leaves out the
steps it calls (packing reads the records of the turns it takes), and "the rest" is what the read spends outside
them: checking its arguments, the budget plan, fusion, who said what, choosing the facts. Means, not
percentiles, so the steps add up to the read. Writes ``read-stages.csv`` and ``read-stages.cmd``. Not a test: a
timing, run it alone on the machine.
"""

from __future__ import annotations

import argparse
import random
import shutil
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any, Callable

import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from memkit import FactStore, Memory  # noqa: E402
from memkit.eval.scale import QUERIES, PooledEmbedder, parse_size, synthetic_episodes, synthetic_facts  # noqa: E402
from memkit.read import assemble  # noqa: E402
from memkit.store.chroma import MAX_USERS  # noqa: E402

BUDGET = 400  # bench-scale's
STEPS = [("embed_query", "embedding the question"), ("dense", "the dense query (facts and episodes at once)"),
         ("lexical", "lexical queries"), ("embed_pending", "other sessions' new turns (a check when there are none)"),
         ("episodes", "episode records (who said what, the turns packed)"), ("profile", "fact rows")]
PACKING = "packing (repeats, speaker runs, token accounting; diversity when asked for)"


class Steps:
    """Exclusive time per step: a call's time less the time of the wrapped calls made inside it."""

    def __init__(self) -> None:
        self.seconds: Counter[str] = Counter()
        self.calls: Counter[str] = Counter()
        self._inner: list[float] = []

    def wrap(self, owner: Any, attr: str, step: str) -> Callable[[], None]:
        """Time ``owner.attr`` as ``step``; returns what puts the original back."""
        f = getattr(owner, attr)

        def timed(*args: Any, **kwargs: Any) -> Any:
            self._inner.append(0.0)
            t0 = time.perf_counter()
            try:
                return f(*args, **kwargs)
            finally:
                spent = time.perf_counter() - t0
                self.seconds[step] += spent - self._inner.pop()
                self.calls[step] += 1
                if self._inner:
                    self._inner[-1] += spent

        setattr(owner, attr, timed)
        return lambda: setattr(owner, attr, f)


def measure(users: int, items: int, reads: int, seed: int = 0) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    folder = Path(tempfile.mkdtemp(prefix=f"memkit-stages-{users}x{items}-"))
    store = FactStore.from_url(f"file://{folder}", PooledEmbedder(), namespace="scale", max_users=MAX_USERS)
    ids = [f"u{i:05d}" for i in range(users)]
    for uid in ids:
        store.upsert(uid, synthetic_facts(uid, items - items // 2, rng))
        for e in synthetic_episodes(uid, items // 2, rng):
            store.add_episode(uid, e)
        store.embed_pending(uid)
    store.close()
    store = FactStore.from_url(f"file://{folder}", PooledEmbedder(), namespace="scale", max_users=MAX_USERS)
    memory = Memory(store=store)
    readers = rng.sample(ids, min(users, MAX_USERS))
    for uid in readers:
        memory.context(uid, f"s-{uid}", QUERIES[0], BUDGET)
    embed, nearest = store.embed_query, store.vectors.nearest  # the bare read's, never timed as steps

    steps = Steps()
    undo = [steps.wrap(store, attr, label) for attr, label in STEPS] + [steps.wrap(assemble, "pack_memory", PACKING)]
    context_s = bare_s = 0.0
    try:
        for _ in range(reads):
            uid, q = rng.choice(readers), rng.choice(QUERIES)
            owner = store.owner(uid)
            calls = [("context", lambda: memory.context(uid, f"s-{uid}", q, BUDGET)),
                     ("bare", lambda: nearest(owner, uid, embed(q), 5))]
            rng.shuffle(calls)
            for name, call in calls:
                t0 = time.perf_counter()
                call()
                if name == "context":
                    context_s += time.perf_counter() - t0
                else:
                    bare_s += time.perf_counter() - t0
    finally:
        for put_back in undo:
            put_back()
        memory.close()
        shutil.rmtree(folder, ignore_errors=True)  # as bench-scale does: the store was only for this timing

    size = f"{users}x{items}"

    def ms(seconds: float) -> float:
        return round(seconds / reads * 1000, 3)

    rows = [{"size": size, "step": label, "ms per read": ms(steps.seconds[label]),
             "calls per read": round(steps.calls[label] / reads, 2),
             "share of the read": f"{steps.seconds[label] / context_s:.0%}"} for label in [s for _, s in STEPS] + [PACKING]]
    rest = context_s - sum(steps.seconds.values())
    rows.append({"size": size, "step": "the rest of the read", "ms per read": ms(rest), "calls per read": "",
                 "share of the read": f"{rest / context_s:.0%}"})
    rows.append({"size": size, "step": "**the read (Memory.context)**", "ms per read": ms(context_s), "calls per read": 1,
                 "share of the read": "100%"})
    rows.append({"size": size, "step": "the bare read (embed + 5 nearest)", "ms per read": ms(bare_s),
                 "calls per read": 1, "share of the read": f"{bare_s / context_s:.0%}"})
    return rows


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--size", action="append", default=None, help="USERSxITEMS (repeat); default 64x100")
    ap.add_argument("--reads", type=int, default=1000)
    ap.add_argument("--out", default="results/read-stages")
    args = ap.parse_args()
    rows = []
    for text in args.size or ["64x100"]:
        users, items = parse_size(text)
        rows += measure(users, items, args.reads)
        print(pd.DataFrame(rows[-len(STEPS) - 4:]).to_string(index=False))
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    pd.DataFrame(rows).to_csv(out / "read-stages.csv", index=False)
    sizes = " ".join(f"--size {s}" for s in args.size or ["64x100"])
    (out / "read-stages.cmd").write_text(f"python scripts/measure_read_stages.py {sizes} --reads {args.reads} "
                                         f"--out {args.out}\n", "utf-8")
    print(f"wrote {out / 'read-stages.csv'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
