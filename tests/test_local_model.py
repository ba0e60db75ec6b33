"""The model path against a real model server: llama.cpp's OpenAI-compatible server (llama-cpp-python) serving
SmolLM2-135M-Instruct, both from the ``local-llm`` extra, configured the way a user does (``MEMKIT_LLM_*``).

A 135M model's facts are often wrong; these tests assert only what must hold with *any* model: every request
bounded in time, every turn accounted for (a fact, nothing durable, given up, or waiting), nothing extracted
twice, nothing lost when the server crashes and the client restarts. Faults a real server cannot be made to
show (a reply cut mid-JSON, a 500 on the third call) stay with the fake server (tests/fake_openai.py).
"""

from __future__ import annotations

import sys

import pytest

from memkit import FactStore, Memory
from memkit.config import Settings
from memkit.errors import ModelUnavailable
from memkit.eval.model_run import CONVERSATION, outcomes, play, written_twice
from memkit.models.llm import OpenAIChat
from memkit.write.path import EXTRACT_ATTEMPTS
from memkit.models.server import LlamaServer, packaged_model
from memkit.types import EventKind
from memkit.write.extract import KEY

# requests one observe() may make, each bounded by the timeout: an extraction and its one retry, the llm
# policy's plan, and a summary when the window folds
REQUESTS_PER_TURN = 4


@pytest.fixture(scope="module")
def llama(tmp_path_factory: pytest.TempPathFactory):
    try:
        server = LlamaServer(log=tmp_path_factory.mktemp("llama") / "server.log").start(timeout=300)
    except ModelUnavailable as e:  # only a server that crashed on its first reply: see LlamaServer.start
        pytest.skip(f"llama.cpp cannot run on this machine as built: {e}")
    yield server
    server.stop()


def _memory(llama: LlamaServer, path, embedder) -> Memory:
    # the shipped defaults with a model configured (LLM extractor and summarizer), the llm policy, and a small
    # window so that the summarizer folds
    return Memory.from_settings(Settings.from_env(llama.env()), store=FactStore.persistent(str(path), embedder),
                                policy="llm", window_tokens=60)


def test_the_packaged_model_is_found_without_importing_its_package():
    assert packaged_model().suffix == ".gguf" and packaged_model().stat().st_size > 50_000_000


def test_a_real_server_that_crashes_loses_no_turn_and_extracts_none_twice(llama, tmp_path, embedder):
    settings = Settings.from_env(llama.env())
    m = _memory(llama, tmp_path / "store", embedder)
    runs = play(m, "u", "s", CONVERSATION[:6])  # Tuesday's first three user turns, with the server up
    assert llama.requests() >= 3
    bound = REQUESTS_PER_TURN * settings.timeout
    assert max(r.seconds for r in runs) <= bound, [(r.turn_id, round(r.seconds, 1)) for r in runs]

    llama.kill()  # SIGKILL: the server is gone mid-conversation
    down = play(m, "u", "s", CONVERSATION[6:10], start=6)
    for r in down:
        if r.role == "user":  # the turn waits: an ERROR event that says so, and its record still marked
            assert r.events == (EventKind.ERROR.value,), r
    assert {t.id for _, t, _ in m.pending_turns} >= {r.turn_id for r in down if r.role == "user"}
    m.close()  # the client stops too

    llama.start(timeout=300)
    m = _memory(llama, tmp_path / "store", embedder)  # a new client on the same records
    # flushed until nothing waits: a turn whose replies stay unusable is given up after its attempts, and one
    # that met a timeout on a loaded machine waits for the next flush (a state, not a count of flushes)
    for _ in range(EXTRACT_ATTEMPTS * 10):
        if not m.pending_turns:
            break
        m.flush()
    user_turns = [r.turn_id for r in runs + down if r.role == "user"]
    account = outcomes(m, "u", user_turns)
    assert set(account) == set(user_turns) and "pending" not in account.values(), account
    assert m.pending_turns == [] and m.pending == []
    assert written_twice(m, "u") == []
    keys = [f.key for f in m.store.get("u") if f.key]  # whatever the model sent: one current fact per key, no junk key
    assert len(keys) == len(set(keys)) and all(KEY.fullmatch(k) for k in keys), keys
    asked = llama.requests()
    assert m.flush() == [] and llama.requests() == asked  # settled: nothing is asked again
    m.close()


