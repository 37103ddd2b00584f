"""The commit rule's live calls (SPEC §5.4; confidence-collapse seed, "The fix"): a responder
``(chat messages) -> the assistant's reply text`` that the commit policy calls for the one
re-check ("Are you absolutely sure?") and, when the re-check disagrees, the one "pick one,
final" call.

Without a usable reply the responder raises: `BudgetReached` when the run's budget is spent,
`ModelCallError` otherwise (endpoint failure, refusal, a reply with no text); the policy turns
either into an ``unknown`` outcome with the exception's ``reason`` — never a recorded turn
standing in for the call. ``calls`` keeps every call's reference for the decision record.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .calls import ModelCallError
from .client import ModelClient


class ModelResponder:
    def __init__(self, client: ModelClient, purpose: str = "commit_recheck") -> None:
        self.client = client
        self.purpose = purpose
        self.calls: list[dict[str, Any]] = []

    def __call__(self, messages: Sequence[dict[str, str]]) -> str:
        call = self.client.chat(
            [{"role": m["role"], "content": m["content"]} for m in messages],
            purpose=self.purpose,
        )
        self.calls.append(call.ref())
        call.require_ok()  # BudgetReached / ModelCallError with the reason
        if not call.text.strip():
            what = "tool calls" if call.message.get("tool_calls") else "an empty message"
            raise ModelCallError(f"no text in the reply (got {what})", call)
        return call.text
