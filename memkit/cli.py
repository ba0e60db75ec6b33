"""The ``memkit`` command: ``demo``, ``notebooks``, ``serve``, ``sweep``, and with the eval module ``bench``,
``bench-scale``, ``generate``."""

from __future__ import annotations

import argparse
import sys
from typing import Any, Sequence


def cmd_demo(args: argparse.Namespace) -> int:
    from .config import Settings
    from .lab.demo import play, render
    from .memory import Memory

    memory = Memory.from_settings(Settings.from_env())
    memory, friday, without = play(memory, budget=args.budget)
    print(render(memory, friday, without))
    return 0 if "metric" in friday.text.lower() else 1


def cmd_notebooks(args: argparse.Namespace) -> int:
    from .lab.notebooks_copy import copy_notebooks, trust

    written = copy_notebooks(args.dir, force=args.force)
    for path in written:
        print(f"wrote {path}")
    db = None if args.no_trust else trust(written, args.jupyter_data_dir)
    if db is not None:
        print(f"\nsigned {sum(p.suffix == '.ipynb' for p in written)} notebooks in {db}: JupyterLab run with that "
              f"Jupyter data folder ({db.parent}) shows their stored widgets on open. One run with another HOME or "
              f"JUPYTER_DATA_DIR does not see these signatures: run `jupyter trust {args.dir}/*.ipynb` there, or "
              f"this command again with --jupyter-data-dir.")
    print(f"\nopen them with: jupyter lab {args.dir}")
    return 0


def _interrupted(*_: object) -> None:
    """A signal handler that ends the command as Ctrl-C does (its ``finally`` blocks run)."""
    raise KeyboardInterrupt


def cmd_serve(args: argparse.Namespace) -> int:
    from .store.chroma import MAX_USERS
    from .store.server import ChromaServer, server_config

    args.max_users = MAX_USERS if args.max_users is None else args.max_users
    if args.print_config:
        print(server_config(args.path, args.port, args.host, args.max_users), end="")
        return 0
    import signal

    server = ChromaServer(args.path, args.port, args.host, args.max_users)
    print(f"chroma run {server.config} (data in {server.path}, log in {server.log}); Ctrl-C stops it")
    # SIGTERM (a service manager, `kill`) ends it as Ctrl-C does, so the finally below stops `chroma run` too
    signal.signal(signal.SIGTERM, _interrupted)
    try:
        server.start()  # inside the try: a signal while it starts stops the child as well
        return server.proc.wait()
    except KeyboardInterrupt:
        return 0
    finally:
        server.stop()


def cmd_llm_check(args: argparse.Namespace) -> int:
    from .config import Settings
    from .errors import ConfigError
    from .write.llm_check import check, report

    settings = Settings.from_env()
    chat = settings.chat_model()
    if chat is None:
        raise ConfigError("no chat model is configured: set MEMKIT_LLM_BASE_URL and MEMKIT_LLM_MODEL (memkit works "
                          "offline without them)")
    probes = check(chat)
    print(report(probes, f"{settings.llm.base_url or 'https://api.openai.com/v1'} model {settings.llm.model}"))
    return 0 if probes[0].ok else 1


def cmd_store(args: argparse.Namespace) -> int:
    """``memkit store check|repair PATH``: print what disagrees (check) or what was mended (repair); 0 when the
    store is sound (or was made so), 1 when it is not, with what cannot be mended named."""
    from pathlib import Path

    from .errors import StoreCorrupt
    from .models.embed import shared_embedder
    from .store import FactStore, backends, health

    folder, action = Path(args.path), args.store_command
    if not (folder / f"{args.namespace}.sqlite3").exists() and not (folder / "chroma.sqlite3").exists():
        print(f"no store at {folder} (no {args.namespace}.sqlite3, no chroma.sqlite3)")
        return 1
    def opened() -> FactStore:
        return FactStore(**backends.persistent(str(folder), shared_embedder(), args.namespace), verify=False)

    try:
        store = opened()
    except StoreCorrupt as e:
        if action == "check" or e.part != "vectors":
            print(f"cannot {action}: {e}")
            return 1
        print(f"set the damaged vector index aside in {health.set_aside(folder)}")
        store = opened()
    try:
        if action == "check":
            found = health.findings(store)
            print("\n".join(f"problem: {f}" for f in found)
                  or f"ok: records, event log, vectors and lexical index of {folder} agree")
            return 1 if found else 0
        print("\n".join(health.repair(store)) or "nothing to repair")
        return 0
    except StoreCorrupt as e:
        print(e)
        return 1
    finally:
        store.close()


