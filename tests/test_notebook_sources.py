"""The notebooks' py:percent sources and their .ipynb pairs, and the copies the installed package hands out."""

import io
import json
import subprocess
import sys
from pathlib import Path

import jupytext
import pytest

NOTEBOOKS = Path(__file__).resolve().parents[1] / "notebooks"
SOURCES = sorted(NOTEBOOKS.glob("[0-9][0-9]_*.py"))


def _cells(path: Path) -> list[tuple[str, str, tuple[str, ...]]]:
    nb = jupytext.read(path)
    return [(c.cell_type, c.source.strip(), tuple(c.metadata.get("tags", ()))) for c in nb.cells]


def test_every_notebook_has_a_text_source():
    assert {p.stem for p in SOURCES} == {p.stem for p in NOTEBOOKS.glob("[0-9][0-9]_*.ipynb")}
    assert len(SOURCES) >= 8


@pytest.mark.parametrize("source", SOURCES, ids=lambda p: p.stem)
def test_the_ipynb_matches_its_text_source(source):
    # an edit to one side that did not reach the other (run `jupytext --sync` or scripts/run_notebooks.py)
    assert _cells(source.with_suffix(".ipynb")) == _cells(source)


@pytest.mark.parametrize("source", SOURCES, ids=lambda p: p.stem)
def test_executed_notebooks_store_their_widget_state(source):
    nb = json.loads(source.with_suffix(".ipynb").read_text("utf-8"))
    uses_widgets = any("application/vnd.jupyter.widget-view+json" in o.get("data", {})
                       for c in nb["cells"] for o in c.get("outputs", ()))
    if uses_widgets:
        state = nb["metadata"]["widgets"]["application/vnd.jupyter.widget-state+json"]["state"]
        views = [o["data"]["application/vnd.jupyter.widget-view+json"]["model_id"]
                 for c in nb["cells"] for o in c.get("outputs", ()) if "application/vnd.jupyter.widget-view+json" in o.get("data", {})]
        assert views and all(v in state for v in views)


def test_memkit_notebooks_copies_them_out_and_keeps_what_is_there(tmp_path):
    run = lambda *a: subprocess.run([sys.executable, "-m", "memkit", "notebooks", str(tmp_path), *a],
                                    capture_output=True, text=True, cwd=tmp_path)
    out = run()
    assert out.returncode == 0, out.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        [p.name for p in SOURCES] + [p.with_suffix(".ipynb").name for p in SOURCES])
    again = run()
    assert again.returncode == 2 and "--force" in again.stderr
    assert run("--force").returncode == 0


def test_notebook_code_is_linted():
    # undefined names, unused imports and the like, in the cells as users read them
    from pyflakes.api import checkPath
    from pyflakes.reporter import Reporter

    out, err = io.StringIO(), io.StringIO()
    problems = sum(checkPath(str(p), Reporter(out, err)) for p in SOURCES)
    assert problems == 0, out.getvalue() + err.getvalue()
