"""Servers the endpoint tests start: a tiny OpenAI-compatible server (plain http.server) and a proxy that puts faults
between it and Concord (429 with Retry-After, 500, a reply slower than the client's timeout, a body that is not
JSON, a slow reply). Both run in threads of the test process, on ports of their own."""

from __future__ import annotations

import json
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import MISSING, dataclass, field, fields
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

# The first answer token's top list the tiny server gives when asked for log-probs.
TOP_LOGPROBS = [("correct", -0.2), (" mis", -1.8), ("no", -3.0), ("yes", -4.0)]
# How often a server's loop looks for `shutdown()`: the standard half second made each test's close wait that long.
_POLL_SECONDS = 0.02


@dataclass
class TinyServer:
    """An OpenAI-compatible server: `/v1/models`, `/v1/chat/completions`, `/v1/completions`. `answer(body)` says
    what a chat reply holds (default: "Correct."); every request body is kept in `requests`."""

    models: list[str] = field(default_factory=lambda: ["tiny"])
    answer: Callable[[dict], str] = lambda body: "Correct."
    completions: bool = True
    logprobs: bool = True
    prompt_logprobs: bool = True
    latency: float = 0.0
    requests: list[dict] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)
    in_flight: int = 0
    most_in_flight: int = 0  # the most requests it was answering at once

    def __post_init__(self):
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def _send(self, status: int, payload: Any, headers: dict | None = None):
                data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                for key, value in (headers or {}).items():
                    self.send_header(key, value)
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self):
                if self.path.rstrip("/").endswith("/models"):
                    self._send(200, {"object": "list", "data": [{"id": m, "object": "model"} for m in server.models]})
                else:
                    self._send(404, {"error": {"message": "no such route"}})

            def do_POST(self):
                length = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(length) or b"{}")
                with server.lock:
                    server.requests.append({"path": self.path, **body})
                    server.in_flight += 1
                    server.most_in_flight = max(server.most_in_flight, server.in_flight)
                try:
                    if server.latency:
                        time.sleep(server.latency)
                    status, payload = server.reply(self.path, body)
                finally:
                    with server.lock:
                        server.in_flight -= 1
                self._send(status, payload)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(target=self.httpd.serve_forever, args=(_POLL_SECONDS,), daemon=True)
        self.thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()

    def reset(self, *, wait: float = 10.0) -> None:
        """Answer as a new server would: every setting at its default and no request seen. A request still in flight
        (a killed client's) is let finish first, so that it is counted by no later caller."""
        deadline = time.monotonic() + wait
        while self.in_flight and time.monotonic() < deadline:
            time.sleep(0.01)
        for spec in fields(self):
            if spec.name not in ("lock", "in_flight"):
                fresh = spec.default_factory() if spec.default_factory is not MISSING else spec.default
                setattr(self, spec.name, fresh)

    def posts(self) -> list[dict]:
        with self.lock:
            return [r for r in self.requests if r["path"].endswith(("completions", "messages"))]

    def reply(self, path: str, body: dict) -> tuple[int, dict]:
        if body.get("model") not in self.models:
            return 404, {"error": {"message": f"model {body.get('model')!r} not found"}}
        usage = {"prompt_tokens": 7, "completion_tokens": 2, "total_tokens": 9}
        if path.endswith("/v1/messages"):  # Anthropic's Messages API
            content = [{"type": "text", "text": self.answer(body)}]
            return 200, {"id": "m", "type": "message", "role": "assistant", "content": content, "model": body["model"],
                         "stop_reason": "end_turn", "usage": {"input_tokens": 5, "output_tokens": 1}}  # fmt: skip
        if path.endswith("/chat/completions"):
            text = self.answer(body)
            if body.get("response_format"):
                text = json.dumps({"label": text.strip().rstrip(".").lower()})
            choice: dict[str, Any] = {"index": 0, "message": {"role": "assistant", "content": text},
                                      "finish_reason": "stop"}  # fmt: skip
            if body.get("logprobs"):
                if not self.logprobs:
                    return 400, {"error": {"message": "logprobs are not supported"}}
                top = [{"token": t, "logprob": v, "bytes": None} for t, v in TOP_LOGPROBS]
                choice["logprobs"] = {"content": [{"token": top[0]["token"], "logprob": top[0]["logprob"],
                                                   "bytes": None, "top_logprobs": top}]}  # fmt: skip
            return 200, {"id": "x", "object": "chat.completion", "created": 0, "model": body["model"],
                         "choices": [choice], "usage": usage}  # fmt: skip
        if path.endswith("/completions"):
            if not self.completions:
                return 404, {"error": {"message": "no completions here"}}
            prompt = str(body.get("prompt", ""))
            text = f" continued {len(prompt)} s{body.get('seed')}"
            choice = {"index": 0, "text": text, "finish_reason": "length", "logprobs": None}
            reply = {"id": "x", "object": "text_completion", "created": 0, "model": body["model"],
                     "choices": [choice], "usage": usage}  # fmt: skip
            if "prompt_logprobs" in body:
                if not self.prompt_logprobs:
                    return 400, {"error": {"message": "prompt_logprobs are not supported"}}
                words = prompt.split(" ")
                # A token's log-prob falls with its length: a longer candidate scores lower, and no two alike.
                choice["prompt_logprobs"] = [None] + [
                    {str(i): {"logprob": -0.1 * len(word) - 0.01 * i, "rank": 1, "decoded_token": word}}
                    for i, word in enumerate(words[1:], 1)
                ]
            return 200, reply
        return 404, {"error": {"message": "no such route"}}


@dataclass
class FaultProxy:
    """Forwards to `upstream`, first answering with the faults queued in `faults` (one per request, in order):
    "429" (with Retry-After 0), "500", "timeout" (waits `hang` seconds, then nothing), "garbage" (200, not JSON),
    "slow" (waits `slow` seconds, then forwards)."""

    upstream: str
    faults: list[str] = field(default_factory=list)
    hang: float = 2.0
    slow: float = 0.3
    seen: list[str] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def __post_init__(self):  # noqa: C901 - one branch per fault, side by side
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def _send(self, status: int, data: bytes, headers: dict | None = None):
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                for key, value in (headers or {}).items():
                    self.send_header(key, value)
                self.end_headers()
                self.wfile.write(data)

            def _forward(self, method: str):
                length = int(self.headers.get("Content-Length") or 0)
                data = self.rfile.read(length) if length else None
                fault = None
                if method == "POST":
                    with proxy.lock:
                        fault = proxy.faults.pop(0) if proxy.faults else None
                        proxy.seen.append(fault or "ok")
                if fault == "429":
                    return self._send(429, b'{"error": {"message": "slow down"}}', {"Retry-After": "0"})
                if fault == "500":
                    return self._send(500, b'{"error": {"message": "the server broke"}}')
                if fault == "garbage":
                    return self._send(200, b"<html>not json</html>")
                if fault == "timeout":
                    time.sleep(proxy.hang)
                    self.close_connection = True
                    return None
                if fault == "slow":
                    time.sleep(proxy.slow)
                base = proxy.upstream.removesuffix("/v1")
                request = urllib.request.Request(base + self.path, data=data, method=method,
                                                 headers={"Content-Type": "application/json"})  # fmt: skip
                try:
                    with urllib.request.urlopen(request, timeout=30) as response:
                        self._send(response.status, response.read())
                except urllib.error.HTTPError as exc:
                    self._send(exc.code, exc.read())

            def do_GET(self):
                self._forward("GET")

            def do_POST(self):
                self._forward("POST")

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(target=self.httpd.serve_forever, args=(_POLL_SECONDS,), daemon=True)
        self.thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()
