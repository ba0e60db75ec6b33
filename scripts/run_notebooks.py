"""Execute the notebooks in a real kernel and store their outputs (what `pytest --nbval` compares against).

    python scripts/run_notebooks.py [notebooks/01_two_layers.ipynb ...]

Runs offline: MEMKIT_*/OPENAI_* variables are removed so committed outputs never depend on an endpoint.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import nbformat
from nbclient import NotebookClient

HERE = Path(__file__).resolve().parents[1] / "notebooks"


def main(paths: list[str]) -> None:
    for name in list(os.environ):
        if name.startswith(("MEMKIT_LLM", "MEMKIT_EMBED", "OPENAI_")):
            del os.environ[name]
    targets = [Path(p) for p in paths] or sorted(HERE.glob("[0-9][0-9]_*.ipynb"))
    total = time.perf_counter()
    for path in targets:
        nb = nbformat.read(path, as_version=4)
        start = time.perf_counter()
        NotebookClient(nb, timeout=600, kernel_name="python3", resources={"metadata": {"path": str(path.parent)}}).execute()
        for cell in nb.cells:
            cell.metadata.pop("execution", None)
        nbformat.write(nb, path)
        print(f"{path.name}: {time.perf_counter() - start:.1f} s")
    print(f"all: {time.perf_counter() - total:.1f} s")


if __name__ == "__main__":
    main(sys.argv[1:])
