"""Exact replay (SPEC §4; TwinCheck §4 "exact replay holds the agent's parsed responses and
actions fixed until the first accepted replacement").

`replay` walks a trace's decision points in order across the given policies, holding every
recorded action fixed. The first accepted replacement ends exact replay; the guarded
trajectory is the recorded prefix, the replacement, and the counterfactual continuation:

- ``spliced``: an environment is given and the policy continues with the recorded actions —
  the replacement and the remaining recorded calls are executed, tool results come from the
  environment and the outcome from its checker;
- ``recorded``: the replacement ends the episode with a recorded, labelled artefact (a kept
  or committed candidate), so the outcome is that artefact's label;
- ``truncated``: no environment and no label: the guarded outcome is unknown until a human
  annotates it.

With no accepted replacement the guarded trajectory is the trace itself (mode ``exact``).
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from .decision import Decision, GuardPolicy
from .environment import Environment, ToolOutcome
from .trace import JsonDict, ToolCall, ToolResult, Trace

Continuation = Literal["exact", "spliced", "recorded", "truncated"]


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

    def to_dict(self) -> dict[str, Any]:
        return {
            "trace_id": self.trace_id,
            "decisions": [d.record for d in self.decisions],
            "accepted": self.accepted.record if self.accepted else None,
            "accepted_policy": self.accepted.policy if self.accepted else None,
            "continuation": self.continuation,
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


def _splice(
    trace: Trace, d: Decision, env: Environment
) -> tuple[list[JsonDict], bool | None, list[JsonDict]]:
    env.reset(trace)
    out: list[JsonDict] = []
    log: list[JsonDict] = []

    def run(
        call_raw: JsonDict, name: str, args: dict[str, Any], call_id: str, turn: int | None
    ) -> None:
        res = _execute(env, name, args, turn)
        log.append({"name": name, "arguments": args, "status": res.status})
        out.append(
            {
                "trace_id": trace.trace_id,
                "type": "tool_result",
                "call_id": call_id,
                "status": res.status,
                "content": res.content,
                "turn": turn,
                "meta": {"guarded": True, "executed": True},
            }
        )

    for e in trace.events[: d.index]:
        out.append(e.raw)
        if isinstance(e, ToolCall):  # bring the environment to the recorded state
            _execute(env, e.name, dict(e.arguments), e.turn)
    for r in d.replacement:
        out.append(r)
        if r.get("type") == "tool_call":
            args = r.get("arguments") if isinstance(r.get("arguments"), dict) else {}
            run(
                r,
                str(r.get("name", "")),
                dict(args or {}),
                str(r.get("call_id", "")),
                r.get("turn"),
            )
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
            run(e.raw, e.name, dict(e.arguments), e.call_id, e.turn)
    return out, env.check(), log


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


def replay(
    trace: Trace | Sequence[JsonDict],
    policies: Sequence[GuardPolicy] = (),
    environment: Environment | None = None,
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
    if environment is not None and accepted.continue_recorded:
        traj, outcome, log = _splice(t, accepted, environment)
        return ReplayResult(t.trace_id, decisions, accepted, "spliced", traj, actor, outcome, log)
    traj = [e.raw for e in t.events[: accepted.index]] + list(accepted.replacement)
    mode: Continuation = "recorded" if accepted.guarded_success is not None else "truncated"
    return ReplayResult(
        t.trace_id, decisions, accepted, mode, traj, actor, accepted.guarded_success
    )
