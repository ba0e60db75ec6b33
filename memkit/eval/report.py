"""``docs/benchmarks.md``, generated: markdown tables from the files ``memkit bench`` and
``scripts/measure_recall_options.py`` write, each under the command that made it. No number on that page is
typed by hand; ``python scripts/docs_pages.py`` writes it and ``tests/test_docs.py`` fails when it is
stale against the result files it names.

A run folder (``docs/results/<name>/``) holds what ``memkit bench`` wrote: ``run.json`` (with the command),
``summary.csv`` and, with several strategies, ``compare.csv``. An options table is one CSV of
``measure_recall_options.py`` with its command in a ``.cmd`` file beside it.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Sequence

import pandas as pd

from . import layers
from .metrics import HEADLINE, label
from .stats import too_few

TWO_LAYER = "two-layer:keyed"


def _row(cells: Sequence[str]) -> str:
    return "| " + " | ".join(cells) + " |"


def _table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    return "\n".join([_row(header), _row(["---"] * len(header)), *(_row(r) for r in rows)])


def recall_table(summary: pd.DataFrame) -> str:
    """Evidence recall per strategy and budget with its 95% interval, answer-in-context in brackets."""
    every = summary[summary["type"] == "all"]
    budgets = sorted(every["budget"].unique())
    rows = []
    for name, got in every.groupby("strategy", sort=False):
        got = got.set_index("budget")
        cells = [f"{r.evidence_recall:.3f} [{r.evidence_recall_ci_low:.2f}, {r.evidence_recall_ci_high:.2f}] "
                 f"({r.answer_in_context:.2f})" if b in got.index else "–"
                 for b in budgets for r in [got.loc[b] if b in got.index else None]]
        rows.append([f"**{name}**" if name.startswith("two-layer") else name, *cells])
    return _table(["evidence recall [95% interval] (answer in context)", *(f"{b:,} tokens" for b in budgets)], rows)


def _pairs(compare: pd.DataFrame) -> pd.DataFrame:
    return compare[(compare["type"] == "all") & (compare["metric"] == HEADLINE)]


def difference(pairs: pd.DataFrame, ours: str, base: str, budget: int) -> str:
    """``ours`` minus ``base`` in evidence recall at ``budget`` with its paired interval (``–`` when not compared)."""
    at = pairs[(pairs["budget"] == budget) & (((pairs["strategy_a"] == ours) & (pairs["strategy_b"] == base))
                                             | ((pairs["strategy_a"] == base) & (pairs["strategy_b"] == ours)))]
    if at.empty:
        return "–"
    r = at.iloc[0]
    sign = 1 if r.strategy_a == ours else -1
    low, high = sorted((sign * r.ci_low, sign * r.ci_high))
    return f"{sign * r.difference:+.3f} [{low:+.3f}, {high:+.3f}]"


def difference_table(compare: pd.DataFrame, ours: str, baselines: Sequence[str]) -> str:
    """``ours`` minus each baseline in evidence recall at each budget, with the paired interval."""
    pairs = _pairs(compare)
    budgets = sorted(pairs["budget"].unique())
    rows = [[base, *(difference(pairs, ours, base, b) for b in budgets)] for base in baselines]
    return _table([f"{ours} minus", *(f"{b:,} tokens" for b in budgets)], rows)


def by_type_table(summary: pd.DataFrame) -> str:
    """Evidence recall by probe type, strategy and budget."""
    typed = summary[summary["type"] != "all"]
    table = typed.pivot_table(index="type", columns=["strategy", "budget"], values="evidence_recall", sort=False)
    header = ["type", *(f"{s} @ {b:,}" for s, b in table.columns)]
    return _table(header, [[t, *(f"{v:.2f}" for v in r)] for t, r in table.iterrows()])


def run_section(folder: Path, title: str) -> str:
    """One ``memkit bench`` run: its command, what it ran on, and its tables."""
    run = json.loads((folder / "run.json").read_text("utf-8"))
    summary = pd.read_csv(folder / "summary.csv")
    probes = summary[summary["type"] == "all"].groupby("strategy")["probes"].max().max()
    budgets = run["budget"] if isinstance(run["budget"], list) else [run["budget"]]
    command = run.get("command") or (  # runs before memkit recorded its command: what run.json says they ran
        f"memkit bench --data '{run['data']}' --format {run['format']} --strategy {','.join(run['strategies'])} "
        f"--budget {','.join(map(str, budgets))}  # from run.json")
    cost = cost_line(run)[:1]  # in the paragraph that says what the run holds
    out = [f"## {title}", "", "```bash", command, "```", "",
           " ".join([f"{run['conversations']} conversations, {int(probes)} questions with evidence or an answer "
                     f"({run['format']}); files: `{folder.as_posix()}`.", *cost]), "", *other_forms(folder, summary),
           recall_table(summary), ""]
    compare = folder / "compare.csv"
    strategies = list(dict.fromkeys(summary["strategy"]))
    ours = next((s for s in strategies if s.startswith("two-layer")), None)
    if compare.exists() and ours:
        others = [s for s in strategies if s != ours]
        out += ["Paired differences over conversations (95% bootstrap interval):", "",
                difference_table(pd.read_csv(compare), ours, others), ""]
    out += ["By question type (evidence recall):", "", by_type_table(summary), ""]
    return "\n".join(out)


def cost_line(run: dict, subject: str = "The run") -> list[str]:
    """What the run cost, from run.json's ``cost`` (``runner.costed``; none for runs before it was kept)."""
    cost = run.get("cost")
    if not cost:
        return []
    peak = cost.get("peak_rss_mb") or {"main": 0, "largest_worker": 0}
    workers = f", {run['jobs']} processes" if run.get("jobs", 1) > 1 and not run.get("scheduler") else ""
    return [f"{subject} took {cost['seconds'] / 60:.1f} min ({cost['seconds_per_conversation']:.0f} s a conversation"
            f"{workers}), of which {cost['warm_up_s'] / 60:.1f} min in its warm-up, which embedded the "
            f"{cost['embedded']:,} texts the embedding cache lacked"
            + (f"; peak memory {peak['main']:,} MB in the main process" if peak["main"] else "")
            + (f" and {peak['largest_worker']:,} MB in the largest worker" if peak["largest_worker"] else "")
            + ".", ""]


