"""The entry point the app calls per trace: `audit_trace` (SPEC §1, §4, §5)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from .checklist.policy import ChecklistPolicy
from .commit.live import Responder
from .commit.policy import CommitPolicy
from .data_quality import RECORD_KEY, trace_flags
from .decision import GuardPolicy
from .environments.base import Environment
from .judge_registry import make_judge
from .judges import Judge
from .outcome_gaps import outcome_gap
from .replay import Continuer, replay
from .result import PolicyResult
from .settings import policy_settings
from .trace import JsonDict, Trace
from .transitions import transition
from .twincheck.policy import TwinCheckPolicy, TwinGenerator
from .vrr.policy import VrrPolicy

POLICIES: tuple[str, ...] = ("twincheck", "checklist", "vrr", "commit")


def build_policy(
    name: str,
    settings: Mapping[str, Any] | None = None,
    judge: Judge | None = None,
    twin_generator: TwinGenerator | None = None,
    responder: Responder | None = None,
    labeler: Responder | None = None,
) -> GuardPolicy:
    """One policy with its settings. ``responder`` / ``labeler``: the commit rule's model calls
    (`policies.commit.live`); other policies ignore them."""
    s = policy_settings(name, settings)
    if name == "twincheck":
        return TwinCheckPolicy(s, judge, twin_generator)
    if name == "checklist":
        return ChecklistPolicy(s)
    if name == "vrr":
        return VrrPolicy(s)
    return CommitPolicy(s, responder, labeler)


def _applied(name: str, summary: Mapping[str, Any]) -> bool:
    if name == "twincheck":
        return bool(summary.get("triggers"))
    return bool(summary.get("applied"))


def not_applicable_reason(name: str, summary: Mapping[str, Any]) -> str | None:
    """Why a policy had nothing to decide on a trace (SPEC §5.5). The checklist, VRR and commit
    rule say so in their record; TwinCheck decides at every tool call."""
    if name == "twincheck":
        return "no tool calls" if not summary.get("tool_calls") else None
    reason = summary.get("not_applicable")
    return str(reason) if reason else None


def unknown_reason(
    summary: Mapping[str, Any],
    actor: bool | None,
    guarded: bool | None,
    continuation: str,
    gap: str | None = None,
) -> str | None:
    """Why the transition is unknown (None when it is known): the trace's own ``gap``
    (`outcome_gaps`), else the policy's reason, else which side lacks a label."""
    if actor is not None and guarded is not None:
        return None
    if gap:
        return gap
    if summary.get("unknown_reason"):
        return str(summary["unknown_reason"])
    if actor is None:
        return "actor outcome unknown (no label)"
    return f"guarded outcome unknown ({continuation} continuation)"


class Auditor:
    """Reusable per-run object: build policies once, audit many traces (the hot path)."""

    def __init__(
        self,
        policies: Sequence[str] = POLICIES,
        settings: Mapping[str, Mapping[str, Any]] | None = None,
        judge: Judge | str | None = None,
        environment: Environment | None = None,
        judge_options: Mapping[str, Any] | None = None,
        continuer: Continuer | None = None,
        twin_generator: TwinGenerator | None = None,
        responder: Responder | None = None,
        labeler: Responder | None = None,
    ) -> None:
        settings = settings or {}
        unknown = set(settings) - set(POLICIES)
        if unknown:
            raise ValueError(f"settings for unknown policies: {sorted(unknown)}")
        j = make_judge(judge, **dict(judge_options or {}))
        self.policies = [
            build_policy(n, settings.get(n), j, twin_generator, responder, labeler)
            for n in policies
        ]
        self.environment = environment
        self.continuer = continuer

    def audit(self, trace: Trace | Sequence[JsonDict]) -> dict[str, PolicyResult]:
        t = trace if isinstance(trace, Trace) else Trace.from_events(trace)
        out: dict[str, PolicyResult] = {}
        gap = outcome_gap(t)
        flags = trace_flags(t)  # once: every policy's record carries them for the run's summary
        for p in self.policies:
            r = replay(t, [p], self.environment, self.continuer)
            summary = p.summary(t, r.decisions)
            if r.accepted is not None:
                summary["continuation_reason"] = r.continuation_reason
            actor = r.actor_success
            if p.name in ("vrr", "commit") and summary.get("actor_correct") is not None:
                actor = summary["actor_correct"]
            na = not_applicable_reason(p.name, summary)
            if na is not None or r.accepted is None:
                guarded, continuation, trajectory = actor, "exact", None
            else:
                guarded, continuation, trajectory = r.guarded_success, r.continuation, r.trajectory
            unknown = None if na else unknown_reason(summary, actor, guarded, continuation, gap)
            record = dict(summary)
            record["not_applicable"], record["unknown_reason"] = na, unknown
            if flags:
                record[RECORD_KEY] = flags
            out[p.name] = PolicyResult(
                policy=p.name,
                applied=na is None and _applied(p.name, summary),
                record=record,
                actor_success=actor,
                guarded_success=guarded,
                transition=transition(actor, guarded, na),
                continuation=continuation,
                guarded_trajectory=trajectory,
                not_applicable=na,
                unknown_reason=unknown,
            )
        return out


def audit_trace(
    events: Sequence[JsonDict] | Trace,
    policies: Sequence[str] = POLICIES,
    settings: Mapping[str, Mapping[str, Any]] | None = None,
    judge: Judge | str | None = None,
    environment: Environment | None = None,
    judge_options: Mapping[str, Any] | None = None,
    continuer: Continuer | None = None,
    responder: Responder | None = None,
    labeler: Responder | None = None,
) -> dict[str, PolicyResult]:
    """Audit one trace under the named policies.

    ``events``: the trace's v1 event dicts (any order; ``seq`` decides). ``settings``: per
    policy, a dict of that policy's settings fields (unknown keys raise ``ValueError``).
    ``judge``: a `Judge` or a backend name ("heuristic" default, "recorded", "human",
    "llm" (alias "openai") with ``judge_options`` — `ModelConfig` fields, or a ``client`` — or
    "human" with ``verdicts``).
    ``environment``: an `Environment` for spliced continuations, else None. ``continuer``: a
    live continuation (`policies.replay.Continuer`), else None. ``responder`` / ``labeler``:
    the commit rule's live re-check / "pick one" calls and its answer-agreement model (chat
    messages → reply text); without them those outcomes are unknown.
    """
    return Auditor(
        policies,
        settings,
        judge,
        environment,
        judge_options,
        continuer,
        responder=responder,
        labeler=labeler,
    ).audit(events)
