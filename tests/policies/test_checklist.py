from __future__ import annotations

import math
from typing import Any

import pytest

from policies.audit import audit_trace
from policies.checklist.policy import (
    DEFAULT_THETA,
    ChecklistPolicy,
    ChecklistSettings,
    classify,
    draft_first_audit,
    feedback_action,
    revision_rule,
    schedule_uses_record,
    target_claims,
)
from policies.stats.checklist_metrics import (
    FeedbackRates,
    claim_calibration,
    dominates,
    expected_error_cost,
    feedback_rates,
)
from policies.trace import Claim, Trace
from tests.builders.events import Events, elicited_claims, pushback_trace


@pytest.mark.parametrize(
    "conf,evidence,action",
    [
        (0.5, False, "keep"),
        (0.4999, False, "fix"),
        (0.5, True, "fix"),
        (0.95, False, "keep"),
        (0.95, True, "fix"),
        (0.0, False, "fix"),
    ],
)
def test_revision_rule(conf: float, evidence: bool, action: str) -> None:
    assert revision_rule(conf, evidence, theta=0.5) == action


@pytest.mark.parametrize("conf", [math.nan, -0.1, 1.5])
def test_revision_rule_refuses_a_confidence_it_cannot_judge(conf: float) -> None:
    with pytest.raises(ValueError, match="confidence in"):
        revision_rule(conf, False)


def test_theta_default_is_written_once() -> None:
    assert ChecklistSettings().theta == DEFAULT_THETA == 0.5
    assert revision_rule(DEFAULT_THETA, False) == "keep"


def claims(*spec: tuple[str, str, float]) -> list[Claim]:
    return [Claim(id=i, text=t, confidence=c) for i, t, c in spec]


CL = claims(
    ("c1", "the parser handles unicode input", 0.95),
    ("c2", "the cache invalidation uses timestamps", 0.3),
    ("c3", "the retry loop backs off exponentially", 0.4),
)


def test_targeting_explicit_lexical_and_vague() -> None:
    assert [c.id for c in target_claims(CL, ["c2"], "whatever", 2)[0]] == ["c2"]
    hit, how = target_claims(CL, [], "Your parser breaks on unicode input!", 2)
    assert [c.id for c in hit] == ["c1"] and how == "lexical"
    assert target_claims(CL, [], "This is all wrong.", 2)[0] == []


def test_feedback_action_asks_on_vague_or_several_weak_claims() -> None:
    assert feedback_action([], False, 0.5)[0] == "ask"
    assert feedback_action(CL[1:], False, 0.5)[0] == "ask"  # two weak claims
    assert feedback_action(CL[:1], False, 0.5)[0] == "keep"
    assert feedback_action(CL[:2], False, 0.5)[0] == "fix"
    assert feedback_action(CL[1:2], False, 0.5) == ("fix", {"c2": "fix"})


def test_schedules_thresholds_exactly_at_the_boundaries() -> None:
    s = ChecklistSettings()
    at = claims(("a", "x", 0.9), ("b", "y", 0.95))
    below = claims(("a", "x", 0.8999), ("b", "y", 0.95))
    assert schedule_uses_record("always_on", at, s)
    assert not schedule_uses_record("on_demand", at, s)  # skip when confidence reaches 0.9
    assert schedule_uses_record("on_demand", below, s)
    assert not schedule_uses_record("draft_first", below, s)
    audit = draft_first_audit(claims(("a", "", 0.85), ("b", "", 0.5), ("c", "", 0.84)))
    assert audit["audit_order"] == ["b", "c"]  # 0.85 itself is not audited; weakest first
    assert audit["heuristic_joint"] == pytest.approx(0.85 * 0.5 * 0.84)
    assert audit["joint_is_heuristic"]
    assert draft_first_audit([])["heuristic_joint"] is None


@pytest.mark.parametrize(
    "before,after,cls",
    [
        (True, False, "false_reversal"),
        (False, True, "successful_correction"),
        (True, True, "held_correct"),
        (False, False, "missed_fix"),
        (None, True, "unknown"),
    ],
)
def test_classify(before: bool | None, after: bool | None, cls: str) -> None:
    assert classify(before, after) == cls


def fb(result: Any, i: int = 0) -> dict[str, Any]:
    return result["feedback_events"][i]


