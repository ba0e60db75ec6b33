"""Scale benchmark of the paths users call: ``Memory.context`` (read) and ``Memory.observe`` (write), each
beside the bare embed + Chroma call on the same data, interleaved in one run; ``Memory.search`` beside
``FactStore.search``; warm, cold and just-opened-session reads; peak RSS and size on disk.

Each size runs in a fresh process, so its peak RSS is its own. The corpus is loaded with each distinct
sentence embedded once (the ``#n`` suffix that makes every item distinct is left out of the vector, not out
of the stored text or the lexical index); every query and every observed turn is embedded for real.
"""

from __future__ import annotations

import itertools
import multiprocessing
import random
import re
import shutil
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np
import pandas as pd

from ..models.embed import MiniLMEmbedder, shared_embedder
from ..store import FactStore
from ..store.chroma import MAX_USERS
from ..read.budget import episode_depth, profile_rows, profile_share
from .stats import ratio_interval
from ..memory import Memory
from ..store.server import ChromaServer
from ..types import Episode, Fact

SUBJECTS = ["User", "User's team", "User's sister", "User's manager", "User's client"]
VERBS = ["prefers", "uses", "dislikes", "works with", "is learning", "recommends", "avoids", "maintains"]
OBJECTS = ["metric units", "Python", "Rust", "Kubernetes", "PostgreSQL", "dark mode", "vim", "early meetings",
           "green tea", "remote work", "TypeScript", "Docker", "cycling to work", "long documents", "unit tests",
           "the Berlin office", "spreadsheets", "short answers", "code reviews", "Linux laptops"]
QUERIES = ["Which units should I use?", "What language does the team write?", "What does the user avoid?",
           "Which database do we run?", "How does the user like answers?", "What editor is preferred?"]
CHAT = ["I went {o} with my sister last weekend.", "Honestly {o} is the best part of my week.",
        "We talked about {o} for hours yesterday.", "My manager keeps mentioning {o}.", "Haha, {o} again?"]
TURNS = ["I prefer {o} these days.", "We moved from {o} to {p} last month.", "I don't use {o} anymore.",
         "My sister recommends {o}.", "Honestly I could talk about {o} all day."]
_SUFFIX = re.compile(r" #\d+$")
SINCE = 1.7e9  # when the synthetic facts and turns begin (14 November 2023), a second or a minute apart


def synthetic_facts(user_id: str, n: int, rng: random.Random, numbered: bool = True) -> list[Fact]:
    """``n`` varied, deterministic facts for one user. ``numbered``: each text made distinct by a ``#n`` (any
    ``n``); otherwise ``n`` distinct sentences (at most 800)."""
    if numbered:
        texts = [f"{rng.choice(SUBJECTS)} {rng.choice(VERBS)} {rng.choice(OBJECTS)} #{i}" for i in range(n)]
    else:
        texts = [f"{s} {v} {o}." for s, v, o in rng.sample([(s, v, o) for s in SUBJECTS for v in VERBS for o in OBJECTS], n)]
    return [Fact(id=f"{user_id}-{i}", user_id=user_id, importance=round(rng.random(), 2), created_at=SINCE + i,
                 valid_from=SINCE + i, text=text) for i, text in enumerate(texts)]


def synthetic_episodes(user_id: str, n: int, rng: random.Random) -> list[Episode]:
    """``n`` short chat turns for one user, ten per session, two speakers."""
    return [Episode("", user_id, f"s{i // 10}", f"s{i // 10}:{i % 10}", ("Ana", "Ben")[i % 2],
                    ("user", "assistant")[i % 2], rng.choice(CHAT).format(o=rng.choice(OBJECTS)) + f" #{i}",
                    SINCE + 60 * i, 12) for i in range(n)]


def short_sentences(n: int, rng: random.Random) -> list[str]:
    """``n`` short fact-like sentences (5-10 tokens), for embedder throughput."""
    return [f"{rng.choice(SUBJECTS)} {rng.choice(VERBS)} {rng.choice(OBJECTS)}." for _ in range(n)]


