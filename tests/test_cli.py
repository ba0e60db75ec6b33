import re
import subprocess
import sys
from pathlib import Path

import pandas as pd
from conftest import interruptible

ROOT = Path(__file__).resolve().parents[1]


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


def _memkit(*args, cwd=None):
    return subprocess.run([sys.executable, "-m", "memkit.cli", *args], capture_output=True, text=True, timeout=300, cwd=cwd)


def test_cli_edges_are_one_line_named_errors(tmp_path):
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    blocker = tmp_path / "a-file"
    blocker.write_text("x")
    nb = "notebooks/07_strategies.ipynb"
    cases = [
        (("bench", "--data", str(empty), "--out", str(tmp_path / "o")), "no conversations"),
        (("bench", "--data", "data/chats.jsonl", "--budget", "-5", "--out", str(tmp_path / "o")), "--budget"),
        (("bench", "--data", "data/chats.jsonl", "--limit", "1", "--out", str(blocker / "out")), "cannot write"),
        (("bench", "--data", "data/chats.jsonl", "--strategy", "two-layer:llm", "--out", str(tmp_path / "o")),
         "MEMKIT_LLM_MODEL"),
        (("bench", "--data", "data/chats.jsonl", "--extractor", "llm", "--out", str(tmp_path / "o")),
         "--extractor llm need a chat model"),
        (("bench", "--data", "data/chats.jsonl", "--extractor", "regex", "--out", str(tmp_path / "o")), "regex"),
        (("bench-scale", "--size", "abc", "--out", str(tmp_path / "o")), "--size"),
        (("serve", str(tmp_path / "chroma"), "--max-users", "0"), "max_users"),
        (("sweep", nb, "-p", "=3", "--out", str(tmp_path / "o")), "NAME=V1"),
        (("sweep", nb, "-p", "budget=abc", "--out", str(tmp_path / "o")), "default is 1200"),
        (("sweep", nb, "-p", "budget=[1,", "--out", str(tmp_path / "o")), "JSON list"),
        (("sweep", nb, "-p", "bugdet=3", "--out", str(tmp_path / "o")), "no parameter 'bugdet'"),
    ]
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    for args, message in cases:
        out = _memkit(*args, cwd=root)
        assert out.returncode == 2, (args, out.stderr[-500:])
        assert "Traceback" not in out.stderr and message in out.stderr, (args, out.stderr[-500:])
        assert len(out.stderr.strip().splitlines()) <= 2, out.stderr  # a progress line at most, then the error


def test_serve_prints_a_config_that_bounds_the_servers_index_cache(tmp_path):
    import yaml

    out = _memkit("serve", str(tmp_path / "my data"), "--port", "8123", "--max-users", "10", "--print-config")
    assert out.returncode == 0, out.stderr
    config = yaml.safe_load(out.stdout)
    assert config["persist_path"] == str(tmp_path / "my data") and config["port"] == 8123
    assert config["segment_manager"]["hnsw_index_pool_cache_config"]["memory"]["capacity"] == 10  # one index per user


def test_every_option_of_every_command_has_help():
    import argparse

    from memkit.cli import build_parser

    commands = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    assert {"demo", "serve", "sweep", "notebooks", "bench", "bench-scale", "bench-embed", "generate"} <= set(commands.choices)
    for name, sub in commands.choices.items():
        for action in sub._actions:
            if isinstance(action, argparse._HelpAction):
                continue
            text = sub._get_formatter()._expand_help(action) if action.help else ""
            assert text.strip(), f"memkit {name} {action.dest} has no help"
            assert "(default: None)" not in text, f"memkit {name} {action.dest}: {text}"
    bench = "".join(commands.choices["bench"].format_help().split())  # argparse wraps at hyphens
    assert "(default:full,window,summary,two-layer:keyed,two-layer:similarity)" in bench
    assert "(default: chats)" in commands.choices["generate"].format_help()


