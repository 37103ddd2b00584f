"""Trace Auditor's policy library: the four guard policies, the replay engine, environments,
judges and statistics as plain Python (SPEC §2: no Django, no database, no Celery here).

The app calls `audit_trace` (or an `Auditor` reused across a run's traces) and `summarise_run`.
VRR calibration (`policies.vrr.calibration`, the one numpy user) is imported on demand, so
auditing a trace needs nothing beyond the standard library. See docs/policies.md.
"""

from __future__ import annotations

from .audit import POLICIES, Auditor, audit_trace, build_policy
from .checklist.policy import ChecklistPolicy, ChecklistSettings, revision_rule
from .commit.extractors import ExtractorSettings, answers_agree, extract_answer
from .commit.policy import CommitPolicy, CommitSettings, commit_rule
from .decision import Decision, GuardPolicy
from .environments.base import Environment, ToolOutcome, ToyEnvironment
from .heuristic_judge import HeuristicJudge
from .judge_registry import make_judge, register_judge
from .judges import HumanJudge, Judge, RecordedJudge, Verdict
from .replay import ReplayResult, replay
from .result import PolicyResult
from .stats.report import summarise_run
from .trace import Trace
from .transitions import transition, transition_counts
from .twincheck.policy import TwinCheckPolicy, TwinCheckSettings, switch_gate
from .vrr.decision import vrr_decide
from .vrr.policy import VrrPolicy
from .vrr.rule import VrrParams, VrrSettings, belief_update, marginal_gain, stop_rule

__all__ = [
    "POLICIES",
    "Auditor",
    "ChecklistPolicy",
    "ChecklistSettings",
    "CommitPolicy",
    "CommitSettings",
    "Decision",
    "Environment",
    "ExtractorSettings",
    "GuardPolicy",
    "HeuristicJudge",
    "HumanJudge",
    "Judge",
    "PolicyResult",
    "RecordedJudge",
    "ReplayResult",
    "ToolOutcome",
    "ToyEnvironment",
    "Trace",
    "TwinCheckPolicy",
    "TwinCheckSettings",
    "Verdict",
    "VrrParams",
    "VrrPolicy",
    "VrrSettings",
    "answers_agree",
    "audit_trace",
    "belief_update",
    "build_policy",
    "commit_rule",
    "extract_answer",
    "make_judge",
    "register_judge",
    "marginal_gain",
    "replay",
    "revision_rule",
    "stop_rule",
    "summarise_run",
    "switch_gate",
    "transition",
    "transition_counts",
    "vrr_decide",
]