class PooledEmbedder(MiniLMEmbedder):
    """The shared MiniLM, remembering the vector of each distinct synthetic sentence (its ``#n`` suffix
    left out) so that loading a large corpus does not re-embed the same sentence; other texts go to the model."""

    def __init__(self) -> None:
        super().__init__()
        self.inner, self.memo = shared_embedder(), {}

    def __call__(self, input: Any) -> Any:
        texts = [input] if isinstance(input, str) else list(input)
        bases = [_SUFFIX.sub("", t) if _SUFFIX.search(t) else None for t in texts]
        missing = sorted({b for b in bases if b is not None and b not in self.memo})
        if missing:
            self.memo.update(zip(missing, self.inner(missing)))
        plain = [t for t, b in zip(texts, bases) if b is None]
        fresh = iter(self.inner(plain) if plain else [])
        return [self.memo[b] if b is not None else next(fresh) for b in bases]


def _pct(xs: Sequence[float]) -> tuple[float, float]:
    return (float(np.percentile(xs, 50)), float(np.percentile(xs, 95))) if xs else (float("nan"), float("nan"))


def _timed(calls: Sequence[tuple[list[float], Callable[[], Any]]], rng: random.Random) -> None:
    """Run the calls in random order, appending each one's milliseconds to its sink."""
    calls = list(calls)
    rng.shuffle(calls)
    for sink, call in calls:
        t0 = time.perf_counter()
        call()
        sink.append((time.perf_counter() - t0) * 1000)


def _open(backend: str, folder: Path, max_users: int, server: str | None) -> FactStore:
    if backend == "postgres":
        return FactStore.from_url(server, PooledEmbedder(), namespace="scale")
    if backend == "http":
        return FactStore.from_url(f"chroma://{server}", PooledEmbedder(), namespace="scale",
                                  records=folder / "records.sqlite3")
    return FactStore.from_url(f"file://{folder}", PooledEmbedder(), namespace="scale", max_users=max_users)


