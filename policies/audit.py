"""The entry point the app calls per trace: `audit_trace` (SPEC §1, §4, §5)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .checklist import ChecklistPolicy
from .commit import CommitPolicy
from .decision import GuardPolicy
from .environment import Environment
from .jsonsafe import json_safe
from .judges import Judge, make_judge
from .replay import Continuer, replay
from .settings import policy_settings
from .trace import JsonDict, Trace
from .transitions import Transition, transition
from .twincheck import TwinCheckPolicy, TwinGenerator
from .vrr_policy import VrrPolicy

POLICIES: tuple[str, ...] = ("twincheck", "checklist", "vrr", "commit")


@dataclass(slots=True)
class PolicyResult:
    """One policy's result on one trace; `to_dict` is plain JSON data.

    ``applied``: the policy found at least one decision point (TwinCheck: a certificate held;
    checklist: a feedback message; VRR: a verify-repair round; commit: an answer under
    challenge). ``continuation`` is ``exact`` when the guarded trajectory is the actor's,
    else ``spliced`` / ``recorded`` / ``truncated`` (see `policies.replay`).
    ``guarded_trajectory`` is None when it equals the actor's trace (to save storage).
    """

    policy: str
    applied: bool
    record: JsonDict
    actor_success: bool | None
    guarded_success: bool | None
    transition: Transition
    continuation: str
    guarded_trajectory: list[JsonDict] | None

    def to_dict(self) -> JsonDict:
        """Strict JSON (NaN/Infinity → None), ready for a JSONField."""
        out: JsonDict = json_safe(
            {
                "policy": self.policy,
                "applied": self.applied,
                "record": self.record,
                "actor_success": self.actor_success,
                "guarded_success": self.guarded_success,
                "transition": self.transition,
                "continuation": self.continuation,
                "guarded_trajectory": self.guarded_trajectory,
            }
        )
        return out


def build_policy(
    name: str,
    settings: Mapping[str, Any] | None = None,
    judge: Judge | None = None,
    twin_generator: TwinGenerator | None = None,
) -> GuardPolicy:
    s = policy_settings(name, settings)
    if name == "twincheck":
        return TwinCheckPolicy(s, judge, twin_generator)
    if name == "checklist":
        return ChecklistPolicy(s)
    if name == "vrr":
        return VrrPolicy(s)
    return CommitPolicy(s)


def _applied(name: str, summary: Mapping[str, Any], n_decisions: int) -> bool:
    if name == "twincheck":
        return bool(summary.get("triggers"))
    if name == "checklist":
        return bool(summary.get("feedback_events"))
    if name == "vrr":
        return bool(summary.get("n_rounds"))
    return bool(summary.get("applied"))


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
    ) -> None:
        settings = settings or {}
        unknown = set(settings) - set(POLICIES)
        if unknown:
            raise ValueError(f"settings for unknown policies: {sorted(unknown)}")
        j = make_judge(judge, **dict(judge_options or {}))
        self.policies = [build_policy(n, settings.get(n), j, twin_generator) for n in policies]
        self.environment = environment
        self.continuer = continuer

    def audit(self, trace: Trace | Sequence[JsonDict]) -> dict[str, PolicyResult]:
        t = trace if isinstance(trace, Trace) else Trace.from_events(trace)
        out: dict[str, PolicyResult] = {}
        for p in self.policies:
            r = replay(t, [p], self.environment, self.continuer)
            summary = p.summary(t, r.decisions)
            if r.accepted is not None:
                summary["continuation_reason"] = r.continuation_reason
            guarded = r.guarded_success
            if (
                p.name == "commit"
                and summary.get("applied")
                and summary.get("commit_index") is None
            ):
                guarded = None  # the rule needs a call the trace does not hold
            actor = r.actor_success
            if p.name in ("vrr", "commit") and summary.get("actor_correct") is not None:
                actor = summary["actor_correct"]
            out[p.name] = PolicyResult(
                policy=p.name,
                applied=_applied(p.name, summary, len(r.decisions)),
                record=summary,
                actor_success=actor,
                guarded_success=guarded if r.accepted is not None else actor,
                transition=transition(actor, guarded if r.accepted is not None else actor),
                continuation=r.continuation,
                guarded_trajectory=r.trajectory if r.accepted is not None else None,
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
) -> dict[str, PolicyResult]:
    """Audit one trace under the named policies.

    ``events``: the trace's v1 event dicts (any order; ``seq`` decides). ``settings``: per
    policy, a dict of that policy's settings fields (unknown keys raise ``ValueError``).
    ``judge``: a `Judge` or a backend name ("heuristic" default, "recorded", "human",
    "openai" with ``judge_options`` such as base_url/model/api_key/timeout or verdicts).
    ``environment``: an `Environment` for spliced continuations, else None. ``continuer``: a
    live continuation (`policies.replay.Continuer`), else None.
    """
    return Auditor(policies, settings, judge, environment, judge_options, continuer).audit(events)
