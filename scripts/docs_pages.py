"""Write the generated parts of the docs, so no number or signature in them is typed by hand:

- docs/benchmarks.md (what holds now) and docs/results/experiments.md (every option and hypothesis tried),
  from the result files under docs/results/ (memkit/eval/report.py);
- the short results table in README.md (between its `<!-- results -->` markers), from the same files;
- the reference in docs/usage.md (between its `<!-- reference -->` markers), from the code's signatures and
  docstrings and the command line's help.

    python scripts/docs_pages.py          # write them
    python scripts/docs_pages.py --check  # exit 1 if any is stale (tests/test_docs.py runs this)

To add a benchmark run: run it with `--out docs/results/<name>` (memkit bench keeps its command in run.json),
add it to SECTIONS, and run this script.
"""

from __future__ import annotations

import argparse
import inspect
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from memkit.eval.report import headline, page  # noqa: E402

RESULTS = Path("docs/results")
# (kind, path under the repository, title), in the page's order
SECTIONS = [
    ("run", RESULTS / "realtalk-dev", "REALTALK, dev split (chats 1-5): real two-person chats"),
    ("run", RESULTS / "realtalk-confirm", "REALTALK, confirm split (chats 6-10)"),
    ("run", RESULTS / "beam-dev", "BEAM 100K, dev split: user-assistant chats"),
    ("run", RESULTS / "beam-confirm", "BEAM 500K, confirm split (all 35 conversations)"),
    ("layers", RESULTS / "layers" / "realtalk-dev.csv", "What each layer adds: REALTALK dev split (chats 1-5)"),
    ("layers", RESULTS / "layers" / "realtalk-confirm.csv", "What each layer adds: REALTALK confirm split (chats 6-10)"),
    ("layers", RESULTS / "layers" / "beam-dev.csv", "What each layer adds: BEAM 100K dev split"),
    ("layers", RESULTS / "layers" / "beam-confirm.csv", "What each layer adds: BEAM 500K confirm split"),
    ("table", RESULTS / "embedders" / "embedders.csv",
     "What each offline embedder costs (run alone on 2 cores; passages of 128 tokens, short user lines, one "
     "question a call)"),
    ("scale", RESULTS / "scale",
     "Read and write paths as users and items grow (`Memory.context`, `Memory.observe`; each size at three draws "
     "of its items and questions, `--seed`; run alone on 2 cores)"),
    ("table", RESULTS / "read-stages" / "read-stages.csv",
     "Where a read's time goes (`Memory.context` at 400 tokens, each step without the steps it calls; means; run "
     "alone on 2 cores)"),
    ("table", RESULTS / "async" / "async.csv",
     "Sync against async: users each playing turns (observe, then the context for it) through one `Memory` in a "
     "loop, and through `AsyncMemory` with a coroutine per user (run alone on 2 cores)"),
    ("ops", RESULTS / "model-suite",
     "The first suite's operations: the rules and SmolLM2-135M behind llama.cpp as the extractor "
     "(`python scripts/measure_local_model.py --suite data/suite.jsonl --limit 1 --out docs/results/model-suite`)"),
    ("model", RESULTS / "local-model",
     "The write path against a real local model: llama.cpp's server, SmolLM2-135M-Instruct, the `llm` policy "
     "(run alone on 2 cores)"),
]

