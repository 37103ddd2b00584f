"""Validation of one v1 event (SPEC §3), with errors that say where and what.

Hand-written rather than driven by the JSON Schema in `traces/schema/trace-v1.schema.json`:
ingest checks every line, and this is an order of magnitude faster than a generic validator
while giving messages in the user's terms ("expected an integer, found a string"). A test keeps
the two in agreement on generated events.
"""

from __future__ import annotations

import difflib
import functools
import re
from collections.abc import Iterator
from typing import Any

# What `found` says about a value, in JSON's vocabulary rather than Python's.
_JSON_NAMES = {
    dict: "an object",
    list: "an array",
    str: "a string",
    int: "an integer",
    float: "a number",
    bool: "a boolean",
    type(None): "null",
}

EVENT_TYPES = (
    "trace",
    "message",
    "tool_call",
    "tool_result",
    "claims",
    "candidate",
    "verification",
    "check",
    "judgment",
)
ROLES = ("system", "user", "assistant")
FEEDBACK_KINDS = ("challenge", "bug_report", "hint", "question")
EVIDENCE_KINDS = ("test", "tool", "citation", "reasoning", "user")
RESULT_STATUSES = ("ok", "error")
# Token counts an event's optional `usage` object may give (other keys in it are kept as given).
USAGE_KEYS = ("input_tokens", "output_tokens", "total_tokens")
MAX_ID_LENGTH = 255

# RFC 3339 date-time, e.g. 2026-11-30T06:54:24.123Z or +01:00.
# ASCII digits only, and matched with fullmatch so no trailing newline slips through: the same
# pattern string is published in the JSON Schema, where ECMA-262 engines read it that way.
_RFC3339 = re.compile(
    r"^[0-9]{4}-[0-9]{2}-[0-9]{2}[Tt ][0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]+)?"
    r"([Zz]|[+-][0-9]{2}:[0-9]{2})$"
)
# Counts (seq, turn, round, votes…) must fit the database's integer columns.
MAX_INT = 2**31 - 1

Error = tuple[str, str]  # (JSON path, message)


def describe(value: Any) -> str:
    """JSON name of a value's type, with a short sample for scalars."""
    name = _JSON_NAMES.get(type(value), type(value).__name__)
    if isinstance(value, str):
        sample = value if len(value) <= 40 else value[:37] + "..."
        return f'{name} "{sample}"'
    if isinstance(value, bool) or value is None:
        return name
    if isinstance(value, (int, float)):
        return f"{name} {value!r}"
    return name


class _Checker:
    """Collects errors for one event; methods check one field and say nothing when it is absent
    and optional."""

    __slots__ = ("errors",)

    def __init__(self) -> None:
        self.errors: list[Error] = []

    def fail(self, path: str, expected: str, value: Any) -> None:
        self.errors.append((path, f"expected {expected}, found {describe(value)}"))

    def missing(self, path: str, expected: str) -> None:
        self.errors.append((path, f"required field is missing (expected {expected})"))

    def string(
        self,
        obj: dict,
        key: str,
        path: str,
        *,
        required: bool = False,
        choices: tuple[str, ...] | None = None,
        nullable: bool = False,
    ) -> None:
        if key not in obj:
            if required:
                self.missing(f"{path}.{key}", "a string")
            return
        value = obj[key]
        if value is None and nullable:
            return
        if not isinstance(value, str):
            self.fail(f"{path}.{key}", "a string" + (" or null" if nullable else ""), value)
        elif choices is not None and value not in choices:
            self.fail(f"{path}.{key}", "one of " + ", ".join(choices), value)
        elif required and value == "":
            self.errors.append((f"{path}.{key}", 'expected a non-empty string, found ""'))

    def integer(
        self, obj: dict, key: str, path: str, *, required: bool = False, minimum: int | None = None
    ) -> None:
        if key not in obj:
            if required:
                self.missing(f"{path}.{key}", "an integer")
            return
        value = obj[key]
        # bool is an int subclass in Python but not an integer in JSON.
        if not isinstance(value, int) or isinstance(value, bool):
            self.fail(f"{path}.{key}", "an integer", value)
        elif minimum is not None and value < minimum:
            self.fail(f"{path}.{key}", f"an integer >= {minimum}", value)
        elif value > MAX_INT:
            self.fail(f"{path}.{key}", f"an integer <= {MAX_INT}", value)

    def number(
        self,
        obj: dict,
        key: str,
        path: str,
        *,
        nullable: bool = False,
        lo: float | None = None,
        hi: float | None = None,
    ) -> None:
        if key not in obj:
            return
        value = obj[key]
        if value is None and nullable:
            return
        if not isinstance(value, (int, float)) or isinstance(value, bool):
            self.fail(f"{path}.{key}", "a number" + (" or null" if nullable else ""), value)
        elif hi is None and lo is not None and value < lo:
            self.fail(f"{path}.{key}", f"a number >= {lo:g}", value)
        elif (lo is not None and value < lo) or (hi is not None and value > hi):
            self.fail(f"{path}.{key}", f"a number between {lo} and {hi}", value)

    def boolean(self, obj: dict, key: str, path: str, *, nullable: bool = False) -> None:
        if key not in obj:
            return
        value = obj[key]
        if value is None and nullable:
            return
        if not isinstance(value, bool):
            self.fail(f"{path}.{key}", "a boolean" + (" or null" if nullable else ""), value)

    def obj(self, obj: dict, key: str, path: str, *, required: bool = False) -> dict | None:
        if key not in obj:
            if required:
                self.missing(f"{path}.{key}", "an object")
            return None
        value = obj[key]
        if not isinstance(value, dict):
            self.fail(f"{path}.{key}", "an object", value)
            return None
        return value

    def array(self, obj: dict, key: str, path: str, *, required: bool = False) -> list | None:
        if key not in obj:
            if required:
                self.missing(f"{path}.{key}", "an array")
            return None
        value = obj[key]
        if not isinstance(value, list):
            self.fail(f"{path}.{key}", "an array", value)
            return None
        return value

    def objects(self, items: list, path: str) -> Iterator[tuple[str, dict]]:
        """The elements of an array that must hold objects, with their paths (lazily, so errors
        come out in index order)."""
        for i, item in enumerate(items):
            p = f"{path}[{i}]"
            if isinstance(item, dict):
                yield p, item
            else:
                self.fail(p, "an object", item)


