"""Run a notebook over a parameter grid with papermill and collect each run's result table (a sweep)."""

from __future__ import annotations

import ast
import io
import itertools
import json
from pathlib import Path
from typing import Any, Sequence

import pandas as pd
import plotly.express as px

from ..errors import ConfigError, MemkitError
from ..validate import out_dir
from ..lab.viz import write_page
from .metrics import label


def parse_param(spec: str) -> tuple[str, list[Any]]:
    """``"budget=600,1200"`` -> ``("budget", [600, 1200])``; a value starting with ``[`` is one JSON list."""
    name, _, raw = spec.partition("=")
    if not _ or not name.strip().isidentifier() or not raw.strip():
        raise ConfigError(f"a parameter is NAME=V1,V2,... (or NAME=[...] for one JSON list); got {spec!r}")
    if raw.strip().startswith("["):
        try:
            return name.strip(), [json.loads(raw)]
        except json.JSONDecodeError as e:
            raise ConfigError(f"{spec!r}: a value starting with '[' must be a JSON list ({e.msg})") from None
    out = []
    for v in raw.split(","):
        try:
            out.append(json.loads(v))
        except json.JSONDecodeError:
            out.append(v)
    return name.strip(), out


def check_params(notebook: str | Path, params: dict[str, Sequence[Any]]) -> None:
    """Every swept name is a parameter of the notebook and every value has its default's type."""
    import papermill

    declared = papermill.inspect_notebook(str(notebook))
    for name, values in params.items():
        if name not in declared:
            raise ConfigError(f"{Path(notebook).name} has no parameter {name!r}; it has {sorted(declared)}")
        try:
            default = ast.literal_eval(declared[name]["default"])
        except (ValueError, SyntaxError):
            continue  # an expression default: nothing to compare with
        for v in values:
            if default is not None and not _same_kind(default, v):
                raise ConfigError(f"{name}={v!r}: the notebook's default is {default!r} "
                                  f"({type(default).__name__}); pass a value of that type")


def _same_kind(default: Any, value: Any) -> bool:
    if isinstance(default, bool) or isinstance(value, bool):
        return isinstance(default, bool) and isinstance(value, bool)
    if isinstance(default, (int, float)):
        return isinstance(value, (int, float)) and (isinstance(default, float) or isinstance(value, int))
    return isinstance(value, type(default))


def grid(params: dict[str, Sequence[Any]]) -> list[dict[str, Any]]:
    """Every combination of the parameter values."""
    names = list(params)
    return [dict(zip(names, combo)) for combo in itertools.product(*(params[n] for n in names))]


def run_sweep(notebook: str | Path, params: dict[str, Sequence[Any]], out: str | Path, metric: str | None = None,
              kernel_name: str = "python3", progress: bool = True, jobs: int = 1,
              scheduler: str | None = None) -> pd.DataFrame:
    """Execute ``notebook`` once per grid point into ``out``; return (and write) all result tables as one.

    ``jobs`` runs that many notebooks at once in local processes, ``scheduler`` runs them on a Dask cluster
    (each worker needs memkit and the notebook's folder at the same path); the table is in grid order.
    """
    import importlib.util

    if importlib.util.find_spec("papermill") is None:
        raise ConfigError("memkit sweep runs notebooks with papermill: pip install 'memkit-lab[notebooks]'")
    from .execution import execute

    notebook, out = Path(notebook).resolve(), Path(out)
    if not notebook.is_file():
        raise MemkitError(f"no such notebook: {notebook}")
    if jobs < 1:
        raise ConfigError(f"jobs must be at least 1, got {jobs}")
    check_params(notebook, params)
    out_dir(out)
    points = grid(params)
    bar = None
    if progress:
        from tqdm.auto import tqdm

        bar = tqdm(total=len(points), desc=f"sweep {notebook.stem}", unit="run")
    tables: dict[int, pd.DataFrame] = {}
    calls = [(i, (str(notebook), point, kernel_name)) for i, point in enumerate(points)]
    for i, (executed, result) in execute(run_point, calls, jobs, scheduler):
        (out / f"run-{i:03d}.ipynb").write_text(executed, "utf-8")
        if result is None:
            raise MemkitError(f"{notebook.name} wrote no result table; does it have a `result_path` parameter?")
        (out / f"run-{i:03d}.csv").write_text(result, "utf-8")
        table = pd.read_csv(io.StringIO(result))
        for name, value in points[i].items():
            table[name] = json.dumps(value) if isinstance(value, (list, dict)) else value
        table["run"] = i
        tables[i] = table
        if bar:
            bar.update(1)
    if bar:
        bar.close()
    sweep = pd.concat([tables[i] for i in range(len(points))], ignore_index=True)
    sweep.to_csv(out / "sweep.csv", index=False)
    write_page(sweep_figure(sweep, list(params), metric), out / "sweep.html")
    return sweep