# every option and hypothesis tried, each run beside the defaults of its day: docs/results/experiments.md
EXPERIMENTS = [
    ("run", RESULTS / "realtalk-dev-baseline",
     "Baseline: REALTALK dev split before this version's read changes (at aeaa7b2, the loaders' commit)"),
    ("run", RESULTS / "beam-dev-baseline",
     "Baseline: BEAM 100K dev split before this version's read changes (at aeaa7b2, the loaders' commit)"),
    ("options", RESULTS / "options" / "realtalk-dev.csv", "Read options tried on the REALTALK dev split"),
    ("options", RESULTS / "options" / "realtalk-dev-more.csv",
     "More read options tried on the REALTALK dev split (fusion constant, diversity, depth, passage size, question time)"),
    ("options", RESULTS / "options" / "beam-dev.csv", "Read options tried on the BEAM dev split"),
    ("options", RESULTS / "options" / "passages-64.csv",
     "Passages of 64 tokens against 128, on all four splits (chosen on the dev splits, reported on the confirm splits)"),
    ("options", RESULTS / "options" / "passages-small-realtalk-dev.csv",
     "Passages smaller than 64 tokens, on the REALTALK dev split: evidence recall rises, answer-in-context falls (not kept)"),
    ("options", RESULTS / "options" / "names-realtalk-dev.csv",
     "Names a question gives, out of both queries: REALTALK dev split (chosen on)"),
    ("options", RESULTS / "options" / "names-realtalk-confirm.csv",
     "Names a question gives, out of both queries: REALTALK confirm split (reported, never chosen on)"),
    ("options", RESULTS / "options" / "variants-realtalk-dev.csv",
     "A name spelt another way: REALTALK dev split (no question's result changes)"),
    ("options", RESULTS / "options" / "variants-realtalk-confirm.csv",
     "A name spelt another way: REALTALK confirm split (reported, never chosen on)"),
    ("options", RESULTS / "options" / "diversity-realtalk-dev.csv",
     "Diversity: REALTALK dev split (at 4133e02, whose defaults had diversity 0.6; chosen on: 0 is the default now)"),
    ("options", RESULTS / "options" / "diversity-beam-dev.csv",
     "Diversity: BEAM dev split (at 4133e02, whose defaults had diversity 0.6; chosen on)"),
    ("options", RESULTS / "options" / "diversity-realtalk-confirm.csv",
     "Diversity: REALTALK confirm split (at 4133e02, whose defaults had diversity 0.6; reported, never chosen on)"),
    ("options", RESULTS / "options" / "diversity-beam-confirm.csv",
     "Diversity: BEAM 500K confirm split (at 4133e02, whose defaults had diversity 0.6; reported, never chosen on)"),
    ("options", RESULTS / "options" / "depth-realtalk-dev.csv",
     "Candidates per channel: REALTALK dev split (at 994f366, whose default depth was 50; chosen on: 30 is the default now)"),
    ("options", RESULTS / "options" / "depth-beam-dev.csv",
     "Candidates per channel: BEAM dev split (at 994f366, whose default depth was 50; chosen on)"),
    ("options", RESULTS / "options" / "depth-realtalk-confirm.csv",
     "Candidates per channel: REALTALK confirm split (at 994f366; reported, never chosen on)"),
    ("options", RESULTS / "options" / "depth-beam-confirm.csv",
     "Candidates per channel: BEAM 500K confirm split (at 994f366; reported, never chosen on)"),
    ("options", RESULTS / "options" / "depth-chats-seed1.csv",
     "Candidates per channel: the generated chats suite, seed 1 (a regression check, not chosen on)"),
    ("options", RESULTS / "options" / "depth-assistant-seed1.csv",
     "Candidates per channel: the generated user-assistant suite, seed 1 (a regression check, not chosen on)"),
    ("options", RESULTS / "options" / "beam-dev-weights.csv", "Channel weights tried on the BEAM dev split"),
    ("options", RESULTS / "options" / "realtalk-dev-weights.csv",
     "The lexical channel's weight and the named person's: REALTALK dev split (at 3ade3a4; chosen on)"),
    ("options", RESULTS / "options" / "beam-dev-weights-3ade3a4.csv",
     "The lexical channel's weight and the named person's: BEAM dev split (at 3ade3a4; no person is named there)"),
    ("options", RESULTS / "options" / "realtalk-confirm-weights.csv",
     "The lexical channel's weight and the named person's: REALTALK confirm split (at 3ade3a4; reported, never chosen on)"),
    ("options", RESULTS / "options" / "beam-dev-instructions.csv",
     "Standing instructions shown first: BEAM dev split (the rows without are the new rules' facts alone)"),
    ("options", RESULTS / "options" / "beam-dev-user.csv",
     "The user's own turns: BEAM dev split (weight of the user's ranking; the defaults row is 3; at cc5963d, first-person questions only)"),
    ("options", RESULTS / "options" / "beam-dev-unnamed.csv",
     "A question that names no one: BEAM dev split (the user's, or only a first-person one; at b3c3306)"),
    ("options", RESULTS / "options" / "speaker-runs-realtalk-dev.csv",
     "A speaker's name once for their lines in a row: REALTALK dev split (at 59bf75e; chosen on)"),
    ("options", RESULTS / "options" / "speaker-runs-beam-dev.csv",
     "A speaker's name once for their lines in a row: BEAM dev split (at 59bf75e)"),
    ("options", RESULTS / "options" / "speaker-runs-realtalk-confirm.csv",
     "A speaker's name once for their lines in a row: REALTALK confirm split (at 59bf75e; reported, never chosen on)"),
    ("options", RESULTS / "options" / "realtalk-dev-k.csv",
     "Fewer recalled facts: REALTALK dev split (at 203ad0b; the defaults recall 5)"),
    ("options", RESULTS / "options" / "beam-dev-k.csv",
     "Fewer recalled facts: BEAM dev split (at 203ad0b; the defaults recall 5)"),
    ("options", RESULTS / "options" / "floor-realtalk-dev.csv",
     "The facts' similarity floor: REALTALK dev split (level: 0.3 stays)"),
    ("options", RESULTS / "options" / "floor-beam-dev.csv",
     "The facts' similarity floor: BEAM dev split (level: 0.3 stays)"),
    ("options", RESULTS / "options" / "realtalk-dev-time.csv",
     "The question's time at another weight: REALTALK dev split (no change: weight 1 kept)"),
    ("options", RESULTS / "options" / "realtalk-confirm.csv",
     "This version's read changes on the REALTALK confirm split (reported, never chosen on)"),
    ("options", RESULTS / "experiments" / "realtalk-dev.csv",
     "Hypotheses tried as patches on the REALTALK dev split and dropped (facts and neighbours as keys, feedback, sessions, time words, questions, dense without the speaker, date lines, length prior, answers after questions, the lexical weight by its confidence, typos, dates for time questions, scores fused, dense feedback, named people, places, the question's form, a deeper read when room is left)"),
    ("options", RESULTS / "experiments" / "beam-dev.csv",
     "Hypotheses tried as patches on the BEAM dev split and dropped"),
    ("options", RESULTS / "experiments" / "realtalk-confirm.csv",
     "A hypothesis that gained on the dev splits, on the REALTALK confirm split: dates for time questions (dropped)"),
    ("run", RESULTS / "realtalk-dev-e5", "The e5 embedder (an option): REALTALK dev split"),
    ("run", RESULTS / "realtalk-confirm-e5", "The e5 embedder (an option): REALTALK confirm split"),
    ("run", RESULTS / "beam-dev5-e5", "The e5 embedder (an option): BEAM 100K dev split, first 5 conversations (at e5f3dc2)"),
    ("run", RESULTS / "beam-dev5-minilm",
     "The same 5 BEAM 100K conversations with the default embedder (MiniLM), for comparison (at e5f3dc2)"),
]
HEADLINE = [("REALTALK confirm", RESULTS / "realtalk-confirm"), ("BEAM 500K confirm", RESULTS / "beam-confirm"),
            ("REALTALK dev", RESULTS / "realtalk-dev"), ("BEAM 100K dev", RESULTS / "beam-dev")]