def cmd_sweep(args: argparse.Namespace) -> int:
    import pandas as pd

    from .eval.sweep import parse_param, run_sweep

    params = dict(parse_param(p) for p in args.param)
    sweep = run_sweep(args.notebook, params, args.out, metric=args.metric, jobs=args.jobs, scheduler=args.scheduler)
    with pd.option_context("display.width", 200, "display.max_columns", 20):
        print(sweep.round(3).to_string(index=False))
    print(f"\nwrote {args.out}/sweep.csv, sweep.html and one executed notebook per run")
    return 0


def cmd_components(args: argparse.Namespace) -> int:
    """``memkit components``: every registered policy, extractor, summarizer, strategy and embedder (built-in
    and from installed plugins), with the module that registered it."""
    from .registry import listing

    for kind, found in listing().items():
        print(f"{kind}:")
        for name, module in found.items():
            print(f"  {name:<24} {module}")
    return 0


def cmd_mcp(args: argparse.Namespace) -> int:
    """``memkit mcp``: an MCP server over stdio (or streamable HTTP on loopback) until the client goes away."""
    from .integrations import mcp

    return mcp.run(args.store, "stdio" if args.http is None else "http", args.http or 0,
                   log=lambda line: print(line, file=sys.stderr))


def cmd_data(args: argparse.Namespace) -> int:
    """``memkit data list`` (every benchmark memkit loads and where to get it) and ``memkit data check PATH``
    (a download's layout and counts against the published releases: 0 when it is one, 1 when not)."""
    from .eval import catalog

    if args.data_command == "list":
        print(catalog.listing())
        return 0
    found = catalog.check(args.path, args.format)
    print(f"{args.path} as {found.format}: {found.conversations} conversations, {found.sessions} sessions, "
          f"{found.turns} turns, {found.questions} questions")
    if found.notes:
        print(f"  the loader counted: {found.notes}")
    for problem in found.problems:
        print(f"  problem: {problem}")
    print("  ok: a published release, as memkit reads it" if found.ok else "  not a whole published release")
    return 0 if found.ok else 1


def _add_data(sub: Any) -> None:
    from .eval.datasets import FORMATS

    data = sub.add_parser("data", help="the benchmark data memkit loads: where to get it, and a check of a download")
    data_sub = data.add_subparsers(dest="data_command", required=True, metavar="{list,check}",
                                   help="list: every data set, its source, licence and layout; check: a download")
    data_sub.add_parser("list", help="every data set memkit loads: what, where, licence, layout, size"
                        ).set_defaults(func=cmd_data)
    check = data_sub.add_parser("check", help="read a download as memkit bench would and compare its counts with the "
                                              "published releases; name what is wrong")
    check.add_argument("path", help="the downloaded file or folder (as memkit bench --data)")
    check.add_argument("--format", choices=FORMATS, default=None, help="its format (default: guessed from the path)")
    check.set_defaults(func=cmd_data)


def _add_mcp(sub: Any) -> None:
    mcp = sub.add_parser("mcp", help="serve memory to MCP clients: remember, recall, search_facts, profile, forget "
                                     "(pip install 'memkit-lab[mcp]')")
    mcp.add_argument("--store", default=None, metavar="URL|PATH",
                     help="file://FOLDER, postgresql://..., chroma://HOST:PORT or a folder (default: MEMKIT_STORE)")
    mcp.add_argument("--http", type=int, default=None, metavar="PORT",
                     help="serve streamable HTTP on 127.0.0.1:PORT instead of stdio")
    mcp.set_defaults(func=cmd_mcp)


