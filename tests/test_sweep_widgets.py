import re
from pathlib import Path

import pandas as pd
import plotly.graph_objects as go
import pytest

from memkit import FactStore, MemkitError, Memory, ReadOptions

from memkit.lab import viz
from memkit.eval.sweep import grid, parse_param, run_sweep, sweep_figure
from memkit.lab.widgets import ConflictTimeline, LayerInspector, RecallExplorer

NB7 = Path(__file__).parents[1] / "notebooks" / "07_strategies.ipynb"


def test_parse_param_and_grid():
    assert parse_param("budget=600,1200") == ("budget", [600, 1200])
    assert parse_param("LLM=false") == ("LLM", [False])
    assert parse_param('strategies=["window","two-layer:keyed"]') == ("strategies", [["window", "two-layer:keyed"]])
    assert parse_param("policy=keyed,temporal") == ("policy", ["keyed", "temporal"])
    with pytest.raises(MemkitError):
        parse_param("budget")
    assert grid({"a": [1, 2], "b": ["x"]}) == [{"a": 1, "b": "x"}, {"a": 2, "b": "x"}]


def test_sweep_runs_a_notebook_over_a_grid(tmp_path):
    sweep = run_sweep(NB7, {"size": [1], "budget": [300, 900], "strategies": [["window", "two-layer:keyed"]]},
                      tmp_path, metric="evidence_recall", progress=False)
    assert sorted(set(sweep["budget"])) == [300, 900]
    assert set(sweep["strategy"]) == {"window", "two-layer:keyed"} and len(sweep) == 4
    assert pd.read_csv(tmp_path / "sweep.csv").shape == sweep.shape
    # one line per strategy with a legend, from the table as pandas reads it back (pandas 3: str columns)
    fig = sweep_figure(pd.read_csv(tmp_path / "sweep.csv"), ["size", "budget", "strategies"], "evidence_recall")
    assert sorted(t.name for t in fig.data) == ["two-layer:keyed", "window"] and fig.layout.showlegend
    assert all(list(t.x) == [300, 900] for t in fig.data)
    html = (tmp_path / "sweep.html").read_text()
    assert '"name":"window"' in html and '"name":"two-layer:keyed"' in html
    assert "<title>evidence recall (share of evidence turns shown) by context budget (tokens)</title>" in html
    assert (tmp_path / "run-001.ipynb").exists()
    window = sweep[sweep["strategy"] == "window"].set_index("budget")["context_tokens"]
    assert window[900] > window[300]  # the parameter really reached the notebook
    # the same sweep on a real Dask cluster (2 worker processes): the same table, in grid order
    from distributed import LocalCluster

    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster:
        spread = run_sweep(NB7, {"size": [1], "budget": [300, 900], "strategies": [["window", "two-layer:keyed"]]},
                           tmp_path / "dask", metric="evidence_recall", progress=False,
                           scheduler=cluster.scheduler_address)
    measured = [c for c in sweep.columns if c.endswith(("_ms", "_per_s"))]
    pd.testing.assert_frame_equal(sweep.drop(columns=measured), spread.drop(columns=measured))
    assert (tmp_path / "dask" / "run-001.ipynb").exists() and (tmp_path / "dask" / "run-001.csv").exists()


@pytest.mark.parametrize("dtype", [object, "string"])
def test_sweep_figure_draws_a_line_per_label(dtype):
    sweep = pd.DataFrame({"budget": [300, 300, 600, 600], "policy": ["keyed", "keyed", "temporal", "temporal"],
                          "strategy": pd.Series(["window", "two-layer", "window", "two-layer"], dtype=dtype),
                          "evidence_recall": [0.2, 0.9, 0.3, 0.95], "run": [0, 0, 1, 1]})
    fig = sweep_figure(sweep, ["budget"])
    assert sorted(t.name for t in fig.data) == ["keyed / two-layer", "keyed / window",
                                                "temporal / two-layer", "temporal / window"]
    one = sweep_figure(sweep.drop(columns="policy"), ["budget"])
    assert sorted(t.name for t in one.data) == ["two-layer", "window"] and one.layout.showlegend
    assert [list(t.y) for t in one.data if t.name == "window"] == [[0.2, 0.3]]


def test_sweep_errors(tmp_path):
    with pytest.raises(MemkitError, match="no such notebook"):
        run_sweep(tmp_path / "missing.ipynb", {}, tmp_path, progress=False)


def test_layer_inspector_updates_on_send(embedder):
    m = Memory(store=FactStore.ephemeral(embedder))
    view = LayerInspector(m, "u", "s", display=False)
    assert "(none)" in view.facts_html.value
    events = view.send("I prefer metric units.")
    assert [e.kind.value for e in events] == ["ADD"]
    assert "User prefers metric units." in view.facts_html.value and "ADD" in view.events_html.value
    assert "I prefer metric units." in view.window_html.value
    assert view.send("   ") == []