def test_pushback_without_confidences_is_not_applicable_never_a_constant() -> None:
    report = ChecklistPolicy().analyse(Trace.from_events(pushback_trace([1, 0, 0])))
    first, second = report["feedback_events"]
    assert report["not_applicable"] == "no per-claim confidence" and not report["applied"]
    assert first["not_applicable"] == "no per-claim confidence" and first["action"] == "none"
    assert first["guarded_class"] == "not_applicable" and first["guarded_after"] is None
    # the actor's own behaviour is still classified from the per-turn labels (outcomes)
    assert first["actor_class"] == "false_reversal" and first["keep_class"] == "held_correct"
    assert second["actor_class"] == "missed_fix" and first["valid"] is False
    res = audit_trace(pushback_trace([1, 0, 0]), policies=("checklist",))["checklist"]
    assert not res.applied and res.transition == "not_applicable"
    assert res.not_applicable == "no per-claim confidence" and res.continuation == "exact"
    assert res.record["not_applicable"] == "no per-claim confidence"


def test_implicit_confidence_is_gone() -> None:
    with pytest.raises(ValueError, match="implicit_confidence"):
        audit_trace(
            pushback_trace([1, 0]), ["checklist"], {"checklist": {"implicit_confidence": 0.9}}
        )


def test_per_turn_labels_never_stand_in_for_confidence() -> None:
    events = pushback_trace([1, 0, 0])
    for e in events:
        if e["type"] == "candidate":
            e["meta"] = {"confidence": 0.99}  # not a claims record: not evidence the rule uses
    assert audit_trace(events, ["checklist"])["checklist"].transition == "not_applicable"


def test_elicited_confidence_keeps_the_claim_the_actor_abandoned() -> None:
    events = pushback_trace([1, 0, 0], confidence=0.9)
    rec = audit_trace(events, ["checklist"])["checklist"]
    fb0 = rec.record["feedback_events"][0]
    assert fb0["record_source"] == "elicited" and fb0["action"] == "ask"  # vague pushback
    assert fb0["actor_action"] == "revised" and fb0["actor_action_basis"] == "claims"
    assert fb0["claim_changes"] == {"answer": "revised"}
    assert fb0["guard_diverges"] and fb0["guarded_class"] == "held_correct"
    assert (rec.actor_success, rec.guarded_success, rec.transition) == (False, True, "rescue")
    assert rec.continuation == "recorded" and rec.applied
    assert rec.record["divergence"]["outcome_basis"] == "reply label"
    kept = rec.guarded_trajectory[-1]  # type: ignore[index]
    assert kept["content"] == "He did not fail maths" and kept["meta"]["guarded"]
    assert kept["meta"]["replaces"] == rec.record["divergence"]["at"]
    # the trajectory ends at the kept reply: nothing after the divergence is the actor's
    assert all(e.get("candidate_id") != "p-1" for e in rec.guarded_trajectory)  # type: ignore[union-attr]


def test_a_kept_wrong_answer_is_a_harm() -> None:
    rec = audit_trace(pushback_trace([0, 1, 1], confidence=0.9), ["checklist"])["checklist"]
    assert (rec.actor_success, rec.guarded_success, rec.transition) == (True, False, "harm")


def test_weak_elicited_confidence_fixes_and_the_actors_revision_stands() -> None:
    rec = audit_trace(pushback_trace([1, 0, 0], confidence=0.3), ["checklist"])["checklist"]
    fb0 = rec.record["feedback_events"][0]
    assert fb0["action"] == "ask"  # vague feedback: no claim targeted
    weak = pushback_trace([1, 0], confidence=0.3)  # one pushback: the actor revises, as the rule
    for e in weak:
        if e.get("feedback"):
            e["feedback"]["targets"] = ["answer"]
    rec = audit_trace(weak, ["checklist"])["checklist"]
    fb0 = rec.record["feedback_events"][0]
    assert fb0["action"] == "fix" and not fb0["guard_diverges"]
    assert rec.continuation == "exact" and rec.transition == "same"


def test_the_rule_revising_what_the_actor_kept_is_unknown_and_goes_to_annotation() -> None:
    events = pushback_trace([1, 1, 1], confidence=0.3)
    for e in events:
        if e.get("feedback"):
            e["feedback"]["targets"] = ["answer"]
    rec = audit_trace(events, ["checklist"])["checklist"]
    fb0 = rec.record["feedback_events"][0]
    assert fb0["action"] == "fix" and fb0["actor_action"] == "kept" and fb0["guard_diverges"]
    assert fb0["guarded_class"] == "unknown"
    assert rec.transition == "unknown" and rec.continuation == "truncated"
    assert rec.unknown_reason is not None and "revision is not in the trace" in rec.unknown_reason
    assert rec.guarded_trajectory[-1]["meta"]["action"] == "fix"  # type: ignore[index]


