"""A scripted OpenAI-compatible ``POST /v1/chat/completions`` server on loopback, for tests.

A real HTTP server (the standard library's, one thread per request): the code under test
talks to it exactly as to vLLM or OpenAI. Replies come from a queue of `Reply` objects, else
from ``responder(request_body)``; every request is logged (path, headers, parsed body) so tests
can assert what was sent and how many requests were made.

Misbehaviours on offer: text, tool calls (including malformed argument JSON), refusals, any
status with ``Retry-After``, garbage bodies, huge bodies, hangs before the headers, bodies
trickled byte by byte, gzip bombs and dropped connections.
"""

from __future__ import annotations

import gzip
import json
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


def completion(
    message: dict[str, Any],
    *,
    usage: tuple[int, int] | None = (10, 5),
    finish_reason: str = "stop",
    model: str = "fake-model",
) -> dict[str, Any]:
    out: dict[str, Any] = {
        "id": "chatcmpl-fake",
        "object": "chat.completion",
        "model": model,
        "choices": [{"index": 0, "message": message, "finish_reason": finish_reason}],
    }
    if usage is not None:
        out["usage"] = {
            "prompt_tokens": usage[0],
            "completion_tokens": usage[1],
            "total_tokens": sum(usage),
        }
    return out


@dataclass
class Reply:
    status: int = 200
    body: bytes = b""
    headers: dict[str, str] = field(default_factory=dict)
    hang: float = 0.0  # seconds to wait before sending anything
    trickle: float = 0.0  # seconds between body chunks
    chunk: int = 1
    drop: bool = False  # close the connection without a response
    declare_length: bool = True

    # -- constructors -----------------------------------------------------------------------
    @classmethod
    def json(cls, data: Any, status: int = 200, **kw: Any) -> Reply:
        headers = {"Content-Type": "application/json", **kw.pop("headers", {})}
        return cls(status=status, body=json.dumps(data).encode(), headers=headers, **kw)

    @classmethod
    def text(cls, content: str, **kw: Any) -> Reply:
        usage = kw.pop("usage", (10, 5))
        return cls.json(completion({"role": "assistant", "content": content}, usage=usage), **kw)

    @classmethod
    def tool_calls(cls, calls: Iterable[tuple[str, Any]], content: str | None = None) -> Reply:
        """``calls``: (name, arguments) — a dict is sent as JSON text, a str as is (so a
        malformed argument string is easy to script)."""
        tcs = [
            {
                "id": f"call_{i}",
                "type": "function",
                "function": {
                    "name": name,
                    "arguments": args if isinstance(args, str) else json.dumps(args),
                },
            }
            for i, (name, args) in enumerate(calls)
        ]
        msg = {"role": "assistant", "content": content, "tool_calls": tcs}
        return cls.json(completion(msg, finish_reason="tool_calls"))

    @classmethod
    def refusal(cls, text: str = "I can't help with that.") -> Reply:
        msg = {"role": "assistant", "content": None, "refusal": text}
        return cls.json(completion(msg))

    @classmethod
    def error(cls, status: int, retry_after: str | None = None, body: bytes = b"") -> Reply:
        headers = {"Retry-After": retry_after} if retry_after is not None else {}
        return cls(
            status=status, body=body or b'{"error": {"message": "scripted"}}', headers=headers
        )

    @classmethod
    def garbage(cls) -> Reply:
        return cls(body=b"\x00\xffthis is not json{{{", headers={"Content-Type": "text/plain"})

    @classmethod
    def huge(cls, n_bytes: int, declare_length: bool = True) -> Reply:
        return cls(body=b"x" * n_bytes, declare_length=declare_length)

    @classmethod
    def gzip_bomb(cls, n_bytes: int) -> Reply:
        body = gzip.compress(b" " * n_bytes)
        return cls(body=body, headers={"Content-Encoding": "gzip"})


Responder = Callable[[dict[str, Any]], Reply]


@dataclass
class LoggedRequest:
    path: str
    headers: dict[str, str]
    body: Any
    raw: bytes


class FakeOpenAI:
    def __init__(self, responder: Responder | None = None) -> None:
        self.responder = responder
        self.script: deque[Reply] = deque()
        self.requests: list[LoggedRequest] = []
        self._lock = threading.Lock()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:  # noqa: N802
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(min(length, 64 * 1024 * 1024))
                try:
                    body: Any = json.loads(raw)
                except ValueError:
                    body = None
                with outer._lock:
                    outer.requests.append(LoggedRequest(self.path, dict(self.headers), body, raw))
                    reply = outer.script.popleft() if outer.script else None
                if reply is None:
                    if not self.path.endswith("/chat/completions"):
                        reply = Reply.error(404)
                    elif outer.responder is None:
                        reply = Reply.error(500, body=b'{"error": "no scripted reply"}')
                    else:
                        reply = outer.responder(body if isinstance(body, dict) else {})
                outer._send(self, reply)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.httpd.block_on_close = False  # a hanging handler must not hold up shutdown
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        self._thread = threading.Thread(target=self.httpd.serve_forever, args=(0.05,), daemon=True)

    def _send(self, h: BaseHTTPRequestHandler, reply: Reply) -> None:
        try:
            if reply.hang:
                time.sleep(reply.hang)
            if reply.drop:
                h.connection.close()
                return
            h.send_response(reply.status)
            for k, v in reply.headers.items():
                h.send_header(k, v)
            if reply.declare_length:
                h.send_header("Content-Length", str(len(reply.body)))
            h.end_headers()
            if not reply.trickle:
                h.wfile.write(reply.body)
                return
            for i in range(0, len(reply.body), reply.chunk):
                h.wfile.write(reply.body[i : i + reply.chunk])
                h.wfile.flush()
                time.sleep(reply.trickle)
        except (BrokenPipeError, ConnectionResetError, OSError):
            pass  # the client gave up, as it should

    # -- control --------------------------------------------------------------------------------
    def start(self) -> FakeOpenAI:
        self._thread.start()
        return self

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()

    def queue(self, *replies: Reply) -> None:
        with self._lock:
            self.script.extend(replies)

    @property
    def count(self) -> int:
        with self._lock:
            return len(self.requests)

    def bodies(self) -> list[dict[str, Any]]:
        with self._lock:
            return [r.body for r in self.requests if isinstance(r.body, dict)]