def measure(users: int, items_per_user: int, backend: str = "persistent", queries: int = 200,
            episode_share: float = 0.5, budget: int = 400, max_users: int = MAX_USERS, seed: int = 0,
            path: str | None = None, server: str | None = None) -> dict[str, Any]:
    """One size: ``users`` users with ``items_per_user`` items each (``episode_share`` of them past turns,
    the rest facts), in a fresh store (on disk, or on the ``chroma run`` server at ``server`` = "host:port")."""
    rng = random.Random(seed)
    folder = Path(path or tempfile.mkdtemp(prefix=f"memkit-scale-{users}x{items_per_user}-"))
    ids = [f"u{i:05d}" for i in range(users)]
    load_s = _load(_open(backend, folder, max_users, server), ids, items_per_user, episode_share, rng)

    # a new process's view: nothing loaded yet
    store = _open(backend, folder, max_users, server)
    memory = Memory(store=store)
    n = min(queries, users)
    order = rng.sample(ids, users)
    cold_users, opened_users = order[:max(1, n // 2)], order[max(1, n // 2):n] or order[:1]
    first = _first_reads(memory, rng, cold_users, opened_users, budget)
    # warm: each call beside its bare counterpart on the same collection, in random order, for the users read
    # last (theirs are the indexes loaded under the cap), each read once more untimed first, in the session it
    # already has (a new session would start a background load during the timing)
    sessions = {**{u: f"cold-{u}" for u in cold_users}, **{u: f"open-{u}" for u in opened_users}}
    warm_users = list(dict.fromkeys(cold_users + opened_users))[-max(1, min(n, max_users)):]
    warm = _warm_reads(memory, rng, warm_users, sessions, queries, budget)
    writes = _writes(memory, rng, warm_users, sessions, queries)
    memory.close()
    disk = sum(f.stat().st_size for f in folder.rglob("*") if f.is_file())
    if path is None:  # a temporary store: a 10,000-user size leaves gigabytes otherwise
        shutil.rmtree(folder, ignore_errors=True)
    return {"backend": backend, "users": users, "items_per_user": items_per_user, "seed": seed,
            "items": users * items_per_user, "max_users": max_users, "load_items_per_s": users * items_per_user / load_s,
            **_row(first, warm, writes), "peak_rss_mb": _peak_rss_mb(), "disk_mb": disk / 2**20}


def _load(store: FactStore, ids: Sequence[str], items_per_user: int, episode_share: float,
          rng: random.Random) -> float:
    """Each user's synthetic facts and past turns written and embedded, then the store closed: the seconds."""
    n_eps = int(items_per_user * episode_share)
    n_facts = items_per_user - n_eps
    start = time.perf_counter()
    for uid in ids:
        store.upsert(uid, synthetic_facts(uid, n_facts, rng))
        for e in synthetic_episodes(uid, n_eps, rng):
            store.add_episode(uid, e)
        store.embed_pending(uid)
    load_s = time.perf_counter() - start
    store.close()
    return load_s


def _first_reads(memory: Memory, rng: random.Random, cold_users: Sequence[str], opened_users: Sequence[str],
                 budget: int) -> dict[str, Any]:
    """A session's first context: opened by this very call (cold), or 100 ms after the session opened, beside
    a read after the same 100 ms idle of a user already loaded."""
    cold, opened, idle, noted = [], [], [], 0
    for uid in cold_users:  # the first context of a session that opened with this very call
        t0 = time.perf_counter()
        memory.context(uid, f"cold-{uid}", rng.choice(QUERIES), budget)
        cold.append((time.perf_counter() - t0) * 1000)
    for uid in opened_users:  # the session opened 100 ms before its first context
        memory.session(uid, f"open-{uid}")
        time.sleep(0.1)
        t0 = time.perf_counter()
        ctx = memory.context(uid, f"open-{uid}", rng.choice(QUERIES), budget)
        opened.append((time.perf_counter() - t0) * 1000)
        noted += bool(ctx.notes)
        # the same 100 ms of idle before a read of a user already loaded: a process that sat idle reads
        # slower (CPU caches, the embedder's threads asleep) whatever was loaded, so this is what "opened"
        # must match for the session load to be finished
        time.sleep(0.1)
        t0 = time.perf_counter()
        memory.context(uid, f"open-{uid}", rng.choice(QUERIES), budget)
        idle.append((time.perf_counter() - t0) * 1000)
    return {"cold": cold, "opened": opened, "idle": idle, "noted": noted}


def _warm_reads(memory: Memory, rng: random.Random, warm_users: Sequence[str], sessions: dict[str, str],
                queries: int, budget: int) -> dict[str, list[float]]:
    """Each read call beside its bare counterpart, in random order: a context, the vector index's own query,
    the index calls a context makes, ``Memory.search`` and ``FactStore.search``."""
    store = memory.store
    for uid in warm_users:
        memory.context(uid, sessions[uid], QUERIES[0], budget)
    context, bare_read, index_calls, msearch, fsearch = [], [], [], [], []
    o = memory.read_options
    depth = o.recall.depth
    profile_limit = profile_rows(profile_share(o.profile_tokens, budget), o.k)
    for _ in range(queries):
        uid, q = rng.choice(warm_users), rng.choice(QUERIES)
        owner = store.owner(uid)

        def bare() -> None:  # the vector index's own query: 5 nearest ids and distances of the user
            store.vectors.nearest(owner, uid, store.embed_query(q), 5)

        def indexes() -> None:
            # the index calls a context read makes (the embedding, one dense query for both parts, a lexical
            # query per part, the profile rows), without fusing, fetching or packing: the floor of this design
            vector = store.embed_query(q)
            depths = {"facts": depth, "episodes": episode_depth(depth, budget)}
            store.embed_pending(uid)  # once, as a read does, and then the searches do not look again
            store.dense(uid, vector, depths, caught_up=True)
            for part, k in depths.items():
                store.lexical(uid, part, q, k, caught_up=True)
            store.profile(uid, limit=profile_limit)

        _timed([(context, lambda: memory.context(uid, sessions[uid], q, budget)), (bare_read, bare),
                (index_calls, indexes), (msearch, lambda: memory.search(uid, q)),
                (fsearch, lambda: store.search(uid, q))], rng)
    return {"context": context, "bare_read": bare_read, "index_calls": index_calls, "msearch": msearch,
            "fsearch": fsearch}


def _writes(memory: Memory, rng: random.Random, warm_users: Sequence[str], sessions: dict[str, str],
            queries: int) -> dict[str, list[float]]:
    """The write path: an observed user turn (episode, extraction, planning, upsert) beside a bare embed + add."""
    store = memory.store
    observe, bare_write = [], []
    for i in range(min(queries, 100)):
        uid = rng.choice(warm_users)
        text = rng.choice(TURNS).format(o=rng.choice(OBJECTS), p=rng.choice(OBJECTS))
        _timed([(observe, lambda: memory.observe(uid, sessions[uid], "user", text)),
                (bare_write, lambda: store.vectors.put("scale-bare", "scale-bare", "episodes", [f"w{i}"],
                                                       [store.embed_query(text)]))], rng)
    return {"observe": observe, "bare_write": bare_write}


def _row(first: dict[str, Any], warm: dict[str, list[float]], writes: dict[str, list[float]]) -> dict[str, Any]:
    """The timings' percentiles and ratios, as ``scale.csv`` names them."""
    (c50, c95), (k50, k95), (o50, o95), (i50, _) = (_pct(warm["context"]), _pct(first["cold"]),
                                                    _pct(first["opened"]), _pct(first["idle"]))
    (b50, b95), (m50, _), (f50, _), (n50, n95) = (_pct(warm["bare_read"]), _pct(warm["msearch"]),
                                                  _pct(warm["fsearch"]), _pct(warm["index_calls"]))
    (w50, w95), (x50, x95) = _pct(writes["observe"]), _pct(writes["bare_write"])
    ratio = ratio_interval(warm["context"], warm["bare_read"])  # the reads' own spread: each round timed both
    return {"context_p50_ms": c50, "context_p95_ms": c95, "bare_read_p50_ms": b50, "bare_read_p95_ms": b95,
            "context_vs_bare_p95": c95 / b95, "context_vs_bare_p95_low": ratio[0], "context_vs_bare_p95_high": ratio[1],
            "index_calls_p50_ms": n50, "index_calls_p95_ms": n95,
            "index_calls_vs_bare_p95": n95 / b95, "cold_context_p50_ms": k50, "cold_context_p95_ms": k95,
            "opened_100ms_p50_ms": o50, "opened_100ms_p95_ms": o95, "opened_vs_warm_p50": o50 / c50,
            "idle_warm_p50_ms": i50, "opened_vs_idle_warm_p50": o50 / i50,
            "opened_still_loading": first["noted"], "memory_search_p50_ms": m50, "store_search_p50_ms": f50,
            "search_ratio_p50": m50 / f50, "observe_p50_ms": w50, "observe_p95_ms": w95,
            "bare_write_p50_ms": x50, "bare_write_p95_ms": x95}


def _peak_rss_mb() -> float:
    try:
        import resource

        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    except ImportError:
        return float("nan")


def parse_size(text: str) -> tuple[int, int]:
    """``"1000x100"`` -> (1000 users, 100 items per user)."""
    users, _, items = text.partition("x")
    return int(users), int(items)


def run(sizes: Sequence[str], backends: Sequence[str] = ("persistent",), queries: int = 200,
        episode_share: float = 0.5, max_users: int = MAX_USERS, echo: Callable[[str], None] = print,
        partial: Path | None = None, seeds: Sequence[int] = (0,)) -> pd.DataFrame:
    """Every size on every backend with every seed (the draw of the synthetic items and of the questions' order,
    the same for every size), each in a fresh process (one server per http or postgres row); one row each.
    With ``partial``, the rows so far are written there as CSV after each size (a long sweep keeps what it did)."""
    rows = []
    spawn = multiprocessing.get_context("spawn")
    for backend, size, seed in itertools.product(backends, sizes, seeds):
        users, items = parse_size(size)
        server = ChromaServer(max_users=max_users) if backend == "http" else None
        pg, pg_folder = None, None
        try:
            if server:
                server.start()
                where = f"127.0.0.1:{server.port}"
            elif backend == "postgres":  # a real PostgreSQL with pgvector from the pgserver wheel ([bench])
                import pgserver

                pg_folder = tempfile.mkdtemp(prefix="memkit-scale-pg-")
                pg = pgserver.get_server(pg_folder, cleanup_mode="stop")
                where = pg.get_uri()
            else:
                where = None
            with ProcessPoolExecutor(1, mp_context=spawn) as pool:
                row = pool.submit(measure, users, items, backend, queries, episode_share, 400, max_users, seed,
                                  None, where).result()
            if server:
                row["server_peak_rss_mb"] = server.peak_rss_mb()
            echo(f"{backend} {size} (seed {seed}): context p95 {row['context_p95_ms']:.1f} ms, "
                 f"peak RSS {row['peak_rss_mb']:.0f} MB")
        except Exception as e:  # one size failing (a server error at scale) is a result too: keep the others
            row = {"backend": backend, "users": users, "items_per_user": items, "seed": seed,
                   "error": f"{type(e).__name__}: {e}"}
            echo(f"{backend} {size} (seed {seed}): failed: {row['error']}")
        finally:
            if server:
                server.stop()
                shutil.rmtree(server.path.parent, ignore_errors=True)  # its temporary folder
            if pg is not None:
                pg.cleanup()
            if pg_folder:
                shutil.rmtree(pg_folder, ignore_errors=True)
        rows.append(row)
        if partial is not None:
            pd.DataFrame(rows).to_csv(partial, index=False)
    return pd.DataFrame(rows)