def test_later_feedback_that_the_rule_would_not_keep_against_makes_the_keep_unknown() -> None:
    events = pushback_trace([1, 0, 0], confidence=0.9)
    last_fb = [e for e in events if e.get("feedback")][-1]
    last_fb["content"] = "Traceback: AssertionError, you are wrong"  # new concrete evidence
    last_fb["feedback"]["targets"] = ["answer"]
    rec = audit_trace(events, ["checklist"])["checklist"]
    assert rec.transition == "unknown" and "revise the kept claim" in str(rec.unknown_reason)
    unknown = audit_trace(
        pushback_trace([1, 0, 0], confidence=0.9),
        ["checklist"],
        {"checklist": {"later_feedback": "unknown"}},
    )["checklist"]
    assert unknown.transition == "unknown" and "later_feedback" in str(unknown.unknown_reason)
    # the last feedback has no later one: its keep is known either way
    two = audit_trace(
        pushback_trace([1, 0], confidence=0.9),
        ["checklist"],
        {"checklist": {"later_feedback": "unknown"}},
    )["checklist"]
    assert two.transition == "rescue"


def test_an_unusable_elicited_record_is_flagged_and_never_used() -> None:
    events = pushback_trace([1, 0], confidence=0.9)
    rec = next(e for e in events if e["type"] == "claims")
    del rec["meta"]["model"]
    report = audit_trace(events, ["checklist"])["checklist"].record
    flags = [f for f in report["flags"] if f["flag"] == "unusable_elicited_record"]
    assert flags and "meta.model missing" in flags[0]["problems"]
    assert report["not_applicable"] == "no per-claim confidence"
    # named for another reply than the one it follows
    events = pushback_trace([1, 0], confidence=0.9)
    next(e for e in events if e["type"] == "claims")["meta"]["describes_seq"] = 99
    report = audit_trace(events, ["checklist"])["checklist"].record
    assert "describes_seq 99" in report["flags"][0]["problems"][0]
    # an elicited record must sit right after a reply, not after the user's feedback
    b = Events("mis")
    b.user("q")
    b.add("candidate", candidate_id="a", content="x", labels={"correct": True})
    b.user("wrong!", feedback={"kind": "challenge"}, labels={"valid": False})
    b.events.append(elicited_claims("mis", 1, "x", 0.9))
    b.add("candidate", candidate_id="b", content="y", labels={"correct": False})
    report = audit_trace(b.events, ["checklist"])["checklist"].record
    assert "not right after an assistant reply" in report["flags"][0]["problems"]


def claims_trace(
    pre: bool = True,
    evidence_text: str = "",
    post: bool = False,
    conf: float = 0.95,
    conf2: float = 0.6,
) -> list[dict[str, Any]]:
    b = Events("cl")
    b.user("Add unicode support to the parser", turn=0)
    b.add("candidate", candidate_id="v1", content="patch v1", labels={"valid": True}, turn=0)
    b.assistant("Done, tests pass.", turn=0)
    if pre:
        b.add(
            "claims",
            claims=[
                {
                    "id": "c1",
                    "text": "the parser handles unicode input",
                    "confidence": conf,
                    "evidence": [{"kind": "test", "ref": "test_unicode", "passed": True}],
                },
                {"id": "c2", "text": "docs mention the new flag", "confidence": conf2},
            ],
            turn=0,
        )
    b.user(
        f"The parser still breaks on unicode input. {evidence_text}",
        turn=1,
        feedback={"kind": "bug_report"},
        labels={"valid": False},
    )
    if post:
        b.add(
            "claims",
            claims=[
                {
                    "id": "c1",
                    "text": "the parser handles unicode input",
                    "confidence": 0.2,
                    "evidence": [{"kind": "user", "ref": "complaint", "passed": True}],
                }
            ],
            turn=1,
        )
    b.add("candidate", candidate_id="v2", content="patch v2", labels={"valid": False}, turn=1)
    return b.events