def other_forms(folder: Path, summary: pd.DataFrame) -> list[str]:
    """The same run made another way (``folder/<form>/``: its run.json and summary.csv, e.g. on a Dask cluster):
    what it cost, and whether its rows equal the run's in every column but the timings."""
    out = []
    for sub in sorted(p.parent for p in folder.glob("*/run.json")):
        run = json.loads((sub / "run.json").read_text("utf-8"))
        rows = pd.read_csv(sub / "summary.csv")
        kept = [c for c in summary.columns if not (c.endswith("_ms") or c == "turns_per_s")]
        same = list(rows.columns) == list(summary.columns) and rows[kept].equals(summary[kept])
        how = f"on `--scheduler {run['scheduler']}`" if run.get("scheduler") else f"as `{run.get('command', '?')}`"
        line = cost_line(run, f"The same run {how} (files: `{sub.as_posix()}`)")
        if line:
            out += [line[0][:-1] + ("; its rows equal these in every column but the timings." if same else
                                    "; its rows differ from these beyond the timings."), ""]
    return out


def options_section(csv: Path, title: str) -> str:
    """One options table of ``scripts/measure_recall_options.py``: variant by budget, answer-in-context in
    brackets (a variant that raises evidence recall while it falls shows more turns, not more answers)."""
    table = pd.read_csv(csv)
    budgets = sorted(table["budget"].unique())
    rows = []
    for variant, got in table.groupby("variant", sort=False):
        got = got.set_index("budget")
        rows.append([variant, *(f"{got.loc[b, 'evidence_recall']:.3f} [{got.loc[b, 'ci_low']:.2f}, "
                                f"{got.loc[b, 'ci_high']:.2f}] ({got.loc[b, 'answer_in_context']:.2f})"
                                if b in got.index else "–" for b in budgets)])
    command = csv.with_suffix(".cmd").read_text("utf-8").strip() if csv.with_suffix(".cmd").exists() else \
        "(command not recorded)"
    out = [f"## {title}", "", "```bash", command, "```", "", f"File: `{csv.as_posix()}`.", "",
           _table(["variant: evidence recall [95% interval] (answer in context)", *(f"{b:,} tokens" for b in budgets)],
                  rows), ""]
    types = csv.with_name(f"{csv.stem}-types.csv")  # evidence recall per question type, where the script wrote it
    if types.exists():
        by_type = pd.read_csv(types)
        for b in budgets:
            got = by_type[by_type["budget"] == b].pivot(index="variant", columns="type", values="evidence_recall")
            got = got.reindex([v for v in table["variant"].unique() if v in got.index]).dropna(axis=1, how="all")
            out += [f"By question type at {b:,} tokens (evidence recall; file `{types.as_posix()}`):", "",
                    _table(["variant", *got.columns], [[v, *(f"{x:.2f}" for x in r)] for v, r in got.iterrows()]), ""]
    return "\n".join(out)


