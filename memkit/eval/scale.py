"""Scale benchmark: write throughput and read latency of FactStore as facts grow, beside the bare embed + Chroma cost."""

from __future__ import annotations

import random
import tempfile
import time
from typing import Any, Sequence

import numpy as np
import pandas as pd

from ..facts import FactStore, _meta
from ..memory import Memory
from ..types import Episode, Fact

SUBJECTS = ["User", "User's team", "User's sister", "User's manager", "User's client"]
VERBS = ["prefers", "uses", "dislikes", "works with", "is learning", "recommends", "avoids", "maintains"]
OBJECTS = ["metric units", "Python", "Rust", "Kubernetes", "PostgreSQL", "dark mode", "vim", "early meetings",
           "green tea", "remote work", "TypeScript", "Docker", "cycling to work", "long documents", "unit tests",
           "the Berlin office", "spreadsheets", "short answers", "code reviews", "Linux laptops"]
QUERIES = ["Which units should I use?", "What language does the team write?", "What does the user avoid?",
           "Which database do we run?", "How does the user like answers?", "What editor is preferred?"]


def synthetic_facts(user_id: str, n: int, rng: random.Random) -> list[Fact]:
    """``n`` varied, deterministic facts for one user."""
    out = []
    for i in range(n):
        text = f"{rng.choice(SUBJECTS)} {rng.choice(VERBS)} {rng.choice(OBJECTS)} (note {i})."
        out.append(Fact(id=f"{user_id}-{i}", user_id=user_id, text=text, importance=round(rng.random(), 2),
                        created_at=1.0 + i, valid_from=1.0 + i))
    return out


CHAT = ["I went {o} with my sister last weekend.", "Honestly {o} is the best part of my week.",
        "We talked about {o} for hours yesterday.", "My manager keeps mentioning {o}.", "Haha, {o} again?"]


def synthetic_episodes(user_id: str, n: int, rng: random.Random) -> list[Episode]:
    """``n`` short chat turns for one user, ten per session, two speakers."""
    return [Episode("", user_id, f"s{i // 10}", f"s{i // 10}:{i % 10}", ("Ana", "Ben")[i % 2], ("user", "assistant")[i % 2],
                    rng.choice(CHAT).format(o=rng.choice(OBJECTS)) + f" ({i})", 1.7e9 + 60 * i, 12) for i in range(n)]


def short_sentences(n: int, rng: random.Random) -> list[str]:
    """``n`` short fact-like sentences (5-10 tokens), for embedder throughput."""
    return [f"{rng.choice(SUBJECTS)} {rng.choice(VERBS)} {rng.choice(OBJECTS)}." for _ in range(n)]


def _pct(xs: Sequence[float]) -> tuple[float, float]:
    return float(np.percentile(xs, 50)), float(np.percentile(xs, 95))