INTRO = """# Benchmarks

Generated by `python scripts/docs_pages.py` from the result files each section names; do not edit by hand.
Each section gives the command that wrote its files (run with `MEMKIT_CACHE_DIR` set to share the embedding
cache). Evidence recall is the share of a question's evidence turns the context covers (docs/architecture.md
§5); answer-in-context, in brackets, whether the gold answer's words occur in it. Intervals are 95%
bootstrap intervals over conversations. Retrieval is chosen on the dev splits (REALTALK chats 1-5, BEAM
100K) and reported on the confirm splits (REALTALK chats 6-10, BEAM 500K), which never choose anything.
The data sets are not in this repository: docs/decisions.md says where they come from. Every read option
and hypothesis tried, and the runs before this version's changes, are on their own page:
[docs/results/experiments.md](results/experiments.md).
"""
EXPERIMENTS_INTRO = """# Experiments

Generated by `python scripts/docs_pages.py` from the result files each section names; do not edit by hand.
Every read option and hypothesis tried, on the dev splits where it was chosen or dropped and on the confirm
splits where it was reported, each at the commit its title names (the defaults of that day, which are not
always today's). What holds now is in [docs/benchmarks.md](../benchmarks.md); why each option was kept or
dropped, in [docs/decisions.md](../decisions.md).
"""
REFERENCE = [("memkit.Memory", "Memory"), ("memkit.FactStore", "FactStore"), ("memkit.SessionStore", "SessionStore"),
             ("memkit.ReadOptions", "ReadOptions"), ("memkit.RecallOptions", "RecallOptions")]


