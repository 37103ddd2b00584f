"""What one model call returns (`ModelCall`), the failures callers may raise from it, and the
strict reading of a chat-completions response.

A `ModelCall` never raises: a failed call has ``error`` set (a short, key-free reason) and no
usable message. ``ref()`` is what a decision record stores: the cache key and the tokens, but
not whether the cache served it — that is run statistics, and keeping it out of records is
what makes a re-run from the cache byte-identical to the first run.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from .budget import BUDGET_REACHED

JsonDict = dict[str, Any]


class ModelCallError(Exception):
    """A model call a caller needed did not give a usable answer; ``reason`` says why."""

    def __init__(self, reason: str, call: ModelCall | None = None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.call = call


class BudgetReached(ModelCallError):
    """The run's model budget is spent (`policies.llm.budget`)."""


@dataclass(frozen=True, slots=True)
class ToolCallOut:
    """One tool call of a response: ``arguments`` parsed when ``arguments_error`` is None."""

    id: str
    name: str
    raw_arguments: str
    arguments: JsonDict | None
    arguments_error: str | None = None


@dataclass(frozen=True, slots=True)
class ModelCall:
    purpose: str
    model: str
    key: str
    cached: bool
    request: JsonDict
    response: JsonDict | None
    error: str | None
    prompt_tokens: int = 0
    completion_tokens: int = 0
    tokens_estimated: bool = False
    attempts: int = 0
    extra: JsonDict = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return self.error is None

    @property
    def tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    @property
    def budget_reached(self) -> bool:
        return self.error == BUDGET_REACHED

    @property
    def message(self) -> JsonDict:
        """The first choice's message ({} for a failed call)."""
        if self.response is None:
            return {}
        msg = self.response["choices"][0]["message"]
        return msg if isinstance(msg, dict) else {}

    @property
    def text(self) -> str:
        content = self.message.get("content")
        return content if isinstance(content, str) else ""

    def tool_calls(self) -> list[ToolCallOut]:
        """The message's tool calls, each with its arguments parsed strictly (a JSON object,
        nothing else); a malformed one is kept with ``arguments_error`` set."""
        out: list[ToolCallOut] = []
        for i, tc in enumerate(self.message.get("tool_calls") or []):
            fn = tc.get("function") if isinstance(tc, dict) else None
            fn = fn if isinstance(fn, dict) else {}
            name = fn.get("name")
            raw = fn.get("arguments")
            cid = tc.get("id") if isinstance(tc, dict) else None
            ident = cid if isinstance(cid, str) and cid else f"call_{i}"
            name_s = name if isinstance(name, str) else ""
            if isinstance(raw, dict):  # some servers send an object instead of a JSON string
                out.append(ToolCallOut(ident, name_s, json.dumps(raw), raw))
                continue
            raw_s = raw if isinstance(raw, str) else ""
            try:
                parsed = json.loads(raw_s) if raw_s.strip() else {}
            except ValueError as exc:
                out.append(ToolCallOut(ident, name_s, raw_s, None, f"not JSON: {exc}"))
                continue
            if not isinstance(parsed, dict):
                err = f"expected a JSON object, got {type(parsed).__name__}"
                out.append(ToolCallOut(ident, name_s, raw_s, None, err))
            elif not name_s:
                out.append(ToolCallOut(ident, name_s, raw_s, parsed, "no function name"))
            else:
                out.append(ToolCallOut(ident, name_s, raw_s, parsed))
        return out

    def ref(self) -> JsonDict:
        """The call as a decision record references it (deterministic across re-runs)."""
        out: JsonDict = {
            "purpose": self.purpose,
            "model": self.model,
            "cache_key": self.key,
            "tokens": self.tokens,
            "error": self.error,
        }
        out.update(self.extra)
        return out

    def require_ok(self) -> ModelCall:
        if self.error is None:
            return self
        if self.budget_reached:
            raise BudgetReached(self.error, self)
        raise ModelCallError(self.error, self)


def envelope_problem(data: Any) -> str | None:
    """Why ``data`` is not a usable chat-completions response, or None. Checks only what
    every use needs: ``choices[0].message`` with text and/or tool calls of the right types."""
    if not isinstance(data, dict):
        return f"expected a JSON object, got {type(data).__name__}"
    if isinstance(data.get("error"), dict | str):
        err = data["error"]
        text = err.get("message") if isinstance(err, dict) else err
        return f"the endpoint returned an error: {str(text)[:200]}"
    choices = data.get("choices")
    if not isinstance(choices, list) or not choices:
        return "no choices"
    first = choices[0]
    if not isinstance(first, dict) or not isinstance(first.get("message"), dict):
        return "choices[0].message is missing"
    msg = first["message"]
    if msg.get("content") is not None and not isinstance(msg["content"], str):
        return "message.content is not text"
    tcs = msg.get("tool_calls")
    if tcs is not None and not isinstance(tcs, list):
        return "message.tool_calls is not a list"
    usage = data.get("usage")
    if usage is not None and not isinstance(usage, dict):
        return "usage is not an object"
    return None


def refusal_of(data: JsonDict) -> str | None:
    """The model's refusal (OpenAI's ``message.refusal``, or ``finish_reason`` =
    ``content_filter``), or None. A refusal is a valid response — cached like any other —
    that no use can act on."""
    first = data["choices"][0]
    refusal = first["message"].get("refusal")
    if isinstance(refusal, str) and refusal.strip():
        return f"model refused: {refusal.strip()[:300]}"
    if first.get("finish_reason") == "content_filter":
        return "model refused: content filter"
    return None


def usage_tokens(data: JsonDict, request_bytes: int) -> tuple[int, int, bool]:
    """(prompt, completion, estimated). Without usage figures from the server, about four
    bytes per token — so a server that omits usage cannot slip past a token budget."""
    usage = data.get("usage") or {}
    p, c = usage.get("prompt_tokens"), usage.get("completion_tokens")
    if isinstance(p, int) and isinstance(c, int) and p >= 0 and c >= 0:
        return p, c, False
    msg = data["choices"][0]["message"]
    out = len(json.dumps(msg, ensure_ascii=False).encode())
    return (request_bytes + 3) // 4, (out + 3) // 4, True