def test_version_and_help_answer_without_importing_the_library():
    code = ("import sys; from memkit.cli import main\n"
            "try:\n    main(['--help'])\nexcept SystemExit:\n    pass\n"
            "heavy = [m for m in ('chromadb', 'pandas', 'onnxruntime', 'memkit.memory', 'memkit.eval.runner') "
            "if m in sys.modules]\nprint('heavy:', heavy)")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0 and "bench" in r.stdout and "heavy: []" in r.stdout, r.stdout + r.stderr
    r = subprocess.run([sys.executable, "-m", "memkit.cli", "--version"], capture_output=True, text=True, timeout=120)
    from memkit import __version__

    assert r.returncode == 0 and r.stdout.strip() == f"memkit {__version__}"


def test_bench_takes_comma_separated_strategies_and_names_an_unknown_one(tmp_path):
    r = subprocess.run([sys.executable, "-m", "memkit.cli", "bench", "--data", str(ROOT / "tests" / "data" / "beam" / "2"),
                        "--strategy", "window,rag:bm25", "--budget", "200", "--no-turn-tokens", "--out", str(tmp_path)],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    import json

    run = json.loads((tmp_path / "run.json").read_text())
    assert run["strategies"] == ["window", "rag:bm25"] and run["format"] == "beam"
    assert run["command"].startswith("memkit bench --data ") and "window,rag:bm25" in run["command"]
    assert "1 conversations (beam): 1 questions" in r.stdout
    assert r.stdout.split("\n", 2)[1].split()[:3] == ["strategy", "budget", "evidence_recall"]  # the summary's header
    r = subprocess.run([sys.executable, "-m", "memkit.cli", "bench", "--data", str(ROOT / "tests" / "data" / "beam" / "2"),
                        "--strategy", "window,nope", "--out", str(tmp_path)], capture_output=True, text=True, timeout=300)
    assert r.returncode == 2 and "unknown strategy 'nope'" in r.stderr and "rag:bm25" in r.stderr


def test_bench_records_what_the_run_cost_cold_and_warm(tmp_path):
    import json

    from memkit.eval.report import cost_line

    def bench(out):
        r = subprocess.run([sys.executable, "-m", "memkit.cli", "bench", "--data", str(ROOT / "tests" / "data" / "beam"),
                            "--strategy", "rag:dense,two-layer:keyed", "--budget", "200", "--no-turn-tokens", "--jobs", "2",
                            "--embed-cache", str(tmp_path / "e.sqlite3"), "--out", str(out)],
                           capture_output=True, text=True, timeout=600)
        assert r.returncode == 0, r.stderr
        return json.loads((out / "run.json").read_text())

    cold, warm = bench(tmp_path / "cold"), bench(tmp_path / "warm")
    c = cold["cost"]
    assert c["embedded"] > 0 and 0 < c["warm_up_s"] <= c["seconds"]
    assert c["seconds_per_conversation"] == round(c["seconds"] / cold["conversations"], 1)
    assert c["peak_rss_mb"]["main"] > 50 and c["peak_rss_mb"]["largest_worker"] > 50  # the 2 worker processes
    assert warm["cost"]["embedded"] == 0  # the first run's warm-up left every vector in the cache
    line = cost_line(cold)[0]
    assert f"{c['embedded']:,} texts" in line and "2 processes" in line and "largest worker" in line


def test_notebooks_says_where_it_signed_and_trust_holds_only_there(tmp_path):
    import os

    import nbformat
    from nbformat.sign import NotebookNotary

    env = {k: v for k, v in os.environ.items() if not k.startswith("JUPYTER")}
    home, other = tmp_path / "home", tmp_path / "lab-data"
    r = subprocess.run([sys.executable, "-m", "memkit.cli", "notebooks", str(tmp_path / "a")], capture_output=True,
                       text=True, timeout=300, env={**env, "HOME": str(home)})
    assert r.returncode == 0, r.stderr
    default_db = home / ".local" / "share" / "jupyter" / "nbsignatures.db"
    assert f"in {default_db}" in r.stdout and "jupyter trust" in r.stdout
    nb = nbformat.read(tmp_path / "a" / "01_two_layers.ipynb", as_version=4)
    assert NotebookNotary(data_dir=str(default_db.parent)).check_signature(nb)
    other.mkdir()
    assert not NotebookNotary(data_dir=str(other)).check_signature(nb)  # another data dir: untrusted

    r = subprocess.run([sys.executable, "-m", "memkit.cli", "notebooks", str(tmp_path / "b"), "--jupyter-data-dir",
                        str(other)], capture_output=True, text=True, timeout=300, env={**env, "HOME": str(home)})
    assert r.returncode == 0 and f"in {other / 'nbsignatures.db'}" in r.stdout
    assert NotebookNotary(data_dir=str(other)).check_signature(
        nbformat.read(tmp_path / "b" / "08_real_conversations.ipynb", as_version=4))


def test_ctrl_c_in_bench_says_what_was_saved_and_how_to_resume(tmp_path):
    import signal
    import time

    out = tmp_path / "out"
    # ten conversations with two-layer memory: once the first is saved, the other nine take far longer than a
    # signal takes to arrive, however loaded the machine (with four short jobs, a loaded machine finished first)
    proc = subprocess.Popen([sys.executable, "-m", "memkit.cli", "bench", "--data", str(ROOT / "data" / "chats.jsonl"),
                             "--strategy", "window,rag:bm25,two-layer:keyed", "--no-turn-tokens", "--embed-cache", "off",
                             "--out", str(out)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=interruptible)
    deadline = time.time() + 240
    while time.time() < deadline and not list((out / "parts").glob("job-*.pkl")):
        time.sleep(0.2)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=120)
    saved = len(list((out / "parts").glob("job-*.pkl")))
    assert proc.returncode == 130, err
    assert f"{saved} jobs saved in {out / 'parts'}" in err and "--resume" in err and "Traceback" not in err


def test_bench_starts_and_stops_a_local_dask_cluster(tmp_path):
    r = subprocess.run([sys.executable, "-m", "memkit.cli", "bench", "--data", str(ROOT / "tests" / "data" / "beam"),
                        "--strategy", "rag:bm25", "--budget", "200", "--no-turn-tokens", "--embed-cache", "off",
                        "--scheduler", "local:1", "--out", str(tmp_path)], capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    import json

    run = json.loads((tmp_path / "run.json").read_text())
    assert run["scheduler"] == "local:1"
    assert run["cost"]["peak_rss_mb"]["largest_worker"] > 0  # the cluster's processes, ended within the run
    r = subprocess.run([sys.executable, "-m", "memkit.cli", "bench", "--data", str(ROOT / "tests" / "data" / "beam"),
                        "--scheduler", "local:0", "--out", str(tmp_path)], capture_output=True, text=True, timeout=120)
    assert r.returncode == 2 and "local:N takes a positive number" in r.stderr


def test_bench_scale_writes_its_table_and_command_for_the_benchmarks_page(tmp_path):
    from memkit.eval.report import scale_section

    out = _memkit("bench-scale", "--size", "2x6", "--size", "3x4", "--seed", "4", "--seed", "0", "--queries", "4",
                  "--out", str(tmp_path / "scale"))
    assert out.returncode == 0, out.stderr
    assert (tmp_path / "scale" / "scale.cmd").read_text().startswith("memkit bench-scale --size 2x6 --size 3x4 --seed 4")
    # each size with each seed asked for, whatever its place in the command (the data drawn follows the seed)
    table = pd.read_csv(tmp_path / "scale" / "scale.csv")
    assert list(zip(table["users"], table["seed"])) == [(2, 4), (2, 0), (3, 4), (3, 0)]
    section = scale_section(tmp_path / "scale", "Scale")
    row = next(line for line in section.splitlines() if line.startswith("| persistent 3 × 4, seed 0 |"))
    assert row.count("|") == 10 and "×" in row.split("|")[5]  # every column filled, the ratio as a factor
    assert re.search(r"× \[\d+\.\d\d, \d+\.\d\d\]", row.split("|")[5])  # with the reads' own interval


def test_an_error_ctrl_c_caused_counts_as_ctrl_c():
    from memkit.eval.cli import _ctrl_c

    try:
        try:
            raise KeyboardInterrupt
        except KeyboardInterrupt as k:
            raise ImportError("initialization failed") from k  # what onnxruntime's import does with it
    except ImportError as e:
        assert _ctrl_c(e)
    assert not _ctrl_c(ImportError("no module")) and _ctrl_c(KeyboardInterrupt())


def test_data_list_says_where_each_format_is_published_and_check_names_what_is_wrong(capsys, monkeypatch):
    from dataclasses import replace

    from memkit.cli import main
    from memkit.eval import catalog
    from memkit.eval.datasets import FORMATS

    assert set(catalog.BY_FORMAT) == set(FORMATS)  # each format the loaders read is listed
    assert main(["data", "list"]) == 0
    listed = capsys.readouterr().out
    assert all(f"(--format {f})" in listed for f in FORMATS) and "https://github.com/mohammadtavakoli78/BEAM" in listed
    beam = ROOT / "tests" / "data" / "beam"
    assert main(["data", "check", str(beam)]) == 1  # two fixtures: no published release
    said = capsys.readouterr().out
    assert "as beam: 2 conversations, 3 sessions, 10 turns, 6 questions" in said
    assert "problem: 2 conversations and 6 questions match no published release of BEAM" in said
    assert "1 without evidence" in said  # what the loader left out, counted
    # a download whose counts are a release's passes (the fixture stands in for one)
    monkeypatch.setitem(catalog.BY_FORMAT, "beam", replace(catalog.BY_FORMAT["beam"],
                                                          releases=(catalog.Release("fixture", 2, 6),)))
    assert main(["data", "check", str(beam), "--format", "beam"]) == 0
    assert "ok: a published release" in capsys.readouterr().out
    assert main(["data", "check", str(beam), "--format", "realtalk"]) == 2  # the wrong layout: a named error
    assert "DatasetError" in capsys.readouterr().err


def test_an_embedding_cache_that_cannot_be_a_file_is_refused_before_a_run(tmp_path):
    """--embed-cache names a file: a folder (or a file whose folder cannot be made) is a usage error that names
    it, from memkit bench and the measuring scripts alike, not a warning and a run that embeds everything twice."""
    (tmp_path / "taken").write_text("a file where the folder would be")
    bench = [sys.executable, "-m", "memkit.cli", "bench", "--data", str(ROOT / "tests" / "data" / "beam"),
             "--strategy", "rag:dense", "--budget", "200", "--no-turn-tokens", "--out", str(tmp_path / "out")]
    layers = [sys.executable, str(ROOT / "scripts" / "measure_layers.py"), "--data", str(ROOT / "tests" / "data" / "beam"),
              "--format", "beam", "--name", "x", "--variant", "rag:dense", "--out", str(tmp_path / "out")]
    for command in (bench, layers):
        for where, said in ((tmp_path, "is a folder; give a file in it"),
                            (tmp_path / "taken" / "e.sqlite3", "cannot make the folder of")):
            r = subprocess.run([*command, "--embed-cache", str(where)], capture_output=True, text=True, timeout=300)
            assert r.returncode == 2 and said in r.stderr and "Traceback" not in r.stderr, r.stderr
            assert not (tmp_path / "out").exists()
    r = subprocess.run([*bench, "--embed-cache", str(tmp_path / "new" / "e.sqlite3")], capture_output=True, text=True,
                       timeout=300)
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "new" / "e.sqlite3").is_file() and "CacheUnavailable" not in r.stderr