SCALE_COLUMNS = [("context_p50_ms", "context p50 ms", "{:.1f}"), ("context_p95_ms", "context p95 ms", "{:.1f}"),
                 ("bare_read_p95_ms", "bare embed + query p95 ms", "{:.1f}"),
                 ("context_vs_bare_p95", "context / bare (p95) [95% interval]", "{:.2f}×"),
                 ("index_calls_vs_bare_p95", "index calls / bare (p95)", "{:.2f}×"),
                 ("observe_p50_ms", "observe p50 ms", "{:.1f}"), ("bare_write_p50_ms", "bare embed + add p50 ms", "{:.1f}"),
                 ("peak_rss_mb", "peak RSS MB", "{:.0f}")]


def scale_section(folder: Path, title: str) -> str:
    """The table of ``memkit bench-scale``: one row per backend and size (and seed, when the run drew several),
    the read and write paths beside the bare index calls they wrap (a size that failed shows its error)."""
    table = pd.read_csv(folder / "scale.csv")
    seeds = "seed" in table and table["seed"].nunique() > 1
    rows = []
    for _, r in table.iterrows():
        size = f"{r['backend']} {int(r['users']):,} × {int(r['items_per_user']):,}"
        size += f", seed {int(r['seed'])}" if seeds else ""
        if isinstance(r.get("error"), str):
            rows.append([size, *(["–"] * (len(SCALE_COLUMNS) - 1)), r["error"]])
            continue
        cells = [fmt.format(r[c]) for c, _, fmt in SCALE_COLUMNS]
        if pd.notna(r.get("context_vs_bare_p95_low")):  # the reads' own spread (older files have none)
            at = [c for c, _, _ in SCALE_COLUMNS].index("context_vs_bare_p95")
            cells[at] += f" [{r['context_vs_bare_p95_low']:.2f}, {r['context_vs_bare_p95_high']:.2f}]"
        rows.append([size, *cells])
    cmd = folder / "scale.cmd"
    command = cmd.read_text("utf-8").strip() if cmd.exists() else "(command not recorded)"
    return "\n".join([f"## {title}", "", "```bash", command, "```", "", f"File: `{(folder / 'scale.csv').as_posix()}`.",
                      "", _table(["backend, users × items", *(h for _, h, _ in SCALE_COLUMNS)], rows), ""])


def model_section(folder: Path, title: str) -> str:
    """The run of ``scripts/measure_local_model.py``: its summary as one measure per row, then each user
    turn (seconds, events, what became of it)."""
    summary = pd.read_csv(folder / "summary.csv", keep_default_na=False).iloc[0]
    turns = pd.read_csv(folder / "turns.csv", keep_default_na=False)
    turns = turns[turns.role == "user"]
    cmd = folder / "run.cmd"
    command = cmd.read_text("utf-8").strip() if cmd.exists() else "(command not recorded)"
    return "\n".join([
        f"## {title}", "", "```bash", command, "```", "",
        f"Files: `{(folder / 'summary.csv').as_posix()}`, `{(folder / 'turns.csv').as_posix()}`, "
        f"`{(folder / 'errors.txt').as_posix()}`.", "",
        _table(["measure", "value"], [[k, str(v) or "–"] for k, v in summary.items()]), "",
        _table(["turn", "text", "seconds", "events", "outcome"],
               [[r.turn, r.text, f"{r.seconds:.1f}", r.events or "–", r.outcome] for r in turns.itertuples()]), ""])


