"""memkit as a user without the repository gets it: the wheel, installed into a clean venv, runs every
notebook it ships (copied out by `memkit notebooks`) under papermill, from a folder far from the repo."""

from __future__ import annotations

import subprocess
import sys
import venv
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.wheel


def run(*cmd: str | Path, cwd: Path | None = None, timeout: int = 900) -> str:
    out = subprocess.run([str(c) for c in cmd], cwd=cwd, capture_output=True, text=True, timeout=timeout)
    assert out.returncode == 0, f"{cmd}: {out.stdout[-2000:]}{out.stderr[-3000:]}"
    return out.stdout


def test_the_installed_wheel_runs_every_notebook(tmp_path):
    run(sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", tmp_path / "dist", ROOT)
    wheel = next((tmp_path / "dist").glob("memkit_lab-*.whl"))
    names = set(subprocess.run([sys.executable, "-m", "zipfile", "-l", str(wheel)], capture_output=True,
                               text=True).stdout.split())
    assert any(n.startswith("memkit/notebooks/08_real_conversations.ipynb") for n in names)

    env = tmp_path / "clean"
    venv.create(env, with_pip=True)
    py = env / "bin" / "python"
    run(py, "-m", "pip", "install", "-q", f"{wheel}[notebooks]", timeout=1800)
    work = tmp_path / "elsewhere"
    run(env / "bin" / "memkit", "notebooks", work)
    notebooks = sorted(work.glob("[0-9][0-9]_*.ipynb"))
    assert len(notebooks) >= 8
    for nb in notebooks:  # the defaults each notebook ships with, offline, in the clean venv's kernel
        run(py, "-m", "papermill", "--no-progress-bar", "-k", "python3", nb, tmp_path / f"out-{nb.name}",
            cwd=work)