def build_parser() -> argparse.ArgumentParser:
    """The ``memkit`` command line: every subcommand and option, each with its help."""
    from . import __version__

    parser = argparse.ArgumentParser(prog="memkit", description="Two-layer memory for agents, offline by default.")
    parser.add_argument("--version", action="version", version=f"memkit {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    demo = sub.add_parser("demo", help="play the Tuesday/Friday story and print both layers and Friday's context")
    demo.add_argument("--budget", type=int, default=400, help="context budget in tokens")
    demo.set_defaults(func=cmd_demo)
    sub.add_parser("components", help="list every registered component (built-in and from installed plugins)"
                   ).set_defaults(func=cmd_components)
    serve = sub.add_parser("serve", help="run Chroma's server (chroma run) on PATH with a bounded index cache")
    serve.add_argument("path", help="the Chroma folder (an on-disk store's folder works too)")
    serve.add_argument("--port", type=int, default=8000, help="port to listen on (default: %(default)s)")
    serve.add_argument("--host", default="127.0.0.1", help="listen address (default: loopback only)")
    serve.add_argument("--max-users", type=int, default=None, help="users whose indexes stay loaded (default 64)")
    serve.add_argument("--print-config", action="store_true", help="print the chroma run config and exit")
    serve.set_defaults(func=cmd_serve)
    sweep = sub.add_parser("sweep", help="run a notebook over a parameter grid (papermill) and collect its results")
    sweep.add_argument("notebook", help="e.g. notebooks/07_strategies.ipynb")
    sweep.add_argument("-p", "--param", action="append", default=[], metavar="NAME=V1,V2",
                       help="a parameter and its values; repeat for a grid; a JSON list value: NAME=[...]")
    sweep.add_argument("--metric", default=None, help="result column to plot (default: the first numeric one)")
    sweep.add_argument("--jobs", type=int, default=1, help="notebooks run at once in local processes (default: 1)")
    sweep.add_argument("--scheduler", default=None, metavar="tcp://HOST:PORT",
                       help="run the notebooks on this Dask scheduler's workers (pip install 'memkit-lab[distributed]'; "
                            "each worker needs memkit and the notebook folder at the same path)")
    sweep.add_argument("--out", required=True, help="folder for sweep.csv, sweep.html and the executed notebooks")
    sweep.set_defaults(func=cmd_sweep)
    llm = sub.add_parser("llm", help="the configured chat model (MEMKIT_LLM_*)")
    llm_sub = llm.add_subparsers(dest="llm_command", required=True, metavar="{check}", help="check: probe the endpoint")
    check = llm_sub.add_parser("check", help="ask the endpoint what memkit needs (reachable, structured output, "
                                             "JSON mode, a sample extraction), timed, and say what will work")
    check.set_defaults(func=cmd_llm_check)
    store = sub.add_parser("store", help="an on-disk store: check that its parts agree, repair what can be")
    store_sub = store.add_subparsers(dest="store_command", required=True, metavar="{check,repair}",
                                     help="check: say what disagrees; repair: rebuild what the records allow")
    for name, text in (("check", "say what disagrees between the records, the vectors and the lexical index"),
                       ("repair", "rebuild the vectors and the lexical index from the records; name what cannot be")):
        one = store_sub.add_parser(name, help=text)
        one.add_argument("path", help="the store's folder (FactStore.persistent(path))")
        one.add_argument("--namespace", default="memkit", help="the store's namespace (default: %(default)s)")
        one.set_defaults(func=cmd_store)
    _add_mcp(sub)
    _add_data(sub)
    nbs = sub.add_parser("notebooks", help="copy the teaching notebooks (and their py:percent sources) into DIR")
    nbs.add_argument("dir", help="folder to copy them into (created if missing)")
    nbs.add_argument("--force", action="store_true", help="overwrite notebooks already there")
    nbs.add_argument("--no-trust", action="store_true",
                     help="do not sign the copies (JupyterLab then shows their stored widgets as text)")
    nbs.add_argument("--jupyter-data-dir", default=None, metavar="PATH",
                     help="sign into this Jupyter data folder, the one the JupyterLab you open them with uses "
                          "(default: this user's, `jupyter --data-dir`)")
    nbs.set_defaults(func=cmd_notebooks)
    from .eval.cli import register  # the bench commands: an import error there is a bug to see, not to hide

    register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    args = build_parser().parse_args(argv)
    args.argv = argv  # the command as typed, recorded by the runs that write results (run.json)
    try:
        return int(args.func(args))
    except KeyboardInterrupt:  # Ctrl-C: a line, not a traceback, and the shell's code for it
        print("memkit: interrupted", file=sys.stderr)
        return 130
    except Exception as e:  # a named memkit error reads better than a traceback at the prompt
        from .errors import MemkitError

        if isinstance(e, MemkitError):
            print(f"memkit: {type(e).__name__}: {e}", file=sys.stderr)
            return 2
        raise


if __name__ == "__main__":
    sys.exit(main())