def run_point(notebook: str, point: dict[str, Any], kernel_name: str) -> tuple[str, str | None]:
    """Execute the notebook at one grid point (here or on a worker): the executed notebook and its result CSV."""
    import tempfile

    import papermill

    with tempfile.TemporaryDirectory(prefix="memkit-sweep-") as tmp:
        result = Path(tmp) / "result.csv"
        executed = Path(tmp) / "run.ipynb"
        papermill.execute_notebook(notebook, str(executed), parameters={**point, "result_path": str(result)},
                                   cwd=str(Path(notebook).parent), kernel_name=kernel_name, progress_bar=False,
                                   log_output=False)
        return executed.read_text("utf-8"), result.read_text("utf-8") if result.exists() else None


def sweep_figure(sweep: pd.DataFrame, params: Sequence[str], metric: str | None = None) -> Any:
    """The metric against the first swept parameter that varies, one line per label (the text columns that vary,
    such as ``strategy``, and the other varying parameters), with a legend."""
    numeric = [c for c in sweep.select_dtypes("number").columns if c not in params and c != "run"]
    metric = metric or (numeric[0] if numeric else None)
    if metric is None or metric not in sweep:
        raise MemkitError(f"no numeric result column to plot; columns: {list(sweep.columns)}")
    varying = [p for p in params if sweep[p].nunique() > 1]
    x = varying[0] if varying else "run"
    # text columns whatever their dtype (object, or pandas 3's str), then the other swept parameters
    labels = [c for c in sweep.columns if c not in params and c != "run" and c != metric
              and not pd.api.types.is_numeric_dtype(sweep[c]) and sweep[c].nunique() > 1]
    labels += varying[1:]
    data = sweep.sort_values([*labels, x], kind="stable")
    color = None
    if labels:
        color = " / ".join(labels)
        data = data.assign(**{color: data[labels].astype(str).agg(" / ".join, axis=1)})
    ignores: set[str] = set()
    if x == "budget" and "context_tokens" in data and color:
        # a strategy that sends more than the budget at every point ignores it (full history): a grey dashed
        # reference line, named so, rather than a competitor at that budget
        ignores = {f"{k} (ignores the budget)" for k, g in data.groupby(color) if (g["context_tokens"] > g["budget"]).all()}
        data = data.assign(**{color: data[color].map(lambda k: f"{k} (ignores the budget)" if f"{k} (ignores the budget)" in ignores else k)})
    fig = px.line(data, x=x, y=metric, color=color, markers=True,
                  labels={x: _title(x), metric: _title(metric)}, title=f"{_title(metric)} by {_title(x)}")
    fig.for_each_trace(lambda t: t.update(line={"dash": "dash", "color": "grey"}, marker={"color": "grey"})
                       if t.name in ignores else None)
    return fig.update_layout(showlegend=bool(labels))


TITLES = {"budget": "context budget (tokens)", "size": "conversations", "k": "facts recalled (k)"}  # parameters


def _title(column: str) -> str:
    """An axis title with its unit: a parameter's, or a measure's label (``metrics.label``)."""
    return TITLES.get(column) or label(column)
