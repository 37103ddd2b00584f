"""Exact replay (SPEC §4; TwinCheck §4 "exact replay holds the agent's parsed responses and
actions fixed until the first accepted replacement").

`replay` walks a trace's decision points in order across the given policies, holding every
recorded action fixed. The first accepted replacement ends exact replay; the guarded
trajectory is the recorded prefix, the replacement, and the counterfactual continuation
(``ReplayResult.continuation``, with ``continuation_reason`` saying why):

- ``live``: a continuer is given (``replay(..., continuer=...)``): the actor model continues
  the task from the replacement on — the paper's protocol. The environment is reset and
  brought to the replacement's state (recorded prefix calls, then the replacement's calls,
  executed), then ``continuer(trace, prefix_events, replacement_events, environment)``
  returns ``(trajectory_events, success, calls)``: the events it produced after the
  replacement, the outcome (None = unknown) and a log of its calls. The model-backends module
  provides one for BFCL; bind its client with ``functools.partial``;
- ``spliced``: an environment is given and the policy continues with the recorded actions —
  the replacement and the remaining recorded calls are executed, tool results come from the
  environment and the outcome from its checker. Valid only when the twin deletes the call or
  ends the turn, or when no later recorded call reads the replaced call's output (the
  decision's ``requires_unread_output``); otherwise the guarded outcome is unknown and the
  reason says "needs live continuation" (mode ``truncated``);
- ``recorded``: the replacement ends the episode with a recorded, labelled artefact (a kept
  or committed candidate), so the outcome is that artefact's label;
- ``truncated``: no environment and no label (or a splice that would not be valid): the
  guarded outcome is unknown until a human annotates it or a live continuation runs.

With no accepted replacement the guarded trajectory is the trace itself (mode ``exact``).
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from .decision import Decision, GuardPolicy
from .environments.base import Environment, ToolOutcome
from .facts import leaves, scalar_text, tokens
from .trace import JsonDict, Message, ToolCall, ToolResult, Trace

Continuation = Literal["exact", "spliced", "recorded", "truncated", "live"]
NEEDS_LIVE = "needs live continuation"

#: ``(trace, prefix_events, replacement_events, environment) -> (trajectory_events, success,
#: calls)`` — see the module docstring.
Continuer = Callable[
    [Trace, list[JsonDict], list[JsonDict], Environment | None],
    tuple[list[JsonDict], bool | None, list[JsonDict]],
]


@dataclass(slots=True)
class ReplayResult:
    trace_id: str
    decisions: list[Decision]
    accepted: Decision | None
    continuation: Continuation
    trajectory: list[JsonDict]
    actor_success: bool | None
    guarded_success: bool | None
    environment_log: list[JsonDict] = field(default_factory=list)
    continuation_reason: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {
            "trace_id": self.trace_id,
            "decisions": [d.record for d in self.decisions],
            "accepted": self.accepted.record if self.accepted else None,
            "accepted_policy": self.accepted.policy if self.accepted else None,
            "continuation": self.continuation,
            "continuation_reason": self.continuation_reason,
            "trajectory": self.trajectory,
            "actor_success": self.actor_success,
            "guarded_success": self.guarded_success,
        }


def _execute(env: Environment, name: str, args: dict[str, Any], turn: int | None) -> ToolOutcome:
    """Execute one call; environments that declare ``accepts_turn = True`` (BFCL: its checker
    works per user turn) also get the event's turn as ``execute(..., turn=...)``."""
    if getattr(env, "accepts_turn", False):
        return env.execute(name, args, turn=turn)  # type: ignore[call-arg]
    return env.execute(name, args)


def _result_event(trace: Trace, call_id: str, turn: Any, res: ToolOutcome) -> JsonDict:
    return {
        "trace_id": trace.trace_id,
        "type": "tool_result",
        "call_id": call_id,
        "status": res.status,
        "content": res.content,
        "turn": turn,
        "meta": {"guarded": True, "executed": True},
    }


def _prepare(
    trace: Trace, d: Decision, env: Environment
) -> tuple[list[JsonDict], list[JsonDict], list[JsonDict]]:
    """Reset ``env``, execute the recorded prefix's calls and the replacement's calls: (prefix
    events, replacement events with executed results, environment log)."""
    env.reset(trace)
    prefix: list[JsonDict] = []
    log: list[JsonDict] = []
    for e in trace.events[: d.index]:
        prefix.append(e.raw)
        if isinstance(e, ToolCall):  # bring the environment to the recorded state
            _execute(env, e.name, dict(e.arguments), e.turn)
    replacement: list[JsonDict] = []
    for r in d.replacement:
        replacement.append(r)
        if r.get("type") == "tool_call":
            args = r.get("arguments") if isinstance(r.get("arguments"), dict) else {}
            name, call_id, turn = str(r.get("name", "")), str(r.get("call_id", "")), r.get("turn")
            res = _execute(env, name, dict(args or {}), turn)
            log.append({"name": name, "arguments": args, "status": res.status})
            replacement.append(_result_event(trace, call_id, turn, res))
    return prefix, replacement, log


def _splice(
    trace: Trace, d: Decision, env: Environment
) -> tuple[list[JsonDict], bool | None, list[JsonDict]]:
    prefix, replacement, log = _prepare(trace, d, env)
    out = prefix + replacement
    for e in trace.events[d.index + 1 :]:
        if isinstance(e, ToolResult):
            continue  # recorded results are replaced by re-executed ones
        if (
            d.skip_turn is not None
            and e.turn == d.skip_turn
            and not (e.type == "message" and e.raw.get("role") == "user")
        ):
            continue
        out.append(e.raw)
        if isinstance(e, ToolCall):
            res = _execute(env, e.name, dict(e.arguments), e.turn)
            log.append({"name": e.name, "arguments": dict(e.arguments), "status": res.status})
            out.append(_result_event(trace, e.call_id, e.turn, res))
    return out, env.check(), log


