"""What a trace prefix establishes, kept incrementally while replay walks the events: tool
attempts and their statuses, the user's latest request and the current turn, and the values the
trace grounds with where they came from (user messages and tool results — TwinCheck's grounding
check and the provenance its certificates need, SPEC §5.1).

Parsing tool results for values is the costly part, so it is done lazily, only when a
certificate, a structural check or a judge asks.

The *current turn* is everything after the latest user message. The *latest request* is the
latest user message that asks for something: a BFCL missing-function turn's user message is the
harness's fixed "I have updated some more functions…" prompt (the task's question for that turn
is empty), which repeats the previous request rather than making a new one, so the request
before it stays the latest request.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from .trace import Event, Message, ToolCall, ToolResult, TraceHeader

_TOKEN = re.compile(r"[A-Za-z0-9_.@:+-]+")
_DIGIT = re.compile(r"\d")
_quote = json.encoder.encode_basestring_ascii  # what json.dumps escapes strings with


def canonical_args(arguments: dict[str, Any]) -> str:
    """The arguments as sorted compact JSON: the identity of a call, and its text in prompts.
    Flat arguments of strings, integers, booleans and nulls (nearly all recorded calls) are
    written here with the json module's own string escaper, the same text ``json.dumps`` gives
    at a third of its cost (a tested equivalence); anything else goes through ``json.dumps``."""
    parts = []
    for k in sorted(arguments) if all(type(k) is str for k in arguments) else ():
        v = arguments[k]
        t = type(v)
        if t is str:
            text = _quote(v)
        elif t is int:
            text = int.__repr__(v)
        elif t is bool:
            text = "true" if v else "false"
        elif v is None:
            text = "null"
        else:
            break
        parts.append(_quote(k) + ":" + text)
    else:
        if len(parts) == len(arguments):
            return "{" + ",".join(parts) + "}"
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


def tokens(text: str) -> list[str]:
    return _TOKEN.findall(text)


def leaves(content: Any) -> list[tuple[str, str]]:
    """(key, scalar) pairs of a tool result: JSON leaves (key "" at top level or in lists), the
    keys of JSON objects under their parent's key (results often key records by their id:
    ``{"payment_methods": {"card_8107": {…}}}``), or the tokens of a plain text result."""
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
    _walk("", content, out)
    return out


def _walk(key: str, v: Any, out: list[tuple[str, str]]) -> None:
    t = type(v)
    if t is str:
        out.append((key, v))
        if " " in v:  # values embedded in prose
            out.extend((key, w) for w in _TOKEN.findall(v))
    elif t is dict:
        for k, x in v.items():
            k = str(k)
            if key:
                out.append((key, k))
            _walk(k, x, out)
    elif t is list:
        for x in v:
            _walk(key, x, out)
    elif v is not None:
        if isinstance(v, dict):
            _walk(key, dict(v), out)
        elif isinstance(v, (list, tuple)):
            _walk(key, list(v), out)
        else:
            out.append((key, scalar_text(v)))


@dataclass(slots=True)
class Attempt:
    call: ToolCall
    key: str  # name + canonical arguments
    pos: int  # position in TraceFacts.attempts
    status: str | None = None  # None until its result arrives
    result_index: int | None = None
    result: ToolResult | None = None


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
        "_first",
        "_last",
        "_failures",
        "_parsed",
        "turn",
        "last_ok_turn",
        "user_index",
        "turn_start",
        "latest_request",
        "request_index",
        "request_has_digits",
        "_prompt_turns",
        "_keys",
        "last_by_key",
        "last_ok_pos",
    )

    def __init__(self) -> None:
        self.attempts: list[Attempt] = []
        self.by_call_id: dict[str, Attempt] = {}
        self.by_name_ok: dict[str, list[Attempt]] = {}
        self.last_fail: dict[str, Attempt] = {}
        self.last_ok_index = -1
        self.last_ok_turn: int | None = None
        self.latest_user = ""  # the latest user message, whatever it says
        self.user_texts: list[str] = []
        self.user_index = -1  # event index of the latest user message
        self.turn_start = 0  # attempts[turn_start:] are the current turn's
        self.latest_request = ""
        self.request_index = -1  # event index of the latest request (see module docstring)
        self.request_has_digits = False
        self._keys: dict[int, str] = {}  # event index → call key, computed once per call
        self.last_by_key: dict[str, Attempt] = {}  # the newest attempt of each distinct call
        self.last_ok_pos = -1  # position of the newest attempt that succeeded
        self._prompt_turns: frozenset[int] = frozenset()
        self._results: list[ToolResult] = []
        self._values: set[str] = set()
        self._keyed: dict[str, list[str]] = {}
        self._first: dict[str, int] = {}  # value → event index of the first result it is in
        self._last: dict[str, int] = {}  # … and of the last
        self._failures: tuple[tuple[int, int, int], list[Attempt]] = ((-1, -1, -1), [])
        self._parsed = 0
        self.turn: int | None = None

    def observe(self, e: Event) -> None:
        if e.turn is not None:
            self.turn = e.turn
        kind = type(e)  # exact types (trace.event_from_dict builds no subclasses): cheaper
        if kind is ToolCall:
            assert isinstance(e, ToolCall)
            a = Attempt(e, self.call_key(e), len(self.attempts))
            self.attempts.append(a)
            self.last_by_key[a.key] = a
            if e.call_id:
                self.by_call_id[e.call_id] = a
        elif kind is ToolResult:
            assert isinstance(e, ToolResult)
            found = self.by_call_id.get(e.call_id) if e.call_id else None
            if found is None:  # no id: the latest call still waiting for its result
                found = next((x for x in reversed(self.attempts) if x.status is None), None)
            self._results.append(e)
            if found is not None and found.status is None:
                found.status = e.status
                found.result_index = e.index
                found.result = e
                if e.status == "error":
                    self.last_fail[found.key] = found
                else:
                    self.by_name_ok.setdefault(found.call.name, []).append(found)
                    self.last_ok_pos = max(self.last_ok_pos, found.pos)
            if e.status != "error":
                self.last_ok_index = e.index
                self.last_ok_turn = e.turn
        elif kind is Message:
            assert isinstance(e, Message)
            if e.role == "user":
                self.latest_user = e.content
                self.user_texts.append(e.content)
                self.user_index = e.index
                self.turn_start = len(self.attempts)
                if not self._is_prompt(e):
                    self.latest_request = e.content
                    self.request_index = e.index
                    self.request_has_digits = _DIGIT.search(e.content) is not None
        elif kind is TraceHeader:
            assert isinstance(e, TraceHeader)
            missed = e.env_config.get("missed_function")
            if isinstance(missed, dict):
                self._prompt_turns = frozenset(int(k) for k in missed if str(k).isdigit())

    def call_key(self, call: ToolCall) -> str:
        """The call's tool name and canonical arguments (identity of calls), computed once."""
        key = self._keys.get(call.index)
        if key is None:
            key = self._keys[call.index] = call.name + "\x00" + canonical_args(call.arguments)
        return key

    def _is_prompt(self, m: Message) -> bool:
        """A harness prompt that repeats the previous request (see module docstring)."""
        if not m.content.strip() or m.meta.get("functions_added"):
            return True
        return m.turn is not None and m.turn in self._prompt_turns and self.request_index >= 0

    # -- the current turn ----------------------------------------------------------------------

    def turn_attempts(self) -> list[Attempt]:
        """Tool attempts since the latest user message."""
        return self.attempts[self.turn_start :]

    def unresolved_turn_failures(self) -> list[Attempt]:
        """Failed attempts of the current turn not followed by a success of the same tool."""
        state = (len(self.attempts), len(self._results), self.turn_start)
        if self._failures[0] == state:
            return self._failures[1]
        out: list[Attempt] = []
        turn = self.turn_attempts()
        for i, a in enumerate(turn):
            if a.status == "error" and not any(
                b.call.name == a.call.name and b.status not in (None, "error")
                for b in turn[i + 1 :]
            ):
                out.append(a)
        return out

    # -- values and where they came from ---------------------------------------------------------

    def _parse(self) -> None:
        while self._parsed < len(self._results):
            r = self._results[self._parsed]
            self._parsed += 1
            first, last, keyed, values = self._first, self._last, self._keyed, self._values
            i = r.index
            for k, v in leaves(r.content):
                if v not in values:
                    values.add(v)
                    first[v] = i
                last[v] = i
                kv = keyed.get(k)
                if kv is None:
                    keyed[k] = [v]
                else:
                    kv.append(v)

    def result_values(self) -> set[str]:
        """Scalar values that appeared in tool results so far."""
        self._parse()
        return self._values

    def keyed_values(self, key: str) -> list[str]:
        """Values that appeared under ``key`` in tool results, oldest first."""
        self._parse()
        return self._keyed.get(key, [])

    def seen_at(self, value: str) -> tuple[int, int] | None:
        """Event indices of the first and the last tool result ``value`` appeared in."""
        self._parse()
        first = self._first.get(value)
        return None if first is None else (first, self._last[value])

    def keys_of(self, value: str) -> set[str]:
        """The result keys ``value`` appeared under."""
        self._parse()
        return {k for k, vs in self._keyed.items() if value in vs}

    def in_user_text(self, text: str) -> bool:
        return any(
            text in _TOKEN.findall(u) or (len(text) > 3 and text in u) for u in self.user_texts
        )

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
        return self.in_user_text(text)

    def bound_in_turn(self) -> dict[str, set[str]]:
        """Scalar argument values of the current turn's calls → the argument names they were
        bound to."""
        out: dict[str, set[str]] = {}
        for a in self.turn_attempts():
            for k, v in a.call.arguments.items():
                for x in v if isinstance(v, list) else [v]:
                    if isinstance(x, (str, int, float)) and not isinstance(x, bool):
                        out.setdefault(scalar_text(x), set()).add(k)
        return out

    def succeeded_operation(self) -> bool:
        return any(self.by_name_ok.values())

    def unresolved_failure(self) -> bool:
        """A failed attempt not followed by a success of the same tool."""
        for a in self.last_fail.values():
            ok = self.by_name_ok.get(a.call.name, [])
            if not any((x.result_index or -1) > (a.result_index or -1) for x in ok):
                return True
        return False
