"""Execute the notebooks from their py:percent sources in a real kernel and write the .ipynb pairs with
their outputs and widget state (what `pytest --nbval` compares, what JupyterLab renders on open).

    python scripts/run_notebooks.py [notebooks/05_recall.py ...]

Runs offline: MEMKIT_*/OPENAI_* variables are removed so committed outputs never depend on an endpoint.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import jupytext
from nbclient import NotebookClient

HERE = Path(__file__).resolve().parents[1] / "notebooks"


def main(paths: list[str]) -> None:
    for name in list(os.environ):
        if name.startswith(("MEMKIT_LLM", "MEMKIT_EMBED", "OPENAI_")):
            del os.environ[name]
    targets = [Path(p).with_suffix(".py") for p in paths] or sorted(HERE.glob("[0-9][0-9]_*.py"))
    total = time.perf_counter()
    for path in targets:
        nb = jupytext.read(path)
        start = time.perf_counter()
        NotebookClient(nb, timeout=600, kernel_name="python3", store_widget_state=True,
                       resources={"metadata": {"path": str(path.parent)}}).execute()
        for cell in nb.cells:
            cell.metadata.pop("execution", None)
        jupytext.write(nb, path.with_suffix(".ipynb"))
        print(f"{path.stem}: {time.perf_counter() - start:.1f} s")
    print(f"all: {time.perf_counter() - total:.1f} s")


if __name__ == "__main__":
    main(sys.argv[1:])