OPS_COLUMNS = [(c, label(c).split(" (")[0]) for c in ("op_accuracy", "error_rate", "fact_precision", "duplicate_rate",
                                                        "stale", "evidence_recall", "write_p50_ms")]


def ops_section(folder: Path, title: str) -> str:
    """The write path's operations, one row per ``memkit bench`` run in the subfolders of ``folder`` (each
    with its extractor and summarizer from run.json): what a model does beside the rules on one suite."""
    rows, commands = [], []
    for run_dir in sorted(p for p in folder.iterdir() if (p / "run.json").exists()):
        run = json.loads((run_dir / "run.json").read_text("utf-8"))
        summary = pd.read_csv(run_dir / "summary.csv")
        commands.append(run.get("command", "(command not recorded)"))
        for _, r in summary[summary["type"] == "all"].iterrows():
            rows.append([r["strategy"], run.get("extractor", "rules"), run.get("summarizer", "extractive"),
                         *("–" if pd.isna(r[c]) else f"{r[c]:.3f}" if c != "write_p50_ms" else f"{r[c]:.0f}"
                           for c, _ in OPS_COLUMNS)])
    return "\n".join([f"## {title}", "", "```bash", *commands, "```", "", f"Files: `{folder.as_posix()}/*/`.", "",
                      _table(["strategy", "extractor", "summarizer", *(h for _, h in OPS_COLUMNS)], rows), ""])


def table_section(csv: Path, title: str) -> str:
    """A CSV shown as it is, under the command kept beside it (``<name>.cmd``): for a script's one table."""
    table = pd.read_csv(csv, keep_default_na=False)
    cmd = csv.with_suffix(".cmd")
    command = cmd.read_text("utf-8").strip() if cmd.exists() else "(command not recorded)"
    return "\n".join([f"## {title}", "", "```bash", command, "```", "", f"File: `{csv.as_posix()}`.", "",
                      _table(list(table.columns), [[str(v) for v in r] for r in table.itertuples(index=False)]), ""])


def layer_table(table: pd.DataFrame, measure: str, ptype: str = "all") -> str:
    """One measure of a ``layers.table`` (``layers.frame``): a row per variant, a column per budget."""
    cells = layers.frame(table, measure, ptype)
    return _table([label(measure).split(" (")[0], *(f"{b:,} tokens" for b in cells.columns)],
                  [[f"**{v}**" if v == layers.FULL else v, *row] for v, row in zip(cells.index, cells.values.tolist())])


def layers_section(csv: Path, title: str) -> str:
    """One split of ``scripts/measure_layers.py``: evidence recall and answer-in-context, each variant's
    difference from full two-layer memory [95% interval]; stale content on knowledge updates where the
    data marks them; and what switching the facts off changes per question type."""
    table = pd.read_csv(csv)
    cmd = csv.with_suffix(".cmd")
    command = cmd.read_text("utf-8").strip() if cmd.exists() else "(command not recorded)"
    first = table[(table["type"] == "all")]
    n = int(first["conversations"].max())
    few = f"; with {n}, read it as a range, not a test" if too_few(n) else ""
    out = [f"## {title}", "", "```bash", command, "```", "",
           f"{n} conversations, {int(first['probes'].max())} questions; file: "
           f"`{csv.as_posix()}`. Bold: two-layer memory's own value; "
           f"the other rows: the variant minus two-layer memory [95% bootstrap interval over conversations{few}]. "
           "*Without facts*: "
           "no recalled facts and no profile block; *without the profile*: no profile block; *without episodes*: "
           "no past turns (facts, profile and this session only); `rag:*`: raw retrieval over the turns.", "",
           layer_table(table, "evidence_recall"), "", layer_table(table, "answer_in_context"), ""]
    updates = table[(table["type"] == "knowledge_update") & table["stale"].notna()]
    if not updates.empty:
        out += ["Stale content on knowledge-update questions (the old value's turn shown, none of its "
                "replacements):", "", layer_table(table, "stale", "knowledge_update"), ""]
    out += ["By question type: [docs/results/layers.md](results/layers.md).", ""]
    return "\n".join(out)


