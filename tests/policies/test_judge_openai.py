"""The ``openai`` judge against a fake OpenAI-compatible server on loopback."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from policies.audit import audit_trace
from policies.judge_openai import OpenAIJudge, parse_reply
from policies.judges import PairRequest, Proposal

from ._build import lock_unlock_trace


class FakeServer:
    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        self.mode = "smart"
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:  # noqa: N802
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                outer.requests.append({"path": self.path, "body": body})
                outer.headers.append(dict(self.headers))
                mode = outer.mode
                if mode == "slow":
                    time.sleep(0.6)
                if mode == "http500":
                    self.send_response(500)
                    self.end_headers()
                    return
                if mode == "garbage":
                    payload = b"this is not json"
                else:
                    payload = json.dumps(
                        {
                            "choices": [
                                {"message": {"role": "assistant", "content": outer.answer(body)}}
                            ]
                        }
                    ).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.httpd.block_on_close = False  # a slow handler must not hold up the test
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        self.thread = threading.Thread(target=self.httpd.serve_forever, args=(0.02,), daemon=True)

    def answer(self, body: dict[str, Any]) -> str:
        if self.mode == "bad_verdict":
            return '{"prefer": "C"}'
        user = body["messages"][-1]["content"]
        # a sensible verifier: the candidate that does nothing / completes beats the unlock
        a_line = next(line for line in user.splitlines() if line.startswith("Candidate A:"))
        twin_is_a = "unlock_account" not in a_line
        fence = "```json\n{}\n```" if self.mode == "fenced" else "{}"
        return fence.format(
            json.dumps(
                {
                    "prefer": "A" if twin_is_a else "B",
                    "fatal": {"A": not twin_is_a, "B": twin_is_a},
                    "scores": {"A": 4 if twin_is_a else 0, "B": 0 if twin_is_a else 4},
                    "confidence": 0.92,
                }
            )
        )


@pytest.fixture()
def server() -> Iterator[FakeServer]:
    s = FakeServer()
    s.thread.start()
    yield s
    s.httpd.shutdown()
    s.httpd.server_close()


def options(server: FakeServer, timeout: float = 5.0) -> dict[str, Any]:
    return {"base_url": server.url, "model": "judge-1", "api_key": "sk-test", "timeout": timeout}


def test_openai_judge_sends_both_orientations_and_gate_replaces(server: FakeServer) -> None:
    res = audit_trace(
        lock_unlock_trace(), ("twincheck",), judge="openai", judge_options=options(server)
    )["twincheck"]
    assert len(server.requests) == 2
    assert all(r["path"] == "/v1/chat/completions" for r in server.requests)
    assert all(r["body"]["model"] == "judge-1" for r in server.requests)
    assert server.headers[0]["Authorization"] == "Bearer sk-test"
    users = [r["body"]["messages"][-1]["content"] for r in server.requests]
    assert "Candidate A: call unlock_account" in users[0]  # actor first
    assert "Candidate B: call unlock_account" in users[1]  # twin first
    for u in users:  # blind: the judge never learns which is the actor's
        assert "actor" not in u.lower() and "twin" not in u.lower()
    rec = res.record["decisions"][0]
    assert rec["judge"] == "openai" and rec["gate"]["replace"]
    assert res.continuation == "truncated"


def test_fenced_json_is_accepted(server: FakeServer) -> None:
    server.mode = "fenced"
    res = audit_trace(
        lock_unlock_trace(), ("twincheck",), judge="openai", judge_options=options(server)
    )["twincheck"]
    assert res.record["decisions"][0]["gate"]["replace"]


@pytest.mark.parametrize(
    "mode,error",
    [
        ("slow", "timeout"),
        ("http500", "HTTP 500"),
        ("garbage", "malformed reply"),
        ("bad_verdict", "malformed reply"),
    ],
)
def test_failures_become_judge_errors_and_keep_the_actor(
    server: FakeServer, mode: str, error: str
) -> None:
    server.mode = mode
    res = audit_trace(
        lock_unlock_trace(),
        ("twincheck",),
        judge="openai",
        judge_options=options(server, timeout=0.2),
    )["twincheck"]
    rec = res.record["decisions"][0]
    assert not rec["gate"]["replace"] and "judge error" in rec["gate"]["reason"]
    assert error in rec["judgments"][0]["error"]
    assert res.continuation == "exact" and res.transition == "same"


def test_connection_refused_is_a_judge_error() -> None:
    judge = OpenAIJudge("http://127.0.0.1:9", "m", timeout=0.5)
    v = judge.judge(PairRequest("p", "actor_first", Proposal("delete"), Proposal("delete"), ""))
    assert v.error is not None and v.prefer is None


@pytest.mark.parametrize(
    "payload",
    [
        b"{}",
        b'{"choices": []}',
        b'{"choices": [{"message": {"content": 3}}]}',
        json.dumps(
            {
                "choices": [
                    {
                        "message": {
                            "content": json.dumps(
                                {
                                    "prefer": "A",
                                    "fatal": {"A": "no", "B": False},
                                    "scores": {"A": 1, "B": 2},
                                    "confidence": 0.5,
                                }
                            )
                        }
                    }
                ]
            }
        ).encode(),
        json.dumps(
            {
                "choices": [
                    {
                        "message": {
                            "content": json.dumps(
                                {
                                    "prefer": "A",
                                    "fatal": {"A": False, "B": False},
                                    "scores": {"A": 9, "B": 2},
                                    "confidence": 0.5,
                                }
                            )
                        }
                    }
                ]
            }
        ).encode(),
    ],
)
def test_parse_reply_rejects_malformed(payload: bytes) -> None:
    assert parse_reply(payload).error is not None
