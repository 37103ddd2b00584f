"""``inverse_action`` (TwinCheck App. Fig. 4): the call is the inverse, from the environment's
fixed table, of an earlier successful call on the same target, and the user's current request
asks for no reversal. Twin: delete the call; with a successful operation and no unresolved
failure in the turn, the fixed completion response.

Preconditions, each a function below: (1) `inverted_success`; (2) no `requested_reversal`;
(3) `target_established`; (4) no `effect_used` in between. (3) and (4) are this project's
reading of "the inverse of an earlier successful call": the earlier call's effect must be one
the user could have wanted and that still stood untouched — else undoing it is a correction or
the second half of a move, which real BFCL runs show (``touch js``/``rm js`` fixing a typo;
``touch f``, ``cp f dir``, ``rm f``).
"""

from __future__ import annotations

import re
from typing import Any

from ..facts import Attempt, scalar_text
from ..inverse_tables import InverseMatch
from ..tool_profile import enum_values, stem, text_stems
from ..trace import ToolCall
from .base import CertContext, Hit, completion_or_delete, register_certificate

#: Words in the current request that ask for any reversal.
REVERSAL_WORDS = ("undo", "revert", "reverse", "rollback", "roll back", "back", "again", "restore")
_SPACE = re.compile(r"\s+")


def inverted_success(call: ToolCall, ctx: CertContext) -> tuple[Attempt, InverseMatch] | None:
    """Precondition 1: an earlier successful call that ``call`` inverts on the same target
    (the environment's table), searched newest first within the scope (the current turn by
    default, ``inverse_scope="trace"`` for the whole trace). An identical successful call met
    first means this call's effect already stands: it repeats, it does not invert."""
    table = ctx.profile.inverses
    if not table.may_invert(call.name):
        return None
    facts = ctx.facts
    scope = facts.turn_attempts() if ctx.inverse_scope == "turn" else facts.attempts
    key = facts.call_key(call)
    partners = table.partners(call.name)
    for a in reversed(scope):
        if a.status in (None, "error"):
            continue
        if a.key == key:
            return None
        if a.call.name not in partners:
            continue
        result = a.result.content if a.result is not None else None
        m = table.relation(call.name, call.arguments, a.call.name, a.call.arguments, result)
        if m is not None:
            return a, m
    return None


def _target_values(call: ToolCall, match: InverseMatch) -> list[str]:
    out: list[str] = []
    for k in match.target_args:
        v = call.arguments.get(k)
        for x in v if isinstance(v, list) else [v]:
            if x is not None and not isinstance(x, bool):
                out.append(scalar_text(x))
    return out


def target_established(
    call: ToolCall, earlier: Attempt, match: InverseMatch, ctx: CertContext
) -> bool:
    """Precondition 3: a target named by value was established before the inverted call — in
    a user message, an earlier tool result, or as one of the parameter's enumerated values (a
    car's doors) — not made up by the actor in that call (undoing one's own made-up effect,
    ``touch js`` then ``rm js``, is a correction, not a reversal). Argument-less targets and
    targets the inverted call created hold trivially."""
    facts = ctx.facts
    info = ctx.profile.tools.get(call.name)
    props = info.properties() if info is not None else {}
    constants = {scalar_text(o) for k in match.target_args for o in enum_values(props.get(k))}
    for v in _target_values(call, match):
        seen = facts.seen_at(v)
        if not (v in constants or facts.in_user_text(v) or (seen and seen[0] < earlier.call.index)):
            return False
    return True


def effect_used(
    call: ToolCall, earlier: Attempt, match: InverseMatch, ctx: CertContext
) -> Attempt | None:
    """Precondition 4 (negated): a successful call between the two that used the target
    (took a target value as an argument: ``touch f``, ``cp f d``, ``rm f`` is a move, not a
    reversal) or changed what its name refers to (a breaker such as ``cd``)."""
    values = set(_target_values(call, match))
    for a in ctx.facts.attempts[earlier.pos + 1 :]:
        if a.status in (None, "error"):
            continue
        if a.call.name in match.breakers:
            return a
        if values and values & {scalar_text(x) for x in _scalars(a.call.arguments)}:
            return a
    return None


def _scalars(value: Any) -> list[Any]:
    if isinstance(value, dict):
        return [x for v in value.values() for x in _scalars(v)]
    if isinstance(value, list):
        return [x for v in value for x in _scalars(v)]
    return [] if value is None or isinstance(value, bool) else [value]


def requested_reversal(match: InverseMatch, request: str) -> str | None:
    """Precondition 2 (negated): the word or phrase of the current request that asks for this
    reversal — a general reversal word, or one of the pair's own words for this direction
    (matched on word stems, so "released" asks for "release")."""
    low = _SPACE.sub(" ", request.lower())
    stems = text_stems(request)
    for w in (*REVERSAL_WORDS, *match.request_words):
        if " " in w:
            if re.search(rf"\b{re.escape(w)}\b", low):
                return w
        elif stem(w) in stems:
            return w
    return None


@register_certificate("inverse_action")
def inverse_action(call: ToolCall, ctx: CertContext) -> Hit | None:
    found = inverted_success(call, ctx)
    if found is None:
        return None
    earlier, match = found
    if requested_reversal(match, ctx.facts.latest_request) is not None:
        return None
    if not target_established(call, earlier, match, ctx):
        return None
    if effect_used(call, earlier, match, ctx) is not None:
        return None
    twin, reason = completion_or_delete(ctx)
    details: dict[str, Any] = {
        "inverts": earlier.call.index,
        "inverse_of": earlier.call.name,
        "inverse_of_arguments": dict(earlier.call.arguments),
        "table": ctx.profile.inverses.name,
        **match.to_dict(),
        "scope": ctx.inverse_scope,
        "requested_reversal": False,
    }
    return Hit("inverse_action", details, twin, reason)