def layer_types_section(csv: Path, title: str) -> str:
    """What switching the facts off changes per question type, on one split of ``scripts/measure_layers.py``."""
    table = pd.read_csv(csv)
    typed = table[(table["variant"] == "without facts") & (table["type"] != "all")]
    budgets = sorted(typed["budget"].unique())
    rows = [[t, *(f"{r.evidence_recall_diff:+.3f} / {r.answer_in_context_diff:+.3f}"
                  if not pd.isna(r.evidence_recall_diff) else "–" for b in budgets
                  for r in [got.set_index("budget").loc[b]])]
            for t, got in typed.groupby("type", sort=True)]
    return "\n".join([f"## {title}", "", f"File: `{csv.as_posix()}`. Without facts minus two-layer memory: "
                      "evidence recall / answer in context (– where a type has no value).", "",
                      _table(["type", *(f"{b:,} tokens" for b in budgets)], rows), ""])


SECTION_KINDS = {"run": run_section, "options": options_section, "scale": scale_section, "model": model_section,
                 "ops": ops_section, "table": table_section, "layers": layers_section,
                 "layer-types": layer_types_section}


def anchor(title: str, taken: dict[str, int]) -> str:
    """The link GitHub gives a heading: lower case, without punctuation but hyphens and underscores, spaces as
    hyphens; a heading seen before (``taken``) gets ``-1``, ``-2`` ..."""
    slug = re.sub(r"[^\w\- ]", "", title.lower()).replace(" ", "-")
    n = taken.get(slug, 0)
    taken[slug] = n + 1
    return f"#{slug}" + (f"-{n}" if n else "")


def page(sections: Sequence[tuple[str, Path, str]], intro: str) -> str:
    """The whole page: ``intro``, a list of its sections linked, then each ``(kind, path, title)`` section (a
    kind of ``SECTION_KINDS``) in order."""
    shown = [(kind, path, title) for kind, path, title in sections if path.exists()]
    taken: dict[str, int] = {}
    parts = [intro.strip(), "", "**Contents**", "",
             *[f"- [{title}]({anchor(title, taken)})" for _, _, title in shown], ""]
    parts += [SECTION_KINDS[kind](path, title) for kind, path, title in shown]
    return "\n".join(parts).rstrip() + "\n"


def headline(runs: Sequence[tuple[str, Path]]) -> str:
    """The README's short table: per run and budget, two-layer memory's evidence recall, the best ``rag:*``
    baseline's, and their paired difference with its interval (runs whose files are missing are left out)."""
    rows = []
    for name, folder in runs:
        if not (folder / "summary.csv").exists():
            continue
        summary = pd.read_csv(folder / "summary.csv")
        every = summary[summary["type"] == "all"]
        compare = pd.read_csv(folder / "compare.csv") if (folder / "compare.csv").exists() else None
        ours = next((s for s in dict.fromkeys(every["strategy"]) if s.startswith("two-layer")), None)
        if ours is None:
            continue
        for b in sorted(every["budget"].unique()):
            at = every[every["budget"] == b].set_index("strategy")
            rags = at[at.index.str.startswith("rag:")]
            if rags.empty:
                continue
            best = rags["evidence_recall"].idxmax()
            cell = difference(_pairs(compare), ours, best, b) if compare is not None else "–"
            rows.append([name, f"{b:,}", f"{at.loc[ours, 'evidence_recall']:.3f}",
                         f"{best} {rags.loc[best, 'evidence_recall']:.3f}", cell])
    return _table(["data", "tokens", "two-layer", "best raw retrieval", "difference [95% interval]"], rows)
