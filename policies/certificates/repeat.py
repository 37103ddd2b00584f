"""``repeat_after_error`` (TwinCheck App. Fig. 5): the identical call failed earlier and no
successful call intervenes since. Twin: the most relevant evidence-gathering (read-only) call
whose arguments are grounded in the trace; else an ask-user reply. The ranking and the
runner-ups are recorded.

The paper's condition is "no later successful current-turn tool record intervenes"; here no
successful call at all may intervene, in this turn or an earlier one (the same within a turn,
stricter across turns: a success in between may have changed the state the retry meets). A
user message in between does not matter: in a replayed environment only calls change state,
so the identical call meets the identical state (τ-bench agents retry after each user nudge).

Ranking (this project's choice; the paper says only "an evidence-gathering call grounded in
trace context"), highest first: same class or family as the failed tool (3), each argument
copied from the failed call (2), each shared name token with the failed tool (1), each stem
shared between the candidate's name, description and chosen values and the error text (1),
a tool the trace already called successfully (0.5). Ties: fewer arguments, then name. Tools
the user's side has not made available at this turn (BFCL's excluded and not-yet-added
functions) are never candidates, nor is a read that already failed identically.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..facts import Attempt, TraceFacts, canonical_args, scalar_text
from ..tool_profile import (
    READ_VERBS,
    ToolInfo,
    ToolProfile,
    build_profile,
    enum_values,
    name_tokens,
    text_stems,
)
from ..trace import ToolCall, ToolSpec, Trace
from .base import CertContext, Hit, Twin, register_certificate

#: Words too common in error texts and tool descriptions to say anything about relevance.
_STOP = frozenset(
    "the a an of to in on for and or is are be was not no with from by this that it its as at "
    "error during execution tool belong belongs which allow allows user users such various "
    "aspect aspects more description".split()
)
_RUNNER_UPS = 3


def failed_identical(call: ToolCall, facts: TraceFacts) -> Attempt | None:
    """Precondition 1: the newest attempt of the identical call (same tool, same arguments),
    when it failed."""
    a = facts.last_by_key.get(facts.call_key(call))
    return a if a is not None and a.status == "error" else None


def success_since(failed: Attempt, facts: TraceFacts) -> Attempt | None:
    """Precondition 2 (negated): a successful call after the failure."""
    if facts.last_ok_pos <= failed.pos:
        return None
    return next(a for a in facts.attempts[failed.pos + 1 :] if a.status not in (None, "error"))


def pending_since(failed: Attempt, facts: TraceFacts) -> Attempt | None:
    """Precondition 2 cannot be read: a call made after the failure whose result the prefix
    does not hold yet (a parallel step written calls first, results after), so whether it
    succeeded — and changed the state the retry meets — is unknown here. Calls the harness
    flagged as never executed change nothing and do not count."""
    for a in facts.attempts[failed.pos + 1 :]:
        if a.status is None and not a.call.meta.get("not_executed"):
            return a
    return None


@dataclass(slots=True)
class Candidate:
    tool: str
    arguments: dict[str, Any]
    score: float
    features: dict[str, float] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "tool": self.tool,
            "arguments": dict(self.arguments),
            "score": self.score,
            "features": dict(self.features),
        }


def _content_stems(text: str) -> set[str]:
    return {s for s in text_stems(text) if s not in _STOP and len(s) > 2}


def read_only_candidates(profile: ToolProfile, facts: TraceFacts) -> list[ToolInfo]:
    """Read-only tools of the trace offered at this turn; when the header lists no tools,
    read-verb tools the trace already called successfully, with that call's argument names as
    required parameters."""
    tools = [
        t for t in profile.tools.values() if t.read_only and profile.available(t.name, facts.turn)
    ]
    if tools or profile.tools:
        return tools
    seen: list[ToolInfo] = []
    for name, attempts in facts.by_name_ok.items():
        if (name_tokens(name) or [""])[0] in READ_VERBS and attempts:
            args = attempts[-1].call.arguments
            schema = {"type": "object", "properties": {k: {} for k in args}, "required": list(args)}
            seen.append(ToolInfo(name, schema, read_only=True))
    return seen


def _fill(
    tool: ToolInfo, call: ToolCall, facts: TraceFacts, error: set[str]
) -> tuple[dict[str, Any], int] | None:
    """Grounded arguments for ``tool``: the failed call's value for a parameter of the same
    name (when grounded); for a required parameter, else the latest value seen under that name
    in a tool result, else the enumerated value that best matches the error text. None when a
    required parameter cannot be filled."""
    args: dict[str, Any] = {}
    shared = 0
    required = set(tool.required())
    for p, schema in tool.properties().items():
        if p in call.arguments and facts.grounded(call.arguments[p]):
            args[p] = call.arguments[p]
            shared += 1
        elif p in required:
            seen = facts.keyed_values(p)
            if seen:
                args[p] = _typed(seen[-1], schema)
                continue
            options = enum_values(schema)
            best = max(options, key=lambda o: len(_content_stems(str(o)) & error), default=None)
            if best is None or not _content_stems(str(best)) & error:
                return None
            args[p] = best
    if not required <= args.keys():
        return None
    return args, shared


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


def _failed_before(name: str, args: dict[str, Any], facts: TraceFacts) -> bool:
    """The identical call failed earlier and that tool has not succeeded since."""
    failed = facts.last_fail.get(name + "\x00" + canonical_args(args))
    if failed is None:
        return False
    ok = facts.by_name_ok.get(name, [])
    return not any((a.result_index or -1) > (failed.result_index or -1) for a in ok)


def rank_evidence_calls(call: ToolCall, failed: Attempt, ctx: CertContext) -> list[Candidate]:
    """Grounded read-only calls other than the failed call itself, most relevant first (see
    module docstring)."""
    error = _content_stems(str(failed.result.content if failed.result is not None else ""))
    family = ctx.profile.family(call.name)
    own = {t for t in name_tokens(call.name) if t not in READ_VERBS}
    out: list[Candidate] = []
    for tool in read_only_candidates(ctx.profile, ctx.facts):
        filled = _fill(tool, call, ctx.facts, error)
        if filled is None:
            continue
        args, shared = filled
        if tool.name == call.name:
            continue  # the failed tool again (even with fewer arguments) gathers no evidence
        if _failed_before(tool.name, args, ctx.facts):
            continue  # a read that already failed this way is no evidence either
        words = _content_stems(
            " ".join([tool.name, tool.description.split("Tool description:")[-1]])
        )
        for v in args.values():
            words |= _content_stems(scalar_text(v))
        f = {
            "same_family": 1.0 if family and ctx.profile.family(tool.name) == family else 0.0,
            "shared_arguments": float(shared),
            "name_overlap": float(len(own & set(name_tokens(tool.name)))),
            "error_overlap": float(len(words & error)),
            "used_before": 1.0 if ctx.facts.by_name_ok.get(tool.name) else 0.0,
        }
        score = 3 * f["same_family"] + 2 * f["shared_arguments"] + f["name_overlap"]
        score += f["error_overlap"] + 0.5 * f["used_before"]
        out.append(Candidate(tool.name, args, score, f))
    out.sort(key=lambda c: (-c.score, len(c.arguments), c.tool))
    return out


def read_only_tools(trace: Trace, facts: TraceFacts) -> list[ToolSpec]:
    """The read-only tools a twin generator may offer at this point of ``trace`` (``facts``:
    its prefix): the header's specs, or the observed read-verb tools when it lists none."""
    specs = {t.name: t for t in trace.header.tools}
    return [
        specs.get(t.name) or ToolSpec(t.name, t.description, t.parameters, read_only=True)
        for t in read_only_candidates(build_profile(trace), facts)
    ]


@register_certificate("repeat_after_error")
def repeat_after_error(call: ToolCall, ctx: CertContext) -> Hit | None:
    failed = failed_identical(call, ctx.facts)
    if failed is None or success_since(failed, ctx.facts) is not None:
        return None
    if pending_since(failed, ctx.facts) is not None:
        return None
    details: dict[str, Any] = {
        "failed_call": failed.call.index,
        "failed_result": failed.result_index,
        "error": str(failed.result.content if failed.result is not None else "")[:300],
    }
    ranked = rank_evidence_calls(call, failed, ctx)
    details["candidates"] = [c.to_dict() for c in ranked[: _RUNNER_UPS + 1]]
    if ranked:
        best = ranked[0]
        reason = f"most relevant grounded read-only call (score {best.score:g} of {len(ranked)})"
        return Hit("repeat_after_error", details, Twin("call", best.tool, best.arguments), reason)
    return Hit(
        "repeat_after_error",
        details,
        Twin("ask_user", text=ctx.ask_user_text),
        "ask the user: no read-only tool can be called with grounded arguments",
    )