def _first_paragraph(doc: str | None) -> str:
    text = inspect.cleandoc(doc or "").split("\n\n")[0]
    return " ".join(text.split())


def _signature(member: object) -> str:
    """``(a: int, b: str = 'x') -> bool`` as the source writes it (annotations unquoted, no ``self``)."""
    sig = inspect.signature(member)  # type: ignore[arg-type]
    params = [p for p in sig.parameters.values() if p.name not in ("self", "cls")]

    def plain(annotation: object) -> str:
        text = annotation if isinstance(annotation, str) else inspect.formatannotation(annotation)
        return text.replace("'", "").replace('"', "")

    def one(p: inspect.Parameter) -> str:
        text = {p.VAR_POSITIONAL: "*", p.VAR_KEYWORD: "**"}.get(p.kind, "") + p.name
        if p.annotation is not p.empty:
            text += f": {plain(p.annotation)}"
        if p.default is not p.empty:
            text += f" = {p.default!r}" if p.annotation is not p.empty else f"={p.default!r}"
        return text

    ret = f" -> {plain(sig.return_annotation)}" if sig.return_annotation is not sig.empty else ""
    return f"({', '.join(one(p) for p in params)}){ret}"


def reference() -> str:
    """Every public method of the entry points, with its signature and the first paragraph of its docstring,
    and the help of every command."""
    import importlib

    out = []
    for dotted, title in REFERENCE:
        module, _, name = dotted.rpartition(".")
        cls = getattr(importlib.import_module(module), name)
        out += [f"### `{title}`", "", _first_paragraph(cls.__doc__), "", "```python",
                f"{title}{_signature(cls)}", "```", ""]
        for attr, value in vars(cls).items():
            if attr.startswith("_") or not (callable(value) or isinstance(value, (property, classmethod, staticmethod))):
                continue
            member = getattr(cls, attr)
            if isinstance(value, property):
                out.append(f"- `{title}.{attr}` (property): {_first_paragraph(value.__doc__)}")
                continue
            out.append(f"- `{title}.{attr}{_signature(member)}`: {_first_paragraph(member.__doc__)}")
        out.append("")
    from memkit.cli import build_parser

    parser = build_parser()
    commands = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    out += ["### The `memkit` command", "", "```text", parser.format_help().rstrip(), "```", ""]
    for name, sub in commands.choices.items():
        out += [f"#### `memkit {name}`", "", "```text", sub.format_help().rstrip(), "```", ""]
    return "\n".join(out).rstrip() + "\n"


def _between(text: str, marker: str, body: str) -> str:
    start, end = f"<!-- {marker}: generated by scripts/docs_pages.py -->", f"<!-- /{marker} -->"
    i, j = text.index(start) + len(start), text.index(end)
    return text[:i] + "\n" + body.strip() + "\n" + text[j:]


def render() -> dict[Path, str]:
    """Each generated file and its text."""
    here = Path.cwd()
    os.chdir(ROOT)  # paths on the pages are relative to the repository
    os.environ["COLUMNS"] = "110"  # argparse wraps help at the terminal's width: the same on every machine
    try:
        readme, usage = (ROOT / "README.md").read_text("utf-8"), (ROOT / "docs" / "usage.md").read_text("utf-8")
        return {ROOT / "docs" / "benchmarks.md": page(SECTIONS, INTRO),
                ROOT / RESULTS / "experiments.md": page(EXPERIMENTS, EXPERIMENTS_INTRO),
                ROOT / "README.md": _between(readme, "results", headline(HEADLINE)),
                ROOT / "docs" / "usage.md": _between(usage, "reference", reference())}
    finally:
        os.chdir(here)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--check", action="store_true", help="exit 1 if a generated part is stale")
    args = ap.parse_args()
    stale = []
    for path, text in render().items():
        if args.check:
            if not path.exists() or path.read_text("utf-8") != text:
                stale.append(path.relative_to(ROOT).as_posix())
        else:
            path.write_text(text, "utf-8")
            print(f"wrote {path.relative_to(ROOT)}")
    if stale:
        print(f"stale: {', '.join(stale)}: run python scripts/docs_pages.py")
    elif args.check:
        print("up to date")
    return int(bool(stale))


if __name__ == "__main__":
    sys.exit(main())
