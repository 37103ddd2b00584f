"""Scripted model behaviours for the fake server: a verifier that prefers whichever candidate
is not the actor's repeated call, and a BFCL actor that works through a per-turn call list."""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

from policies.llm.prompts import VERIFIER_SYSTEM
from tests.fakes.openai_server import Reply

Call = tuple[str, dict[str, Any]]


def is_verifier(body: dict[str, Any]) -> bool:
    msgs = body.get("messages") or []
    return bool(msgs) and msgs[0].get("content") == VERIFIER_SYSTEM


def verifier_against(bad: str, confidence: float = 0.9) -> Any:
    """Prefers the candidate whose text does not contain ``bad``, marking the other fatal."""

    def answer(body: dict[str, Any]) -> Reply:
        user = body["messages"][-1]["content"]
        line_a = next(x for x in user.splitlines() if x.startswith("Candidate A:"))
        good = "B" if bad in line_a else "A"
        other = "A" if good == "B" else "B"
        return Reply.text(
            json.dumps(
                {
                    "scores": {good: 4, other: 0},
                    "fatal": {good: False, other: True},
                    "prefer": good,
                    "confidence": confidence,
                }
            )
        )

    return answer


def _made_this_turn(messages: list[dict[str, Any]]) -> list[Call]:
    last_user = max(i for i, m in enumerate(messages) if m.get("role") == "user")
    made: list[Call] = []
    for m in messages[last_user + 1 :]:
        for tc in m.get("tool_calls") or []:
            fn = tc["function"]
            made.append((fn["name"], json.loads(fn["arguments"] or "{}")))
    return made


def bfcl_actor(script: list[list[Call]], final_text: str = "Done.") -> Any:
    """A function-calling actor: in turn t (the number of user messages so far, minus one), it
    calls the first call of ``script[t]`` not yet made in this turn, one per step, then
    answers ``final_text``. Calls beyond the script's turns answer text."""

    def answer(body: dict[str, Any]) -> Reply:
        messages = body["messages"]
        turn = sum(1 for m in messages if m.get("role") == "user") - 1
        made = Counter(json.dumps(c, sort_keys=True) for c in _made_this_turn(messages))
        for call in script[turn] if turn < len(script) else []:
            k = json.dumps(call, sort_keys=True)
            if made[k]:
                made[k] -= 1
                continue
            return Reply.tool_calls([call])
        return Reply.text(final_text)

    return answer


def route(verifier: Any, actor: Any) -> Any:
    def answer(body: dict[str, Any]) -> Reply:
        return verifier(body) if is_verifier(body) else actor(body)

    return answer
