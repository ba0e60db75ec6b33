"""Every notebook runs under papermill with parameters other than its defaults and writes its result table."""

from pathlib import Path

import pandas as pd
import papermill
import pytest

NOTEBOOKS = Path(__file__).parents[1] / "notebooks"
CASES = {
    "01_two_layers": ({"budget": 200, "show_widgets": False}, lambda t: t["budget"][0] == 200 and t["metric_with_memory"][0]),
    "02_episodic_buffer": ({"window_tokens": 150, "turns_to_play": 30}, lambda t: t["window_tokens"][0] == 150),
    "03_extraction": ({"conversations": 5}, lambda t: t["fact_turns"][0] > 0 and t["precision"][0] > 0.9),
    "04_conflicts": ({"policy": "keyed", "threshold": 0.95, "show_widgets": False},
                     lambda t: set(t["policy"]) == {"similarity", "keyed", "append", "temporal"}),
    "05_recall": ({"floor": 0.4, "conversation": 1, "show_widgets": False}, lambda t: t["above floor"].dtype == bool),
    "06_isolation": ({}, lambda t: "allowed" not in set(t["result"])),
    "07_strategies": ({"suite": "assistant", "size": 1, "budget": 500, "strategies": ["window", "two-layer:keyed"]},
                      lambda t: set(t["strategy"]) == {"window", "two-layer:keyed"}),
    "08_real_conversations": ({"conversation": 1, "budgets": [200, 400], "show_widgets": False,
                               "strategies": ["window", "two-layer:keyed", "rag:bm25"]},
                              lambda t: set(t["strategy"]) == {"window", "two-layer:keyed", "rag:bm25"}
                              and {"200", "400"} <= set(t.columns)),
    "09_agent": ({"budget": 300, "show_widgets": False},
                 lambda t: dict(zip(t["what"], t["count"]))["thread fri: messages"] == 2
                 and dict(zip(t["what"], t["count"]))["past turns of the user (episodes)"] == 6),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_notebook_runs_under_papermill(name, tmp_path):
    params, check = CASES[name]
    result = tmp_path / "result.csv"
    papermill.execute_notebook(str(NOTEBOOKS / f"{name}.ipynb"), str(tmp_path / "out.ipynb"),
                               parameters={**params, "result_path": str(result)}, cwd=str(NOTEBOOKS),
                               kernel_name="python3", progress_bar=False)
    table = pd.read_csv(result)
    assert len(table) and check(table)


def test_the_real_conversations_notebook_runs_on_a_data_set_it_is_given_and_says_so(tmp_path):
    import nbformat

    data = Path(__file__).parent / "data" / "realtalk"  # fixtures in REALTALK's layout stand in for a download
    result = tmp_path / "result.csv"
    papermill.execute_notebook(str(NOTEBOOKS / "08_real_conversations.ipynb"), str(tmp_path / "out.ipynb"),
                               parameters={"data": str(data), "data_format": "realtalk", "conversation": 1,
                                           "budgets": [200, 400], "layer_budgets": [400], "show_widgets": False,
                                           "strategies": ["two-layer:keyed", "rag:bm25"],
                                           "result_path": str(result)},
                               cwd=str(NOTEBOOKS), kernel_name="python3", progress_bar=False)
    said = "".join(o.get("text", "") for c in nbformat.read(tmp_path / "out.ipynb", 4).cells
                   if c.cell_type == "code" for o in c.get("outputs", []))
    assert f"ran on {data} (2 conversations): conversation 1 (" in said and "generated" not in said
    assert set(pd.read_csv(result)["strategy"]) == {"two-layer:keyed", "rag:bm25"}