def test_a_reply_cancelled_at_the_timeout_stops_the_generation_on_the_server(llama):
    # a long reply with a one-second bound: memkit hangs up, and llama.cpp's server stops generating (it logs
    # the disconnect) instead of going on behind its model lock while the next request waits
    import time

    before = len(llama.log.read_text(errors="replace"))
    chat = OpenAIChat("local", base_url=llama.base_url, timeout=1.0, max_tokens=1500)
    with pytest.raises(ModelUnavailable, match="cancelled"):
        chat.complete([{"role": "user", "content": "Write a very long story about a dragon who learns to cook, "
                                                   "in at least 1000 words."}])
    assert chat.sent == 1  # not sent again
    for _ in range(100):
        if "Disconnected from client" in llama.log.read_text(errors="replace")[before:]:
            break
        time.sleep(0.1)
    assert "Disconnected from client" in llama.log.read_text(errors="replace")[before:]
    assert OpenAIChat("local", base_url=llama.base_url, timeout=60.0).complete([{"role": "user", "content": "Say hi."}])


def test_a_server_that_dies_on_its_first_reply_is_named_at_start(tmp_path):
    # a real process in llama.cpp's place that answers /v1/models and dies of SIGSEGV on a completion, as a
    # llama-cpp-python built for instructions the CPU does not run does (LlamaServer.start's probe)
    script = tmp_path / "crashing_server.py"
    script.write_text(
        "import os, signal, sys\n"
        "from http.server import BaseHTTPRequestHandler, HTTPServer\n"
        "class H(BaseHTTPRequestHandler):\n"
        "    def do_GET(self):\n"
        "        self.send_response(200); self.end_headers(); self.wfile.write(b'{\"data\": []}')\n"
        "    def do_POST(self):\n"
        "        os.kill(os.getpid(), signal.SIGSEGV)\n"
        "HTTPServer(('127.0.0.1', int(sys.argv[1])), H).serve_forever()\n")

    class Crashing(LlamaServer):
        def command(self) -> list[str]:
            return [sys.executable, str(script), str(self.port)]

    server = Crashing(model=tmp_path / "unused.gguf", log=tmp_path / "server.log")
    with pytest.raises(ModelUnavailable, match=r"died on its first reply \(signal 11\).*GGML_NATIVE=OFF"):
        server.start(timeout=30)
    assert server.proc.poll() == -11


def test_the_langgraph_agent_example_runs_against_the_real_server(llama, tmp_path):
    """examples/langgraph_agent.py configured as a user would (MEMKIT_LLM_* of the running server): both
    threads answer, the second thread's checkpoint holds only its own messages, and what the first thread was
    told is in memkit's store afterwards. What a 135M model answers is not asserted."""
    import os
    import subprocess
    from pathlib import Path

    pytest.importorskip("langgraph")
    root = Path(__file__).resolve().parents[1]
    r = subprocess.run([sys.executable, str(root / "examples" / "langgraph_agent.py"), str(tmp_path / "agent")],
                       capture_output=True, text=True, timeout=600,  # short answers, waited for on a busy machine
                       env={**llama.env(), "MEMKIT_LLM_TIMEOUT": "120", "MEMKIT_LLM_MAX_TOKENS": "48"})
    assert r.returncode == 0, r.stderr[-3000:]
    assert "[tue] assistant: " in r.stdout and "[fri] assistant: " in r.stdout
    assert "[fri] the checkpointer holds 2 messages of this thread" in r.stdout
    store = FactStore.persistent(str(tmp_path / "agent" / "memory"))
    try:
        assert any("metric" in f.text for f in store.profile("u1"))
        assert len(store.episodes("u1")) == 4  # both questions and both answers, kept as past turns
    finally:
        store.close()