def test_conflict_timeline_scrubs_per_policy(embedder):
    turns = ["I prefer metric units.", "I don't want metric units anymore, give me miles."]
    view = ConflictTimeline(turns, policies=["similarity", "keyed"], embedder=embedder, display=False)
    _, facts = view.state("similarity", 2)
    assert len([f for f in facts if f.key == "user.units"]) == 2
    _, facts = view.state("keyed", 2)
    assert [f.value for f in facts] == ["imperial"]
    view.policy.value, view.step.value = "keyed", 1
    assert "metric" in view.facts_html.value and "imperial" not in view.facts_html.value


def test_recall_explorer_follows_the_floor(embedder):
    m = Memory(store=FactStore.ephemeral(embedder), read=ReadOptions(profile_tokens=0))
    m.observe("u", "s", "user", "I prefer metric units. My sister Ann is a nurse.")
    # no word in common with the fact: only the dense channel can find it, and the floor gates that channel
    view = RecallExplorer(m, "u", "q", query="How should distances be measured?", display=False)
    view.floor.value = 0.0
    assert "User prefers metric units." in view.table_html.value
    view.floor.value = 0.95
    assert "User prefers metric units." not in view.table_html.value


def test_viz_functions_return_figures_and_tables(embedder):
    m = Memory(store=FactStore.ephemeral(embedder))
    m.observe("u", "s", "user", "I prefer metric units.")
    ctx = m.context("u", "s", "units?", budget=100)
    assert isinstance(viz.budget_breakdown(ctx), go.Figure)
    assert [t.name.split(" ")[0] for t in viz.budget_breakdown(ctx).data] == ["facts", "episodes", "summary", "turns"]
    assert list(viz.context_table(ctx)["part"]) == ["facts", "turns"]
    hits = m.store.search("u", "units", min_score=-1)
    assert len(viz.recall_scores(hits, 0.3).data[0].x) == len(hits)
    assert len(viz.fact_timeline(m.store.get("u")).data) == 1
    assert isinstance(viz.layers(m.session("u", "s").window, "", m.store.get("u")), go.Figure)


def test_context_explorer_opens_on_the_question_asked_for_and_shows_session_and_date(embedder):
    from memkit.lab.widgets import ContextExplorer

    m = Memory(store=FactStore.ephemeral(embedder))
    m.observe("u", "s1", "user", "The Brocken hike was foggy.", turn_id="t1")
    m.observe("u", "s2", "user", "Dinner at the Thai place was great.", turn_id="t2")
    questions = [("Where did we eat?", ["t2"]), ("Which hike was foggy?", ["t1"])]
    view = ContextExplorer(m, "u", questions, display=False, start="Which hike was foggy?")
    assert view.question.value == "Which hike was foggy?" and "1</b> of 1" in view.summary.value
    assert ">session</th>" in view.table_html.value and ">date</th>" in view.table_html.value
    assert ContextExplorer(m, "u", questions, display=False).question.value == "Where did we eat?"
    # the evidence row is marked and shaded; the lines can be put in the read's rank order
    assert '<tr style="background:#e3f4e1">' in view.table_html.value and ">✔</td>" in view.table_html.value
    m.observe("u", "s3", "user", "The hike to the foggy lake was long.", turn_id="t3")
    m.end_session("u", "s3")
    view.order.value = "rank order"
    ranks = [int(r) for r in re.findall(r"<td[^>]*>(\d+)</td>\s*<td[^>]*>s\d", view.table_html.value)]
    assert ranks == sorted(ranks) and len(ranks) >= 2
    with pytest.raises(MemkitError):
        ContextExplorer(m, "u", questions, display=False, start="Not a question of the list?")


def test_layers_figure_is_as_tall_as_its_rows():
    short = viz.layers([], "", [])
    from memkit.types import Fact
    many = [Fact(id=f"f{i}", user_id="u", text=f"fact {i}") for i in range(12)]
    assert short.layout.height < 200 < viz.layers([], "", many).layout.height


def test_sweep_figure_titles_its_axes_and_marks_a_strategy_that_ignores_the_budget():
    sweep = pd.DataFrame({"budget": [300, 300, 600, 600], "strategy": ["full", "window", "full", "window"],
                          "evidence_recall": [1.0, 0.2, 1.0, 0.3], "context_tokens": [2931, 290, 2931, 590]})
    fig = sweep_figure(sweep, ["budget"], "evidence_recall")
    assert sorted(t.name for t in fig.data) == ["full (ignores the budget)", "window"]
    dash = {t.name: t.line.dash for t in fig.data}
    assert dash == {"full (ignores the budget)": "dash", "window": "solid"}  # the reference dashed, the rest solid
    assert fig.layout.xaxis.title.text == "context budget (tokens)"
    assert fig.layout.yaxis.title.text.startswith("evidence recall (")
    assert fig.layout.title.text == "evidence recall (share of evidence turns shown) by context budget (tokens)"
