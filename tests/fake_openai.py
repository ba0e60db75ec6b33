"""A small OpenAI-compatible HTTP server on loopback for tests: replies are queued, requests recorded.

It stands in for a remote model (the one part that cannot exist here); memkit talks to it through the
real ``openai`` client, so the HTTP path, JSON mode and error handling are exercised for real.
"""

from __future__ import annotations

import hashlib
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


class FakeOpenAI:
    def __init__(self, embed_dim: int = 8, reject_json_mode: bool = False, reject_schema: bool = False,
                 like_llama_cpp: bool = False) -> None:
        self.replies: list[str] = []
        # "500", "429", "empty", "slow:<seconds>", "400", "drip:<seconds>" (a streamed reply, one word per
        # <seconds>), "cut" (a streamed reply that stops halfway, before its last chunk) or "plain" (a streamed
        # request answered with one JSON body, as some servers and proxies do): one per request, in order
        self.faults: list[str] = []
        self.cancelled = 0  # streamed replies the client hung up on before their end
        self.requests: list[dict[str, Any]] = []
        self.embed_dim = embed_dim
        self.reject_json_mode = reject_json_mode  # refuse any response_format (a server without JSON mode)
        self.reject_schema = reject_schema  # refuse a schema in any form (JSON mode without structured output)
        # answer json_schema as llama-cpp-python's server does, with a 500 wrapping its validation error, and take
        # the schema inside JSON mode ({"type": "json_object", "schema": ...})
        self.like_llama_cpp = like_llama_cpp
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:  # noqa: N802
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                fake.requests.append({"path": self.path, "body": body, "auth": self.headers.get("Authorization")})
                drip, cut, plain = 0.0, False, False
                if fake.faults:
                    fault = fake.faults.pop(0)
                    if fault == "cut":
                        cut = True
                    elif fault == "plain":
                        plain = True
                    elif fault.startswith("drip:"):
                        drip = float(fault[5:])
                    elif fault.startswith("slow:"):
                        import time

                        time.sleep(float(fault[5:]))
                    elif fault == "empty":
                        self.send_response(200)
                        self.send_header("Content-Type", "application/json")
                        self.send_header("Content-Length", "0")
                        self.end_headers()
                        return
                    else:
                        return self._send(int(fault), {"error": {"message": f"injected {fault}", "type": "server_error"}})
                if self.path.endswith("/chat/completions"):
                    fmt = body.get("response_format", {})
                    if fake.like_llama_cpp and fmt.get("type") == "json_schema":
                        return self._send(500, {"error": {"message": "1 validation error: ('body', 'response_format', "
                                                          "'type') Input should be 'text' or 'json_object'",
                                                          "type": "internal_server_error"}})
                    schema = fmt.get("type") == "json_schema" or "schema" in fmt
                    if (fake.reject_json_mode and "response_format" in body) or (fake.reject_schema and schema):
                        return self._send(400, {"error": {"message": "response_format not supported", "type": "invalid_request_error"}})
                    content = fake.replies.pop(0) if fake.replies else '{"facts": []}'
                    if body.get("stream") and not plain:
                        return self._stream(body["model"], content, drip, cut)
                    return self._send(200, {
                        "id": "chatcmpl-1", "object": "chat.completion", "created": 0, "model": body["model"],
                        "choices": [{"index": 0, "finish_reason": "stop",
                                     "message": {"role": "assistant", "content": content}}],
                        "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}})
                if self.path.endswith("/embeddings"):
                    texts = body["input"] if isinstance(body["input"], list) else [body["input"]]
                    data = [{"object": "embedding", "index": i, "embedding": fake.vector(t)} for i, t in enumerate(texts)]
                    return self._send(200, {"object": "list", "data": data, "model": body["model"],
                                            "usage": {"prompt_tokens": 1, "total_tokens": 1}})
                self._send(404, {"error": {"message": "not found"}})

            def _stream(self, model: str, content: str, drip: float, cut: bool = False) -> None:
                """The reply as server-sent events, a word at a time (``drip`` seconds apart), as
                llama.cpp's servers stream; a client that hangs up is counted in ``cancelled``."""
                import re
                import time

                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.end_headers()
                words = re.findall(r"\S+\s*|\s+", content) or [""]
                if cut:  # the first half, and the connection closes: no last chunk, no [DONE]
                    for word in words[:max(1, len(words) // 2)]:
                        chunk = {"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 0, "model": model,
                                 "choices": [{"index": 0, "delta": {"content": word}, "finish_reason": None}]}
                        self.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode())
                    self.wfile.flush()
                    self.close_connection = True
                    return
                try:
                    for i, word in enumerate(words):
                        chunk = {"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 0, "model": model,
                                 "choices": [{"index": 0, "delta": {"content": word},
                                              "finish_reason": "stop" if i == len(words) - 1 else None}]}
                        self.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode())
                        self.wfile.flush()
                        time.sleep(drip)
                    self.wfile.write(b"data: [DONE]\n\n")
                    self.wfile.flush()
                except (BrokenPipeError, ConnectionResetError):
                    fake.cancelled += 1

            def _send(self, code: int, payload: dict[str, Any]) -> None:
                raw = json.dumps(payload).encode()
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(raw)))
                self.end_headers()
                self.wfile.write(raw)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def vector(self, text: str) -> list[float]:
        """A deterministic toy embedding: bytes of the text's hash."""
        h = hashlib.sha256(text.encode()).digest()
        return [b / 255.0 + 0.01 for b in h[: self.embed_dim]]

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def enqueue(self, *replies: str) -> None:
        self.replies.extend(replies)

    def fail(self, *faults: str) -> None:
        """Answer the next requests with these faults instead of a reply."""
        self.faults.extend(faults)

    def __enter__(self) -> "FakeOpenAI":
        self.thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.server.shutdown()
        self.server.server_close()