def _check_trace(c: _Checker, ev: dict) -> None:
    c.string(ev, "agent", "$", nullable=True)
    c.string(ev, "model", "$", nullable=True)
    task = c.obj(ev, "task", "$")
    if task is not None:
        task_id = task.get("id")
        if "id" in task and (not isinstance(task_id, (str, int)) or isinstance(task_id, bool)):
            c.fail("$.task.id", "a string or an integer", task_id)
        c.string(task, "benchmark", "$.task", nullable=True)
        c.string(task, "category", "$.task", nullable=True)
    env = c.obj(ev, "env", "$")
    if env is not None:
        c.string(env, "name", "$.env", nullable=True)
        c.obj(env, "config", "$.env")
    tools = c.array(ev, "tools", "$")
    if tools is not None:
        for p, tool in c.objects(tools, "$.tools"):
            c.string(tool, "name", p, required=True)
            c.string(tool, "description", p, nullable=True)
            c.obj(tool, "parameters", p)
            c.boolean(tool, "read_only", p, nullable=True)
    outcome = c.obj(ev, "outcome", "$")
    if outcome is not None:
        c.boolean(outcome, "success", "$.outcome", nullable=True)
        c.number(outcome, "reward", "$.outcome", nullable=True)


def _check_message(c: _Checker, ev: dict) -> None:
    c.string(ev, "role", "$", required=True, choices=ROLES)
    if "content" in ev and not isinstance(ev["content"], (str, type(None))):
        c.fail("$.content", "a string or null", ev["content"])
    fb = c.obj(ev, "feedback", "$")
    if fb is not None:
        c.string(fb, "kind", "$.feedback", required=True, choices=FEEDBACK_KINDS)
        targets = c.array(fb, "targets", "$.feedback")
        if targets is not None:
            for i, t in enumerate(targets):
                if not isinstance(t, str):
                    c.fail(f"$.feedback.targets[{i}]", "a claim id (string)", t)


def _check_tool_call(c: _Checker, ev: dict) -> None:
    c.string(ev, "call_id", "$", nullable=True)
    c.string(ev, "name", "$", required=True)
    if "arguments" not in ev:
        c.missing("$.arguments", "an object")
    elif not isinstance(ev["arguments"], dict):
        c.fail("$.arguments", "an object (parsed arguments, not a JSON string)", ev["arguments"])


def _check_tool_result(c: _Checker, ev: dict) -> None:
    c.string(ev, "call_id", "$", nullable=True)
    c.string(ev, "status", "$", choices=RESULT_STATUSES)


