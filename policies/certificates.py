"""TwinCheck's evidence condition: a registry of certificates, each a trace-local failure
hypothesis with its deterministic negative twin (SPEC §5.1 step 1; Dai & Huang 2026, §3 and
App. Figures 4–6).

A certificate is a function ``(call, facts, trace) -> Hit | None``. Register new ones with
`register_certificate`; they are tried in registration order and the first hit is used.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from .facts import TraceFacts, canonical_args
from .trace import ToolCall, ToolSpec, Trace

TwinKind = Literal["call", "completion", "delete"]

#: The fixed inverse table (TwinCheck App. Fig. 4: a prespecified lexical relation).
INVERSE_VERBS: dict[str, str] = {}
for _a, _b in [
    ("lock", "unlock"),
    ("add", "remove"),
    ("create", "delete"),
    ("follow", "unfollow"),
    ("open", "close"),
    ("enable", "disable"),
    ("mount", "unmount"),
    ("block", "unblock"),
    ("subscribe", "unsubscribe"),
    ("archive", "unarchive"),
    ("mute", "unmute"),
    ("like", "unlike"),
    ("pin", "unpin"),
    ("star", "unstar"),
    ("attach", "detach"),
    ("install", "uninstall"),
    ("connect", "disconnect"),
    ("activate", "deactivate"),
    ("grant", "revoke"),
    ("start", "stop"),
    ("push", "pop"),
    ("mkdir", "rmdir"),
    ("insert", "delete"),
    ("hide", "show"),
    ("book", "cancel"),
    ("login", "logout"),
]:
    INVERSE_VERBS.setdefault(_a, _b)
    INVERSE_VERBS.setdefault(_b, _a)

#: Words in the latest user message that request a reversal.
REVERSAL_WORDS = frozenset({"undo", "revert", "reverse", "rollback", "back", "again"})
_WORD = re.compile(r"[a-z]+")
_DIGITS = re.compile(r"\d+")

COMPLETION_TEXT = "The requested operation is complete."


@dataclass(frozen=True, slots=True)
class Twin:
    kind: TwinKind
    name: str = ""
    arguments: dict[str, Any] = field(default_factory=dict)
    text: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "name": self.name,
            "arguments": dict(self.arguments),
            "text": self.text,
        }


@dataclass(frozen=True, slots=True)
class Hit:
    certificate: str
    details: dict[str, Any]
    twin: Twin


Certificate = Callable[[ToolCall, TraceFacts, Trace], Hit | None]
CERTIFICATES: dict[str, Certificate] = {}


def register_certificate(name: str) -> Callable[[Certificate], Certificate]:
    def deco(fn: Certificate) -> Certificate:
        CERTIFICATES[name] = fn
        return fn

    return deco


_INVERSE_CACHE: dict[str, str | None] = {}


def inverse_name(name: str) -> str | None:
    """``unlock_account`` ↔ ``lock_account``: swap the first token found in the table."""
    if name in _INVERSE_CACHE:
        return _INVERSE_CACHE[name]
    parts = re.split(r"([_\-.]|(?<=[a-z])(?=[A-Z]))", name)
    inv: str | None = None
    for i, p in enumerate(parts):
        low = p.lower()
        if low in INVERSE_VERBS:
            rep = INVERSE_VERBS[low]
            rep = rep.capitalize() if p[:1].isupper() else rep
            inv = "".join(parts[:i] + [rep] + parts[i + 1 :])
            break
    _INVERSE_CACHE[name] = inv
    return inv


def _same_target(a: dict[str, Any], b: dict[str, Any]) -> bool:
    shared = a.keys() & b.keys()
    if not shared:
        return not a and not b
    return all(a[k] == b[k] for k in shared)


@register_certificate("inverse_action")
def inverse_action(call: ToolCall, facts: TraceFacts, trace: Trace) -> Hit | None:
    """The call inverts an earlier successful call on the same target and the latest user
    message requests no reversal. Twin: delete the call; with a successful operation and no
    unresolved later failure, the fixed completion response (end the turn)."""
    inv = inverse_name(call.name)
    if inv is None:
        return None
    earlier = facts.by_name_ok.get(inv)
    if not earlier:
        return None
    match = next(
        (a for a in reversed(earlier) if _same_target(a.call.arguments, call.arguments)), None
    )
    if match is None:
        return None
    words = set(_WORD.findall(facts.latest_user.lower()))
    verb = next((w for w in _WORD.findall(call.name.lower()) if w in INVERSE_VERBS), "")
    if words & REVERSAL_WORDS or (verb and verb in words):
        return None
    complete = facts.succeeded_operation() and not facts.unresolved_failure()
    twin = Twin("completion", text=COMPLETION_TEXT) if complete else Twin("delete")
    return Hit(
        "inverse_action",
        {"inverts": match.call.index, "inverse_of": inv, "requested_reversal": False},
        twin,
    )


READ_VERBS = frozenset(
    {
        "get",
        "list",
        "search",
        "find",
        "lookup",
        "check",
        "read",
        "show",
        "describe",
        "query",
        "fetch",
        "view",
        "calculate",
    }
)


def _read_verb(name: str) -> bool:
    return (_WORD.findall(name.lower()) or [""])[0] in READ_VERBS


def read_only_tools(trace: Trace, facts: TraceFacts) -> list[ToolSpec]:
    """Tools declared ``read_only``; when the header declares none (many importers cannot
    know), tools whose name starts with a read verb (get_, list_, search_, …); when the header
    lists no tools at all, read-verb tools the trace has already called successfully, with
    the argument names of that call as their (required) parameters."""
    declared = [t for t in trace.header.tools if t.read_only]
    if declared:
        return declared
    if trace.header.tools:
        return [t for t in trace.header.tools if _read_verb(t.name)]
    seen: list[ToolSpec] = []
    for name, attempts in facts.by_name_ok.items():
        if _read_verb(name) and attempts:
            args = attempts[-1].call.arguments
            schema = {"type": "object", "properties": {k: {} for k in args}, "required": list(args)}
            seen.append(ToolSpec(name, parameters=schema))
    return seen


def _evidence_call(call: ToolCall, facts: TraceFacts, trace: Trace) -> Twin | None:
    """An evidence-gathering (read-only) call whose required arguments are all grounded:
    the actor's value for a parameter of the same name when grounded, else the latest value
    seen under that name in a tool result. Tools sharing parameters with the call first."""
    tools = read_only_tools(trace, facts)
    tools.sort(key=lambda t: -len(set(_props(t.parameters)) & call.arguments.keys()))
    for tool in tools:
        props = _props(tool.parameters)
        required = [r for r in tool.parameters.get("required") or [] if isinstance(r, str)]
        args: dict[str, Any] = {}
        for p in props:
            if p in call.arguments and facts.grounded(call.arguments[p]):
                args[p] = call.arguments[p]
            else:
                seen = facts.keyed_values(p)
                if seen:
                    args[p] = _typed(seen[-1], props[p])
        if all(r in args for r in required) and (args or not props):
            return Twin("call", tool.name, args)
    return None


def _props(schema: dict[str, Any]) -> dict[str, Any]:
    p = schema.get("properties")
    return p if isinstance(p, dict) else {}


def _typed(text: str, prop: Any) -> Any:
    t = prop.get("type") if isinstance(prop, dict) else None
    try:
        if t == "integer":
            return int(text)
        if t in ("number", "float"):
            return float(text)
    except ValueError:
        return text
    return text


@register_certificate("repeat_after_error")
def repeat_after_error(call: ToolCall, facts: TraceFacts, trace: Trace) -> Hit | None:
    """The same tool with identical arguments failed earlier and no successful tool record
    intervenes since. Twin: an evidence-gathering read-only call grounded in the trace."""
    key = call.name + "\x00" + _canon(call)
    failed = facts.last_fail.get(key)
    if failed is None or facts.last_ok_index > (failed.result_index or -1):
        return None
    twin = _evidence_call(call, facts, trace)
    if twin is None:
        return None
    return Hit(
        "repeat_after_error",
        {"failed_call": failed.call.index, "failed_result": failed.result_index},
        twin,
    )


def _canon(call: ToolCall) -> str:
    return canonical_args(call.arguments)


_IDENT = re.compile(r"^(?=.*[A-Za-z])(.*[A-Za-z_\-.:#])(\d{3,})$")


def identifier_kind(value: str) -> tuple[str, str] | None:
    """(prefix, digits) of an identifier-like value — a prefix containing a letter, then a
    run of at least three digits ending the value (``card_4332``, ``gift_card_8516878``).
    Plain numbers and codes such as ``4BMN53`` have no kind: "a value of the same kind" must
    be recognisable lexically (SPEC §5.1; TwinCheck App. Fig. 6)."""
    m = _IDENT.match(value)
    if m is None:
        return None
    return m.group(1), m.group(2)


def stale_replacement(value: Any, facts: TraceFacts) -> str | None:
    """The unique value the latest user message asks for instead of ``value``, when
    ``value`` is an identifier from an earlier lookup that the message no longer mentions."""
    if not isinstance(value, str):
        return None
    kind = identifier_kind(value)
    user = facts.latest_user
    if kind is None or not any(ch.isdigit() for ch in user):
        return None
    prefix, digits = kind
    if digits in user or value not in facts.result_values():
        return None  # the user still asks for this one, or it is not from a lookup
    user_digits = set(_DIGITS.findall(user))
    options = set()
    for w in facts.result_values():
        wk = identifier_kind(w)
        if (
            w != value
            and wk is not None
            and wk[0] == prefix
            and len(wk[1]) == len(digits)
            and (wk[1] in user_digits or w in user)
        ):
            options.add(w)
    return next(iter(options)) if len(options) == 1 else None


@register_certificate("unique_stale_argument")
def unique_stale_argument(call: ToolCall, facts: TraceFacts, trace: Trace) -> Hit | None:
    """An argument carries a value from an earlier lookup while the latest user message
    uniquely asks for a different value of the same kind that the trace makes concrete.
    Twin: the same call with only that argument replaced."""
    for arg, v in call.arguments.items():
        new = stale_replacement(v, facts)
        if new is None:
            continue
        args = dict(call.arguments)
        args[arg] = new
        return Hit(
            "unique_stale_argument",
            {"argument": arg, "stale": v, "requested": new},
            Twin("call", call.name, args),
        )
    return None
