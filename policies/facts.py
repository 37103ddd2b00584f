"""What a trace prefix establishes, kept incrementally while replay walks the events: tool
attempts and their statuses, the latest user message, and the values the trace grounds (user
messages and tool results — TwinCheck's grounding check, SPEC §5.1 step 2).

Parsing tool results for values is the costly part, so it is done lazily, only when a
certificate or a structural check asks.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from .trace import Event, Message, ToolCall, ToolResult

_TOKEN = re.compile(r"[A-Za-z0-9_.@:+-]+")


def canonical_args(arguments: dict[str, Any]) -> str:
    try:
        return json.dumps(arguments, sort_keys=True, separators=(",", ":"), default=str)
    except (TypeError, ValueError):
        return repr(sorted(arguments.items(), key=lambda kv: kv[0]))


def scalar_text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def leaves(content: Any) -> list[tuple[str, str]]:
    """(key, scalar) pairs of a tool result: JSON leaves (key "" at top level or in lists), or
    the tokens of a plain text result."""
    if isinstance(content, str):
        s = content.strip()
        if s[:1] in ("{", "["):
            try:
                content = json.loads(s)
            except ValueError:
                return [("", t) for t in _TOKEN.findall(content)]
        else:
            return [("", t) for t in _TOKEN.findall(content)]
    out: list[tuple[str, str]] = []
    stack: list[tuple[str, Any]] = [("", content)]
    while stack:
        key, v = stack.pop()
        if isinstance(v, dict):
            stack.extend((str(k), x) for k, x in v.items())
        elif isinstance(v, list):
            stack.extend((key, x) for x in v)
        elif v is not None:
            text = scalar_text(v)
            out.append((key, text))
            if isinstance(v, str) and " " in text:  # values embedded in prose
                out.extend((key, t) for t in _TOKEN.findall(text))
    return out


@dataclass(slots=True)
class Attempt:
    call: ToolCall
    key: str  # name + canonical arguments
    status: str | None = None  # None until its result arrives
    result_index: int | None = None


class TraceFacts:
    """Facts of the prefix ``events[:i]`` after ``observe`` was called on each of them."""

    __slots__ = (
        "attempts",
        "by_call_id",
        "by_name_ok",
        "last_fail",
        "last_ok_index",
        "latest_user",
        "user_texts",
        "_results",
        "_values",
        "_keyed",
        "_parsed",
        "turn",
        "last_ok_turn",
    )

    def __init__(self) -> None:
        self.attempts: list[Attempt] = []
        self.by_call_id: dict[str, Attempt] = {}
        self.by_name_ok: dict[str, list[Attempt]] = {}
        self.last_fail: dict[str, Attempt] = {}
        self.last_ok_index = -1
        self.last_ok_turn: int | None = None
        self.latest_user = ""
        self.user_texts: list[str] = []
        self._results: list[ToolResult] = []
        self._values: set[str] = set()
        self._keyed: dict[str, list[str]] = {}
        self._parsed = 0
        self.turn: int | None = None

    def observe(self, e: Event) -> None:
        if e.turn is not None:
            self.turn = e.turn
        if isinstance(e, ToolCall):
            a = Attempt(e, e.name + "\x00" + canonical_args(e.arguments))
            self.attempts.append(a)
            if e.call_id:
                self.by_call_id[e.call_id] = a
        elif isinstance(e, ToolResult):
            found = self.by_call_id.get(e.call_id) if e.call_id else None
            if found is None:  # no id: the latest call still waiting for its result
                found = next((x for x in reversed(self.attempts) if x.status is None), None)
            self._results.append(e)
            if found is not None and found.status is None:
                found.status = e.status
                found.result_index = e.index
                if e.status == "error":
                    self.last_fail[found.key] = found
                else:
                    self.by_name_ok.setdefault(found.call.name, []).append(found)
            if e.status != "error":
                self.last_ok_index = e.index
                self.last_ok_turn = e.turn
        elif isinstance(e, Message) and e.role == "user":
            self.latest_user = e.content
            self.user_texts.append(e.content)

    def _parse(self) -> None:
        while self._parsed < len(self._results):
            r = self._results[self._parsed]
            self._parsed += 1
            for k, v in leaves(r.content):
                self._values.add(v)
                self._keyed.setdefault(k, []).append(v)

    def result_values(self) -> set[str]:
        """Scalar values that appeared in tool results so far."""
        self._parse()
        return self._values

    def keyed_values(self, key: str) -> list[str]:
        """Values that appeared under ``key`` in tool results, oldest first."""
        self._parse()
        return self._keyed.get(key, [])

    def grounded(self, value: Any) -> bool:
        """A value is grounded when it appears in a user message or a tool result. Booleans
        and None carry no trace-specific value and count as grounded."""
        if value is None or isinstance(value, bool):
            return True
        if isinstance(value, dict):
            return all(self.grounded(v) for v in value.values())
        if isinstance(value, list):
            return all(self.grounded(v) for v in value)
        text = scalar_text(value)
        if text in self.result_values():
            return True
        return any(
            text in _TOKEN.findall(u) or (len(text) > 3 and text in u) for u in self.user_texts
        )

    def succeeded_operation(self) -> bool:
        return any(self.by_name_ok.values())

    def unresolved_failure(self) -> bool:
        """A failed attempt not followed by a success of the same tool."""
        for a in self.last_fail.values():
            ok = self.by_name_ok.get(a.call.name, [])
            if not any((x.result_index or -1) > (a.result_index or -1) for x in ok):
                return True
        return False