def _check_claims(c: _Checker, ev: dict) -> None:
    claims = c.array(ev, "claims", "$", required=True)
    if claims is None:
        return
    seen: set[str] = set()
    for p, claim in c.objects(claims, "$.claims"):
        c.string(claim, "id", p, required=True)
        cid = claim.get("id")
        if isinstance(cid, str):
            if cid in seen:
                c.errors.append((f"{p}.id", f'claim id "{cid[:40]}" appears twice in one record'))
            seen.add(cid)
        c.string(claim, "text", p, nullable=True)
        c.number(claim, "confidence", p, nullable=True, lo=0.0, hi=1.0)
        c.string(claim, "subject", p, nullable=True)
        evidence = c.array(claim, "evidence", p)
        if evidence is not None:
            for ep, item in c.objects(evidence, f"{p}.evidence"):
                c.string(item, "kind", ep, required=True, choices=EVIDENCE_KINDS)
                c.string(item, "ref", ep, nullable=True)
                c.boolean(item, "passed", ep, nullable=True)


def _check_candidate(c: _Checker, ev: dict) -> None:
    c.string(ev, "candidate_id", "$", required=True)
    c.string(ev, "parent", "$", nullable=True)
    c.integer(ev, "round", "$", minimum=0)
    c.string(ev, "answer", "$", nullable=True)


def _check_verification(c: _Checker, ev: dict) -> None:
    c.string(ev, "candidate_id", "$", required=True)
    c.integer(ev, "round", "$", minimum=0)
    c.integer(ev, "accepts", "$", required=True, minimum=0)
    c.integer(ev, "votes", "$", required=True, minimum=0)
    c.string(ev, "verifier", "$", nullable=True)
    accepts, votes = ev.get("accepts"), ev.get("votes")
    if type(accepts) is int and type(votes) is int and 0 <= votes < accepts:
        c.errors.append(("$.accepts", f"accepts ({accepts}) cannot exceed votes ({votes})"))


def _check_check(c: _Checker, ev: dict) -> None:
    c.string(ev, "name", "$", required=True)
    if "passed" not in ev:
        c.missing("$.passed", "a boolean")
    else:
        c.boolean(ev, "passed", "$")
    c.string(ev, "source", "$", nullable=True)


def _check_judgment(c: _Checker, ev: dict) -> None:
    c.string(ev, "pair", "$", required=True)
    c.string(ev, "orientation", "$", required=True, choices=("AB", "BA"))
    c.obj(ev, "scores", "$")
    c.obj(ev, "fatal", "$")
    c.string(ev, "prefer", "$", nullable=True, choices=("A", "B", "tie"))
    c.number(ev, "confidence", "$", nullable=True, lo=0.0, hi=1.0)
    c.string(ev, "judge", "$", nullable=True)


def _check_timing(c: _Checker, ev: dict) -> None:
    """The optional timing and cost fields any event (the header included) may carry."""
    c.number(ev, "duration_ms", "$", lo=0)
    c.number(ev, "cost_usd", "$", lo=0)
    usage = c.obj(ev, "usage", "$")
    if usage is not None:
        for key in USAGE_KEYS:
            c.integer(usage, key, "$.usage", minimum=0)


_TYPE_CHECKS = {
    "trace": _check_trace,
    "message": _check_message,
    "tool_call": _check_tool_call,
    "tool_result": _check_tool_result,
    "claims": _check_claims,
    "candidate": _check_candidate,
    "verification": _check_verification,
    "check": _check_check,
    "judgment": _check_judgment,
}


def _timestamp(v: Any) -> bool:
    return type(v) is str and _RFC3339.fullmatch(v) is not None


def _non_negative(v: Any) -> bool:
    return type(v) in (int, float) and v >= 0


def _usage(v: Any) -> bool:
    return type(v) is dict and all(_count(v[k]) for k in USAGE_KEYS if k in v)


def _count(v: Any) -> bool:
    return type(v) is int and 0 <= v <= MAX_INT


def _opt_str(v: Any) -> bool:
    return v is None or type(v) is str


def _id(v: Any) -> bool:
    return type(v) is str and 0 < len(v)


