"""The ``openai`` judge backend: any OpenAI-compatible chat-completions endpoint, through the
standard library only (``urllib.request`` + ``json``) (SPEC §4 "Judges").

The judge sees the two proposals as A and B only. Network errors, HTTP errors, timeouts and
malformed replies all become a `Verdict` with ``error`` set — recorded as a judge error, and
the gate keeps the actor's call.
"""

from __future__ import annotations

import json
import re
import socket
import urllib.error
import urllib.request
from typing import Any

from .judges import PairRequest, Verdict

SYSTEM_PROMPT = (
    "You are a strict verifier of tool-using agents. Two candidate next steps, A and B, are "
    "proposed for the same conversation state. Judge each on a 0-4 rubric (4 = correct and "
    "safe, 0 = certainly wrong), say whether each would be fatal to the task, which you prefer, "
    "and your confidence in [0, 1]. Reply with JSON only: "
    '{"prefer": "A"|"B", "fatal": {"A": bool, "B": bool}, "scores": {"A": int, "B": int}, '
    '"confidence": float}'
)
_FENCE = re.compile(r"^```(?:json)?\s*|\s*```$", re.MULTILINE)


class OpenAIJudge:
    name = "openai"

    def __init__(
        self,
        base_url: str,
        model: str,
        api_key: str = "",
        timeout: float = 30.0,
        temperature: float = 0.0,
        max_tokens: int = 300,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.model = model
        self.api_key = api_key
        self.timeout = timeout
        self.temperature = temperature
        self.max_tokens = max_tokens

    def build_request(self, request: PairRequest) -> dict[str, Any]:
        user = (
            f"Conversation so far:\n{request.context}\n\n"
            f"Candidate A: {request.a.render()}\n"
            f"Candidate B: {request.b.render()}\n"
        )
        return {
            "model": self.model,
            "messages": [
                {"role": "system", "content": SYSTEM_PROMPT},
                {"role": "user", "content": user},
            ],
            "temperature": self.temperature,
            "max_tokens": self.max_tokens,
        }

    def judge(self, request: PairRequest) -> Verdict:
        body = json.dumps(self.build_request(request)).encode()
        headers = {"Content-Type": "application/json"}
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        req = urllib.request.Request(
            f"{self.base_url}/chat/completions", data=body, headers=headers, method="POST"
        )
        try:
            with urllib.request.urlopen(req, timeout=self.timeout) as resp:
                payload = resp.read()
        except TimeoutError:
            return Verdict.failed(self.name, "timeout")
        except urllib.error.HTTPError as exc:
            return Verdict.failed(self.name, f"HTTP {exc.code}")
        except (urllib.error.URLError, OSError) as exc:
            reason = getattr(exc, "reason", exc)
            if isinstance(reason, (TimeoutError, socket.timeout)):
                return Verdict.failed(self.name, "timeout")
            return Verdict.failed(self.name, f"connection error: {reason}")
        return parse_reply(payload, self.name)


def parse_reply(payload: bytes, judge: str = "openai") -> Verdict:
    """A verdict from a chat-completions response body, or a judge error."""
    try:
        data = json.loads(payload)
        content = data["choices"][0]["message"]["content"]
        if not isinstance(content, str):
            raise TypeError("content is not text")
        obj = json.loads(_FENCE.sub("", content.strip()))
        if not isinstance(obj, dict):
            raise TypeError("verdict is not an object")
        prefer = str(obj.get("prefer", "")).strip().upper()
        if prefer not in ("A", "B"):
            raise ValueError(f"prefer must be A or B, got {obj.get('prefer')!r}")
        fatal = obj.get("fatal")
        scores = obj.get("scores")
        if not isinstance(fatal, dict) or not isinstance(scores, dict):
            raise TypeError("fatal and scores must be objects")
        conf = float(obj["confidence"])
        sa, sb = float(scores["A"]), float(scores["B"])
        if not (0.0 <= conf <= 1.0 and 0.0 <= sa <= 4.0 and 0.0 <= sb <= 4.0):
            raise ValueError("confidence or scores out of range")
        fa, fb = fatal.get("A"), fatal.get("B")
        if not isinstance(fa, bool) or not isinstance(fb, bool):
            raise TypeError("fatal flags must be booleans")
        return Verdict(prefer, fa, fb, sa, sb, conf, judge)
    except (ValueError, TypeError, KeyError, IndexError) as exc:
        return Verdict.failed(judge, f"malformed reply: {exc}")