def _scalars(value: Any) -> Iterable[str]:
    if isinstance(value, dict):
        for v in value.values():
            yield from _scalars(v)
    elif isinstance(value, list):
        for v in value:
            yield from _scalars(v)
    elif value is not None and not isinstance(value, bool):
        yield scalar_text(value)


def output_readers(trace: Trace, index: int) -> list[JsonDict]:
    """Later recorded calls that read the output of the call at ``index``: an argument value
    that first appeared in that call's recorded result (not in a user message, an earlier
    result or the call's own arguments). Values shorter than two characters are ignored."""
    call = trace.events[index]
    if not isinstance(call, ToolCall):
        return []
    result = next(
        (
            e
            for e in trace.events[index + 1 :]
            if isinstance(e, ToolResult) and (e.call_id == call.call_id or not call.call_id)
        ),
        None,
    )
    if result is None:
        return []
    known: set[str] = set(_scalars(call.arguments))
    for e in trace.events[:index]:
        if isinstance(e, ToolResult):
            known.update(v for _, v in leaves(e.content))
        elif isinstance(e, Message):
            known.update(tokens(e.content))
    produced = {v for _, v in leaves(result.content) if len(v) > 1} - known
    readers: list[JsonDict] = []
    for e in trace.events[result.index + 1 :]:
        if isinstance(e, ToolCall):
            read = sorted(v for v in set(_scalars(e.arguments)) if v in produced)
            if read:
                readers.append({"index": e.index, "name": e.name, "values": read[:3]})
    return readers


def actor_outcome(trace: Trace, env: Environment) -> bool | None:
    """The actor's outcome by re-executing its recorded calls (for traces that do not record
    one); a faithful environment reproduces recorded verdicts exactly (SPEC §4)."""
    env.reset(trace)
    for e in trace.events:
        if isinstance(e, ToolCall):
            _execute(env, e.name, dict(e.arguments), e.turn)
    return env.check()


def _stream(policies: Sequence[GuardPolicy], trace: Trace) -> Iterable[Decision]:
    if len(policies) == 1:
        return policies[0].decisions(trace)
    order = {p.name: i for i, p in enumerate(policies)}
    return heapq.merge(
        *(p.decisions(trace) for p in policies), key=lambda d: (d.index, order.get(d.policy, 0))
    )


def _live(
    t: Trace, d: Decision, env: Environment | None, continuer: Continuer
) -> tuple[list[JsonDict], bool | None, list[JsonDict]]:
    if env is not None:
        prefix, replacement, log = _prepare(t, d, env)
    else:
        prefix, replacement, log = [e.raw for e in t.events[: d.index]], list(d.replacement), []
    events, success, calls = continuer(t, prefix, replacement, env)
    head = prefix + replacement
    if events[: len(head)] == head:  # a continuer that hands back the whole trajectory
        events = events[len(head) :]
    return head + list(events), success, log + list(calls)


def replay(
    trace: Trace | Sequence[JsonDict],
    policies: Sequence[GuardPolicy] = (),
    environment: Environment | None = None,
    continuer: Continuer | None = None,
) -> ReplayResult:
    """Replay ``trace`` under ``policies`` (see module docstring). With no policy the result's
    trajectory is the input events, unchanged and in order."""
    t = trace if isinstance(trace, Trace) else Trace.from_events(trace)
    actor = t.actor_success()
    if actor is None and environment is not None:
        actor = actor_outcome(t, environment)
    decisions: list[Decision] = []
    accepted: Decision | None = None
    for d in _stream(policies, t):
        decisions.append(d)
        if d.replace:
            accepted = d
            break
    if accepted is None:
        return ReplayResult(t.trace_id, decisions, None, "exact", t.raw_events(), actor, actor)
    if accepted.continue_recorded and continuer is not None:
        traj, outcome, log = _live(t, accepted, environment, continuer)
        return ReplayResult(
            t.trace_id, decisions, accepted, "live", traj, actor, outcome, log, "live continuation"
        )
    head = [e.raw for e in t.events[: accepted.index]] + list(accepted.replacement)
    if accepted.continue_recorded and environment is not None:
        readers = output_readers(t, accepted.index) if accepted.requires_unread_output else []
        if readers:
            r = readers[0]
            reason = (
                f"{NEEDS_LIVE}: recorded call #{r['index']} ({r['name']}) reads the replaced "
                f"call's output ({', '.join(r['values'])})"
            )
            return ReplayResult(
                t.trace_id, decisions, accepted, "truncated", head, actor, None, [], reason
            )
        traj, outcome, log = _splice(t, accepted, environment)
        why = (
            "no later recorded call reads the replaced call's output"
            if accepted.requires_unread_output
            else "the replacement deletes the call or ends the turn"
        )
        return ReplayResult(
            t.trace_id, decisions, accepted, "spliced", traj, actor, outcome, log, why
        )
    if accepted.guarded_success is not None:
        mode: Continuation = "recorded"
        why = "the replacement ships a labelled artefact"
    else:
        mode = "truncated"
        why = "no environment: the guarded outcome needs annotation or a live continuation"
    return ReplayResult(
        t.trace_id, decisions, accepted, mode, head, actor, accepted.guarded_success, [], why
    )
