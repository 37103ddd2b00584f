"""``unique_stale_argument`` (TwinCheck App. Fig. 6): an argument carries a value from an
earlier lookup while the latest request uniquely asks for a different value of the same kind
for the same argument role. Twin: the same call with only that argument replaced by the
concrete requested value.

Preconditions, each a function below, for one top-level string argument value ``v``:

1. `from_earlier_lookup`: ``v`` is an identifier (`identifier_kind`) that appeared in a tool
   result before the latest request, in none after it (a value produced after the request is
   fresh, never stale), and in no user message (the user's own values are not lookups);
2. `requested_instead`: the latest request names exactly one different value of the same
   kind — the whole identifier, or its trailing digits ("the card ending in 8107") — and does
   not name ``v``;
3. `same_role`: that value was never passed as a different argument, where both values
   appeared in tool results they share a result key (the same role in the data), and the
   request does not introduce it as the user's own identity (`names_self`: "I am USR001",
   "logging in as USR001" — a login or sender id);
4. `not_bound_in_turn`: no call of the current turn already used that value.

The twin always exists when the certificate holds: the requested value is concrete by
construction (named in full, or the one identifier of the kind the digits single out).
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any

from ..facts import TraceFacts, scalar_text, tokens
from ..trace import ToolCall
from .base import CertContext, Hit, Twin, register_certificate

_IDENT = re.compile(r"^(?=.*[A-Za-z])(.*[A-Za-z_\-.:#])(\d{3,})$")
_DIGITS = re.compile(r"(?<![A-Za-z0-9])\d{3,}(?![A-Za-z0-9])")


def identifier_kind(value: str) -> tuple[str, str] | None:
    """(prefix, digits) of an identifier-like value — a prefix containing a letter, then a
    run of at least three digits ending the value (``card_4332``, ``gift_card_8516878``,
    ``USR001``). Plain numbers and codes such as ``4BMN53`` have no kind: "a value of the same
    kind" must be recognisable lexically (SPEC §5.1; TwinCheck App. Fig. 6)."""
    if len(value) <= 64:  # the same few ids recur in every call of a trace
        return _short_identifier_kind(value)
    return _identifier_kind(value)


@lru_cache(maxsize=4096)
def _short_identifier_kind(value: str) -> tuple[str, str] | None:
    return _identifier_kind(value)


def _identifier_kind(value: str) -> tuple[str, str] | None:
    m = _IDENT.match(value)
    if m is None:
        return None
    return m.group(1), m.group(2)


def from_earlier_lookup(value: str, facts: TraceFacts) -> bool:
    """Precondition 1 (see module docstring)."""
    if identifier_kind(value) is None:
        return False
    seen = facts.seen_at(value)
    if seen is None or seen[1] >= facts.request_index:
        return False  # not from a tool result, or (also) produced after the request: fresh
    return not facts.in_user_text(value)


def requested_instead(value: str, facts: TraceFacts) -> str | None:
    """Precondition 2: the one different value of ``value``'s kind that the latest request
    names — in full, or by trailing digits that single out one such value the trace holds;
    None unless exactly one (a digit run that matches no such value is not taken for one: it
    may be an amount or a year)."""
    prefix, digits = identifier_kind(value) or ("", "")
    request = facts.latest_request
    if digits in _DIGITS.findall(request) or value in tokens(request):
        return None  # the request still names this value
    named: set[str] = set()
    for tok in tokens(request):
        kind = identifier_kind(tok)
        if kind is not None and kind[0] == prefix and len(kind[1]) == len(digits):
            named.add(tok)
    for run in _DIGITS.findall(request):
        matches = {
            w
            for w in facts.result_values()
            if (k := identifier_kind(w)) is not None
            and k[0] == prefix
            and len(k[1]) == len(digits)
            and k[1].endswith(run)
        }
        if len(matches) > 1:
            return None  # the digits do not single out one value
        named |= matches
    return next(iter(named)) if len(named) == 1 else None


def same_role(value: str, requested: str, argument: str, facts: TraceFacts) -> str | None:
    """Precondition 3 (negated): why ``requested`` plays a different role than ``value``."""
    for a in facts.attempts:
        for k, v in a.call.arguments.items():
            if k != argument and isinstance(v, (str, int)) and scalar_text(v) == requested:
                return f"{requested} was passed as {k!r} to {a.call.name}"
    keys_req = facts.keys_of(requested) - {""}
    keys_val = facts.keys_of(value) - {""}
    if keys_req and keys_val and not keys_req & keys_val:
        return f"{requested} appeared under {sorted(keys_req)}, {value} under {sorted(keys_val)}"
    return None


_SELF = re.compile(
    r"(?:\bi am|\bi'm|\bmy (?:user )?id is|\b(?:log(?:ging)?|sign(?:ing)?) ?in as|\blogin as|"
    r"\bas user)\s+[\"'`]?$",
    re.IGNORECASE,
)


def names_self(requested: str, request: str) -> bool:
    """Precondition 3, the user's own identity: the request introduces ``requested`` as who
    the user is ("I am USR001", "logging in as USR001", "my user id is …") — a login or sender
    id, not the value asked for in place of the stale one."""
    for m in re.finditer(re.escape(requested), request):
        if _SELF.search(request[max(0, m.start() - 40) : m.start()]):
            return True
    return False


def not_bound_in_turn(requested: str, facts: TraceFacts) -> bool:
    """Precondition 4."""
    return requested not in facts.bound_in_turn()


@register_certificate("unique_stale_argument")
def unique_stale_argument(call: ToolCall, ctx: CertContext) -> Hit | None:
    facts = ctx.facts
    if facts.request_index < 0 or not facts.request_has_digits:
        return None
    for arg, v in call.arguments.items():
        if not isinstance(v, str) or not from_earlier_lookup(v, facts):
            continue
        requested = requested_instead(v, facts)
        if requested is None:
            continue
        if (
            same_role(v, requested, arg, facts) is not None
            or names_self(requested, facts.latest_request)
            or not not_bound_in_turn(requested, facts)
        ):
            continue
        details: dict[str, Any] = {
            "argument": arg,
            "stale": v,
            "requested": requested,
            "stale_seen_at": facts.seen_at(v),
            "request_index": facts.request_index,
        }
        args = dict(call.arguments)
        args[arg] = requested
        return Hit(
            "unique_stale_argument",
            details,
            Twin("call", call.name, args),
            f"replace only {arg!r}: {v} -> {requested}",
        )
    return None
