import subprocess
import sys


def test_demo_shows_metric_in_fridays_context():
    out = subprocess.run([sys.executable, "-m", "memkit.cli", "demo"], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert "metric preference in Friday's context: YES (without memory: NO)" in out.stdout
    friday = out.stdout.split("== Context Friday's first turn receives")[1].split("== Without")[0]
    assert "User prefers metric units." in friday
    assert "hot yesterday" not in out.stdout.split("== Semantic layer")[1].split("== History")[0]


def test_named_errors_exit_cleanly(monkeypatch):
    env = {"PATH": "", "MEMKIT_LLM_BASE_URL": "http://127.0.0.1:9/v1", "HOME": "/tmp"}
    out = subprocess.run([sys.executable, "-m", "memkit.cli", "demo"], capture_output=True, text=True, env=env, timeout=300)
    assert out.returncode == 2 and "ConfigError" in out.stderr and "MEMKIT_LLM_MODEL" in out.stderr