# The fast path: for the common event types, a check of the usual valid shape that says "valid"
# only when every key present is one it checked — anything else (an unknown or rarer field, a
# value of the wrong type) goes to the full validator, which finds and words the errors. Ingest
# validates every line; this halves that cost. tests/test_schema.py checks the two agree.
_COMMON = {
    "trace_id": lambda v: type(v) is str and 0 < len(v) <= MAX_ID_LENGTH,
    "type": lambda v: True,
    "seq": _count,
    "turn": _count,
    "labels": lambda v: type(v) is dict,
    "meta": lambda v: type(v) is dict,
    "ts": _timestamp,
    "end_ts": _timestamp,
    "duration_ms": _non_negative,
    "cost_usd": _non_negative,
    "usage": _usage,
}
_FAST: dict[str, dict[str, Any]] = {
    "message": {"role": lambda v: v in ROLES, "content": _opt_str},
    "tool_call": {"call_id": _opt_str, "name": _id, "arguments": lambda v: type(v) is dict},
    "tool_result": {
        "call_id": _opt_str,
        "status": lambda v: v in RESULT_STATUSES,
        "content": lambda v: True,
    },
    "candidate": {
        "candidate_id": _id,
        "content": lambda v: True,
        "parent": _opt_str,
        "round": _count,
        "answer": _opt_str,
    },
    "check": {"name": _id, "passed": lambda v: type(v) is bool, "source": _opt_str},
}
_REQUIRED = {
    "message": ("role",),
    "tool_call": ("name", "arguments"),
    "tool_result": (),
    "candidate": ("candidate_id",),
    "check": ("name", "passed"),
}


def _fast_valid(ev: dict) -> bool:
    etype = ev.get("type")
    if type(etype) is not str:
        return False
    checks = _FAST.get(etype)
    if checks is None or "trace_id" not in ev:
        return False
    for key in _REQUIRED[etype]:
        if key not in ev:
            return False
    for key, value in ev.items():
        check = _COMMON.get(key) or checks.get(key)
        if check is None or not check(value):
            return False
    return True


@functools.lru_cache(maxsize=1024)
def near_miss_type(etype: str) -> str | None:
    """The known event type an unknown `etype` most likely misspells ("tool_cal" → "tool_call",
    "Message" → "message"), or None when it is known or resembles none closely.

    Unknown types are valid v1 and kept as uploaded; a near miss of a known one is almost
    always a typo whose events the audit would silently ignore, so ingest rejects it."""
    if etype in EVENT_TYPES:
        return None
    folded = etype.strip().lower().replace("-", "_").replace(" ", "_")
    for known in EVENT_TYPES:
        if folded in (known, known.replace("_", "")) or folded.replace("_", "") == known:
            return known
    close = difflib.get_close_matches(folded, EVENT_TYPES, n=1, cutoff=0.85)
    return close[0] if close else None


def type_typo(ev: Any) -> Error | None:
    """(path, message) when the event's type is a near miss of a known type, else None."""
    etype = ev.get("type") if isinstance(ev, dict) else None
    if not isinstance(etype, str) or not etype or etype in EVENT_TYPES:
        return None
    known = near_miss_type(etype[:60])
    if known is None:
        return None
    return (
        "$.type",
        f'unknown event type "{etype[:60]}": did you mean "{known}"? (other unknown types are '
        "kept as uploaded; this one is so close to a known type that it is most likely a typo)",
    )


def validate_event(ev: Any) -> list[Error]:
    """Errors of one event as (JSON path, message); empty when the event is valid v1.

    Unknown event types and unknown fields are valid: they are kept as uploaded.
    """
    if type(ev) is dict and _fast_valid(ev):
        return []
    return validate_event_fully(ev)


def validate_event_fully(ev: Any) -> list[Error]:
    """`validate_event` without the fast path: every rule, every error."""
    c = _Checker()
    if not isinstance(ev, dict):
        c.fail("$", "a JSON object (one event per line)", ev)
        return c.errors
    tid = ev.get("trace_id")
    if tid is None:
        c.missing("$.trace_id", "a string")
    elif not isinstance(tid, str):
        c.fail("$.trace_id", "a string", tid)
    elif not tid:
        c.errors.append(("$.trace_id", 'expected a non-empty string, found ""'))
    elif len(tid) > MAX_ID_LENGTH:
        c.errors.append(
            ("$.trace_id", f"expected at most {MAX_ID_LENGTH} characters, found {len(tid)}")
        )
    etype = ev.get("type")
    if etype is None:
        c.missing("$.type", "an event type such as " + ", ".join(EVENT_TYPES[:4]))
    elif not isinstance(etype, str) or not etype:
        c.fail("$.type", "a non-empty string", etype)
    c.integer(ev, "seq", "$", minimum=0)
    c.integer(ev, "turn", "$", minimum=0)
    for key in ("ts", "end_ts"):
        if key in ev and not _timestamp(ev[key]):
            c.fail(f"$.{key}", "an RFC 3339 timestamp such as 2026-01-31T12:00:00Z", ev[key])
    _check_timing(c, ev)
    c.obj(ev, "labels", "$")
    c.obj(ev, "meta", "$")
    check = _TYPE_CHECKS.get(etype) if isinstance(etype, str) else None
    if check is not None:
        check(c, ev)
    return c.errors
