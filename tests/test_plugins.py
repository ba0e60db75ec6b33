"""Plugins by entry point (docs/extending.md): a package that declares ``[project.entry-points."memkit.plugins"]``
is loaded at the registry's first lookup, and what it registers is reachable from the CLI like a built-in. The
package here is a real distribution on the path (its ``.dist-info`` with ``entry_points.txt``, what pip writes),
found by importlib.metadata in a process of its own."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

PLUGIN = textwrap.dedent('''
    from memkit import registry
    from memkit.write.reconcile import KeyedPolicy


    class Mine(KeyedPolicy):
        """Keyed reconciliation under another name: a third party's policy."""

        name = "mine"


    registry.register("policy", "mine", Mine)
''')


def _installed(folder: Path, module: str, source: str) -> dict[str, str]:
    """A distribution ``memkit-mine`` on the path ``folder``: its module and its metadata with one entry point."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{module}.py").write_text(source)
    info = folder / "memkit_mine-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: memkit-mine\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(f"[memkit.plugins]\nmine = {module}\n")
    return {**os.environ, "PYTHONPATH": os.pathsep.join([str(folder), os.environ.get("PYTHONPATH", "")])}


def _memkit(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "memkit.cli", *args], capture_output=True, text=True, env=env,
                          timeout=600, cwd=ROOT)


def test_an_installed_plugins_policy_is_listed_and_runs_as_a_two_layer_strategy(tmp_path):
    env = _installed(tmp_path / "site", "memkit_mine", PLUGIN)
    listed = _memkit(env, "components")
    assert listed.returncode == 0, listed.stderr
    assert "  mine " in listed.stdout and "two-layer:mine" in listed.stdout and "memkit_mine" in listed.stdout
    run = _memkit(env, "bench", "--data", str(ROOT / "data" / "suite.jsonl"), "--limit", "1", "--strategy",
                  "two-layer:mine", "--budget", "400", "--no-turn-tokens", "--embed-cache", "off",
                  "--out", str(tmp_path / "out"))
    assert run.returncode == 0, run.stderr[-2000:]
    assert "two-layer:mine" in (tmp_path / "out" / "results.csv").read_text()


def test_a_plugin_that_fails_to_load_is_named(tmp_path):
    env = _installed(tmp_path / "site", "memkit_broken", "raise RuntimeError('half installed')\n")
    listed = _memkit(env, "components")
    assert listed.returncode == 2, listed.stdout
    assert "plugin 'mine' (memkit_broken) failed to load: RuntimeError: half installed" in listed.stderr
    assert "Traceback" not in listed.stderr


def test_without_the_plugin_its_strategy_is_unknown(tmp_path):
    run = _memkit(dict(os.environ), "bench", "--data", str(ROOT / "data" / "suite.jsonl"), "--limit", "1",
                  "--strategy", "two-layer:mine", "--out", str(tmp_path / "out"))
    assert run.returncode == 2 and "unknown policy 'mine'" in run.stderr