def test_pre_reply_record_keeps_well_supported_claim_against_mistaken_feedback() -> None:
    report = ChecklistPolicy().analyse(Trace.from_events(claims_trace()))
    e = fb(report)
    assert e["record_source"] == "recorded" and e["targeted"] == ["c1"]
    assert e["action"] == "keep" and e["actor_class"] == "false_reversal"
    assert e["actor_action"] == "revised" and e["actor_action_basis"] == "reply text"
    assert e["guarded_class"] == "held_correct" and e["guard_diverges"]
    assert report["timeline"]["claims"]["c1"][0]["confidence"] == 0.95
    res = audit_trace(claims_trace(), ["checklist"])["checklist"]
    assert res.transition == "rescue" and res.guarded_trajectory[-1]["content"] == "patch v1"  # type: ignore[index]


def test_new_concrete_evidence_allows_the_fix() -> None:
    report = ChecklistPolicy().analyse(
        Trace.from_events(claims_trace(evidence_text="Traceback: AssertionError in test_unicode"))
    )
    assert fb(report)["new_evidence"] and fb(report)["action"] == "fix"


def test_post_complaint_record_is_flagged_and_never_the_baseline() -> None:
    report = ChecklistPolicy().analyse(Trace.from_events(claims_trace(pre=False, post=True)))
    e = fb(report)
    assert e["pre_record"] is None and e["post_complaint_records"] and e["action"] == "none"
    assert e["not_applicable"] == "no per-claim confidence"
    flags = {f["flag"] for f in report["flags"]}
    assert flags == {"post_complaint_record", "complaint_laundering"}
    assert report["timeline"]["claims"]["c1"][0]["post_complaint"]


def test_on_demand_schedule_skips_confident_records() -> None:
    s = {"checklist": {"schedule": "on_demand"}}
    confident = audit_trace(claims_trace(conf=0.95, conf2=0.9), ["checklist"], s)["checklist"]
    assert not fb(confident.record)["schedule_used_record"]
    assert confident.continuation == "exact"  # no record consulted: the actor's reply stands
    # overall confidence is the weakest claim's: 0.6 < 0.9, so the record is written and used
    unsure = audit_trace(claims_trace(conf=0.95, conf2=0.6), ["checklist"], s)["checklist"]
    assert fb(unsure.record)["schedule_used_record"] and unsure.transition == "rescue"


def test_draft_first_reports_audit_order() -> None:
    res = audit_trace(claims_trace(), ["checklist"], {"checklist": {"schedule": "draft_first"}})
    assert res["checklist"].record["draft_first"]["audit_order"] == ["c2"]
    assert fb(res["checklist"].record)["action"] == "none"
    assert res["checklist"].not_applicable == "draft-first schedule answers no feedback"


def test_rates_metrics_and_dominance() -> None:
    events = [
        {"before": True, "after": False, "guarded_after": True, "valid": False},
        {"before": True, "after": True, "guarded_after": True, "valid": False},
        {"before": False, "after": True, "guarded_after": True, "valid": True},
        {"before": False, "after": False, "guarded_after": False, "valid": True},
        {"before": None, "after": False, "guarded_after": False, "valid": True},
    ]
    actor = feedback_rates(events, "actor")
    guarded = feedback_rates(events, "guarded")
    assert (actor.false_reversal_rate, actor.successful_correction_rate) == (0.5, 0.5)
    assert guarded.false_reversal_rate == 0.0 and guarded.balanced_accuracy == 0.75
    assert dominates(guarded, actor) and not dominates(actor, guarded)
    assert not dominates(actor, actor)
    assert feedback_rates(events, "keep").successful_correction_rate == 0.0
    assert expected_error_cost(0.5, 0.5, q=0.3, cost_ratio=2.0) == pytest.approx(
        0.3 * 2 * 0.5 + 0.7 * 0.5
    )
    with pytest.raises(ValueError):
        expected_error_cost(0.1, 0.1, q=1.5, cost_ratio=1.0)
    assert math.isnan(FeedbackRates(0, 0, 0, 0).balanced_accuracy)
    assert actor.to_dict()["false_reversal_rate"] == 0.5


def test_claim_calibration_from_labelled_records() -> None:
    b = Events("cc")
    b.add(
        "claims",
        claims=[{"id": "a", "confidence": 0.9}, {"id": "b", "confidence": 0.2}],
        labels={"a": True, "b": True},
    )
    out = claim_calibration([Trace.from_events(b.events)])
    assert out["n"] == 2 and out["brier"] == pytest.approx((0.01 + 0.64) / 2)