def measure(total: int, users: int, queries: int = 200, bare_write_share: float = 0.05, seed: int = 0,
            path: str | None = None, progress: Any = None, episode_share: float = 0.0,
            budget: int = 400) -> dict[str, Any]:
    """One size: ``total`` items (facts, and episodes for ``episode_share`` of them) over ``users`` users
    in a fresh on-disk store.

    Reads are reported warm (the user's collections already loaded in this process; memkit and the bare
    embed + query interleaved in random order on the same collection) and cold (a user's first search).
    With episodes, the full read path users call (``Memory.context`` at ``budget`` tokens: hybrid recall
    over facts and episodes, packing) is timed too, warm and cold (a user's first context in the process).
    """
    rng = random.Random(seed)
    users = max(1, min(users, total))
    per_user = total // users
    n_eps = int(per_user * episode_share)
    n_facts = per_user - n_eps
    folder = path or tempfile.mkdtemp(prefix=f"memkit-scale-{total}-")
    store = FactStore.persistent(folder, namespace="scale")
    ids = [f"u{i:05d}" for i in range(users)]
    start = time.perf_counter()
    for uid in ids:
        store.upsert(uid, synthetic_facts(uid, n_facts, rng))
        for e in synthetic_episodes(uid, n_eps, rng):
            store.add_episode(uid, e)
        store.embed_pending(uid)
        if progress:
            progress.update(per_user)
    write_s = time.perf_counter() - start

    # bare write: the same embed + upsert (same metadata), straight to Chroma, on a sample of users
    bare_users = ids[: max(1, int(users * bare_write_share))]
    start = time.perf_counter()
    for uid in bare_users:
        facts = synthetic_facts(uid, per_user, rng)
        col = store.client.get_or_create_collection(f"bare-{uid}", embedding_function=None,
                                                    configuration={"hnsw": {"space": "cosine"}})
        col.upsert(ids=[f.id for f in facts], documents=[f.text for f in facts], metadatas=[_meta(f) for f in facts],
                   embeddings=[list(map(float, v)) for v in store.embedder([f.text for f in facts])])
    bare_write_s = time.perf_counter() - start
    bare_n = per_user * len(bare_users)

    # cold: the first search of a user in this process loads its index from disk
    sample = rng.sample(ids, min(queries, len(ids)))
    cold = []
    for uid in sample:
        t0 = time.perf_counter()
        store.search(uid, rng.choice(QUERIES), k=5, min_score=-1.0)
        cold.append((time.perf_counter() - t0) * 1000)

    # warm: memkit's search and the bare embed + query on the same collection, in random order
    ours, bare = [], []
    for _ in range(queries):
        uid, q = rng.choice(sample), rng.choice(QUERIES)
        col = store._open(uid, "facts", create=False)  # the very collection memkit searches

        def bare_query() -> None:
            vec = store.embedder([q])[0]
            col.query(query_embeddings=[list(map(float, vec))], n_results=15)

        calls = [(ours, lambda: store.search(uid, q, k=5, min_score=-1.0)), (bare, bare_query)]
        rng.shuffle(calls)
        for sink, call in calls:
            t0 = time.perf_counter()
            call()
            sink.append((time.perf_counter() - t0) * 1000)
    context: dict[str, float] = {}
    if n_eps:
        memory = Memory(store=store)
        rest = [u for u in ids if u not in set(sample)] or ids
        cold_ctx = []
        for uid in rng.sample(rest, min(queries, len(rest))):  # users not touched yet in this process
            t0 = time.perf_counter()
            memory.context(uid, f"bench-{uid}", rng.choice(QUERIES), budget)
            cold_ctx.append((time.perf_counter() - t0) * 1000)
        for uid in sample:  # warm up: each sampled user's collections loaded once, untimed
            memory.context(uid, f"bench-{uid}", rng.choice(QUERIES), budget)
        warm_ctx = []
        for _ in range(queries):
            uid, q = rng.choice(sample), rng.choice(QUERIES)
            t0 = time.perf_counter()
            memory.context(uid, f"bench-{uid}", q, budget)
            warm_ctx.append((time.perf_counter() - t0) * 1000)
        (w50, w95), (k50, k95) = _pct(warm_ctx), _pct(cold_ctx)
        context = {"context_p50_ms": w50, "context_p95_ms": w95, "cold_context_p50_ms": k50, "cold_context_p95_ms": k95}
    store.close()
    r50, r95 = _pct(ours)
    b50, b95 = _pct(bare)
    c50, c95 = _pct(cold)
    return {"items": per_user * users, "users": users, "facts_per_user": n_facts, "episodes_per_user": n_eps,
            "write_items_per_s": per_user * users / write_s, "bare_write_facts_per_s": bare_n / bare_write_s,
            "read_p50_ms": r50, "read_p95_ms": r95, "bare_read_p50_ms": b50, "bare_read_p95_ms": b95,
            "read_overhead_p50": r50 / b50, "read_overhead_p95": r95 / b95,
            "cold_read_p50_ms": c50, "cold_read_p95_ms": c95, **context, "rss_mb": _rss_mb()}


def _rss_mb() -> float:
    try:
        import resource

        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    except ImportError:
        return float("nan")


def run(sizes: Sequence[int], users: int, queries: int = 200, progress: bool = False,
        episode_share: float = 0.0) -> pd.DataFrame:
    """Every size in turn; one row each."""
    bar = None
    if progress:
        from tqdm.auto import tqdm

        bar = tqdm(total=sum(sizes), desc="facts written", unit="fact")
    rows = [measure(n, users, queries, seed=i, progress=bar, episode_share=episode_share) for i, n in enumerate(sizes)]
    if bar:
        bar.close()
    return pd.DataFrame(rows)
