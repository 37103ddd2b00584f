"""The Claim Checklist's analysis of one trace (SPEC §5.2; Bui 2026 §3, §4.2–4.5).

One walk over the events finds, per feedback message (a user ``message`` with ``feedback``): the
reply in force before it (its *state*: the trace's candidates when it has any, else its assistant
messages), the pre-reply claims record (after the agent's last reply, before the feedback; recorded
or elicited, `policies.checklist.claims`), post-complaint records (flagged, never the baseline), the
agent's reply to it and the first record after that reply (what the actor did to its claims).
A reply the importer flagged ``meta.harness_error`` (a harness's error text where the model's
answer would be) is no reply and no state: the model answered nothing there, so a feedback
event whose only reply is one is not applicable (`HARNESS_ERROR_REPLY`), never a reversal.

Per feedback event: *not applicable* (with the reason) when there is no usable pre-reply record
with confidences; otherwise the rule's action (`checklist.rule`), the actor's action (kept or
revised the claims in question: from the claims' versions when a record follows the reply,
else from the reply's text), and the event's class for the actor, for always-keep and for the
guarded counterfactual. The guarded trajectory **diverges** at the first reply where the rule's
action differs from the actor's: it keeps a claim the actor abandoned (the reply is replaced by
the kept state) or revises one the actor kept (the revision is not in the trace). The guarded
outcome of a keep is the kept state's label where the trace has one (the reply's label, the
checks since it, the claims' labels), provided the rule keeps it against every later feedback
(setting ``later_feedback``); otherwise it is unknown and goes to annotation.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence

from ..trace import (
    Candidate,
    Check,
    Claims,
    Event,
    JsonDict,
    Message,
    ToolResult,
    Trace,
    label_outcome,
)
from .claims import (
    Lineage,
    claim_changes,
    complaint_laundering,
    elicited_problems,
    fold_text,
    record_source,
    timeline,
)
from .rule import (
    ChecklistSettings,
    classify,
    draft_first_audit,
    feedback_action,
    schedule_uses_record,
    target_claims,
)

NO_FEEDBACK = "no feedback messages"
NO_CONFIDENCE = "no per-claim confidence"
TARGET_WITHOUT_CONFIDENCE = "a targeted claim has no confidence"
NO_REPLY = "no reply after the feedback"
DRAFT_FIRST = "draft-first schedule answers no feedback"
HARNESS_ERROR_REPLY = "the reply is a harness error, not an answer"


def _state_label(reply: Event | None, checks: Sequence[Check]) -> tuple[bool | None, str | None]:
    """Label of the state a reply left: its own ``labels``, else the checks after it."""
    if reply is not None:
        lab = label_outcome(reply.labels)
        if lab is not None:
            return lab, "reply label"
    vals = [c.passed for c in checks if c.passed is not None]
    if vals:
        return all(vals), "checks"
    return None, None


def record_label(record: Claims, ids: Sequence[str]) -> bool | None:
    """Ground truth of the claims ``ids`` from the record's ``labels`` ({claim id: bool}): true
    when all hold, false when one fails, None unless every one is labelled."""
    vals = [record.labels.get(cid) for cid in ids]
    if not vals or not all(isinstance(v, bool) for v in vals):
        return None
    return all(bool(v) for v in vals)


def _reply_text(e: Event | None) -> str | None:
    if isinstance(e, Candidate):
        return e.answer if e.answer is not None else e.content
    if isinstance(e, Message):
        return e.content
    return None


def _walk(trace: Trace, pattern: re.Pattern[str]) -> tuple[list[JsonDict], Lineage, list[JsonDict]]:
    """The single pass described in the module docstring (``type() is``: hot path)."""
    state_is_candidate = any(type(e) is Candidate for e in trace.events)
    fbs: list[JsonDict] = []
    pending: list[JsonDict] = []  # feedback waiting for the agent's state-changing reply
    awaiting: list[JsonDict] = []  # answered feedback waiting for the record after the reply
    last_state: Event | None = None
    checks: list[Check] = []
    pre: Claims | None = None
    tool_error = False
    lineage = Lineage()
    flags: list[JsonDict] = []
    prev: Event | None = None
    for e in trace.events:
        te = type(e)
        if te is Message and e.feedback is not None and e.role == "user":  # type: ignore[attr-defined]
            assert isinstance(e, Message)
            awaiting = []
            fb: JsonDict = {
                "_msg": e,
                "_pre": pre,
                "_before": last_state,
                "_checks": list(checks),
                "_reply": None,
                "_after": None,
                "_next": None,
                "_harness_error": False,  # a reply to it was a harness error
                "_evidence": tool_error
                or bool(pattern.search(e.content))
                or bool(e.raw.get("evidence") or e.meta.get("evidence")),
                "post_complaint_records": [],
            }
            pending.append(fb)
            fbs.append(fb)
        elif te is Claims:
            assert isinstance(e, Claims)
            source = record_source(e)
            usable, post = True, False
            if source == "elicited":
                problems = elicited_problems(e, prev)
                if problems:
                    usable = False
                    flags.append(
                        {
                            "flag": "unusable_elicited_record",
                            "record": e.index,
                            "problems": problems,
                        }
                    )
            elif any(p["_reply"] is None for p in pending):
                usable, post = False, True
                for p in pending:
                    if p["_reply"] is None:
                        p["post_complaint_records"].append(e.index)
            lineage.add(e, source, post, usable)
            if usable:
                pre = e
                for a in awaiting:
                    a["_next"] = e
                awaiting = []
        elif te is Check:
            checks.append(e)  # type: ignore[arg-type]
        elif te is ToolResult and e.status == "error":  # type: ignore[attr-defined]
            tool_error = True
        # (`claims.is_reply` written out: this runs for every event of every trace)
        reply = te is Candidate or (te is Message and e.role == "assistant")  # type: ignore[attr-defined]
        if reply and e.meta.get("harness_error"):
            for p in pending:  # no answer: the feedback still waits for one
                p["_harness_error"] = True
        elif reply:
            for p in pending:
                if p["_reply"] is None:
                    p["_reply"] = e
            if te is Candidate or not state_is_candidate:
                for p in pending:
                    p["_after"] = e
                awaiting.extend(pending)
                pending = []
                last_state = e
                checks = []
            pre = None
            tool_error = False
        prev = e
    return fbs, lineage, flags


def _rule_for(
    record: Claims | None, msg: Message, evidence: bool, s: ChecklistSettings
) -> tuple[str | None, JsonDict]:
    """(reason not applicable | None, decision fields) of the rule at one feedback."""
    if record is None or not any(c.confidence is not None for c in record.claims):
        return NO_CONFIDENCE, {}
    if s.schedule == "draft_first":
        return DRAFT_FIRST, {}
    if not schedule_uses_record(s.schedule, record.claims, s):
        return None, {
            "schedule_used_record": False,
            "targeting": "none",
            "targeted": [],
            "claim_actions": {},
            "action": "none",
        }
    targeted, how = target_claims(
        record.claims, msg.feedback.targets if msg.feedback else [], msg.content, s.min_overlap
    )
    if any(c.confidence is None for c in targeted):
        return TARGET_WITHOUT_CONFIDENCE, {}
    action, per = feedback_action(targeted, evidence, s.theta)
    return None, {
        "schedule_used_record": True,
        "targeting": how,
        "targeted": [c.id for c in targeted],
        "claim_actions": per,
        "action": action,
    }


def _actor_action(fb: JsonDict, record: Claims, in_question: list[str]) -> tuple[str | None, str]:
    """Did the actor keep or revise the claims in question? From the claims' versions in the
    first record after its reply, else from the text of its reply; None when neither exists."""
    nxt: Claims | None = fb["_next"]
    if nxt is not None:
        changes = claim_changes(record, nxt, in_question)
        fb["claim_changes"] = changes
        revised = any(v != "kept" for v in changes.values())
        return ("revised" if revised else "kept"), "claims"
    before, after = _reply_text(fb["_before"]), _reply_text(fb["_after"])
    if before is not None and after is not None:
        return ("kept" if fold_text(before) == fold_text(after) else "revised"), "reply text"
    return None, "none"


def _evaluate(fb: JsonDict, s: ChecklistSettings) -> None:
    """Fill one feedback event's decision, actor action and classes (plain data)."""
    msg: Message = fb["_msg"]
    record: Claims | None = fb["_pre"]
    before, before_basis = _state_label(fb["_before"], fb["_checks"])
    after_state: Event | None = fb["_after"]
    after = label_outcome(after_state.labels) if after_state is not None else None
    reason, rule = _rule_for(record, msg, fb["_evidence"], s)
    if reason is None and fb["_reply"] is None:
        reason = HARNESS_ERROR_REPLY if fb["_harness_error"] else NO_REPLY
    fb.update(
        index=msg.index,
        seq=msg.seq,
        turn=msg.turn,
        kind=msg.feedback.kind if msg.feedback else "",
        targets=list(msg.feedback.targets) if msg.feedback else [],
        valid=label_outcome(msg.labels),
        new_evidence=fb["_evidence"],
        pre_record=record.index if record is not None else None,
        record_source=record_source(record) if record is not None else None,
        candidate_before=fb["_before"].index if fb["_before"] is not None else None,
        candidate_after=after_state.index if after_state is not None else None,
        after_event=fb["_reply"].index if fb["_reply"] is not None else None,
        before=before,
        before_basis=before_basis,
        after=after,
        not_applicable=reason,
        schedule_used_record=False,
        targeting="none",
        targeted=[],
        claim_actions={},
        action="none",
        actor_action=None,
        actor_action_basis="none",
        actor_revised=None,
        guard_diverges=False,
    )
    fb["actor_class"] = classify(before, after)
    fb["keep_class"] = classify(before, before)
    if reason is not None:
        fb["guarded_after"] = None
        fb["guarded_class"] = "not_applicable"
        return
    fb.update(rule)
    assert record is not None
    in_question = fb["targeted"] or [c.id for c in record.claims]
    actor, basis = _actor_action(fb, record, in_question)
    fb["actor_action"], fb["actor_action_basis"] = actor, basis
    fb["actor_revised"] = None if actor is None else actor == "revised"
    action = fb["action"]
    if action in ("keep", "ask"):
        fb["guard_diverges"] = actor == "revised"
        guarded_after = before if actor != "kept" else after
    elif action == "fix":
        fb["guard_diverges"] = actor == "kept"
        guarded_after = after if actor == "revised" else None
    else:  # the schedule wrote no record: the actor's reply stands
        guarded_after = after
    fb["guarded_after"] = guarded_after
    fb["guarded_class"] = classify(before, guarded_after)


def _kept_outcome(
    fbs: Sequence[JsonDict], i: int, s: ChecklistSettings
) -> tuple[bool | None, str | None, str]:
    """(outcome, why unknown, basis) of keeping the state before feedback ``i``."""
    fb = fbs[i]
    record: Claims = fb["_pre"]
    label, basis = fb["before"], fb["before_basis"]
    if label is None:
        label = record_label(record, fb["targeted"] or [c.id for c in record.claims])
        basis = "claim labels" if label is not None else None
    if label is None:
        return None, "the kept state has no label in the trace", "none"
    for later in fbs[i + 1 :]:
        if s.later_feedback == "unknown":
            return None, "later feedback after the kept reply (setting later_feedback)", "none"
        reason, rule = _rule_for(record, later["_msg"], later["_evidence"], s)
        if reason is not None:
            return None, f"at a later feedback: {reason}", "none"
        if rule["action"] == "none":
            return None, "no checklist at a later feedback: the reply there is unknown", "none"
        if rule["action"] == "fix":
            return None, "the rule would revise the kept claim at a later feedback", "none"
    return label, None, str(basis)


def _divergence(fbs: Sequence[JsonDict], trace: Trace, s: ChecklistSettings) -> JsonDict | None:
    """Where exact replay ends: the first reply whose action the rule would have changed."""
    for i, fb in enumerate(fbs):
        if not fb["guard_diverges"]:
            continue
        reply: Event = fb["_reply"]
        if fb["action"] == "fix":
            outcome, basis = None, "none"
            why: str | None = (
                "the rule would revise the claim; the revision is not in the trace "
                "(needs a live continuation)"
            )
            replacement: JsonDict = {
                "trace_id": trace.trace_id,
                "type": "message",
                "role": "assistant",
                "content": f"[targeted fix of {', '.join(fb['targeted'])}: not recorded]",
                "turn": reply.turn,
                "meta": {"guarded": True, "policy": "checklist", "action": "fix"},
            }
        else:
            outcome, why, basis = _kept_outcome(fbs, i, s)
            kept: Event | None = fb["_before"]
            replacement = dict(kept.raw) if kept is not None else {}
            replacement.setdefault("trace_id", trace.trace_id)
            replacement.setdefault("type", "message")
            replacement["meta"] = {
                **(kept.meta if kept is not None else {}),
                "guarded": True,
                "policy": "checklist",
                "action": fb["action"],
                "kept_from": fb["candidate_before"],
                "replaces": reply.index,
            }
        return {
            "feedback": i,
            "at": reply.index,
            "action": fb["action"],
            "outcome": outcome,
            "outcome_basis": basis,
            "unknown_reason": why,
            "replacement": replacement,
        }
    return None


_PRIVATE = (
    "_msg",
    "_pre",
    "_before",
    "_checks",
    "_reply",
    "_after",
    "_next",
    "_evidence",
    "_harness_error",
)


def _public(fb: JsonDict) -> JsonDict:
    """Drop the walk's event references (in place: this is the hot path) — plain data stays."""
    for k in _PRIVATE:
        del fb[k]
    return fb


def analyse_checklist(
    trace: Trace,
    s: ChecklistSettings,
    pattern: re.Pattern[str],
    settings_dict: JsonDict | None = None,
) -> JsonDict:
    """The checklist's per-trace record (see the module docstring and docs/policies.md).
    ``settings_dict``: ``s.to_dict()`` when the caller keeps it (the policy does, per run)."""
    fbs, lineage, flags = _walk(trace, pattern)
    for fb in fbs:
        _evaluate(fb, s)
    reasons = [fb["not_applicable"] for fb in fbs if fb["not_applicable"]]
    if not fbs:
        na: str | None = DRAFT_FIRST if s.schedule == "draft_first" else NO_FEEDBACK
    elif len(reasons) == len(fbs):
        na = Counter(reasons).most_common(1)[0][0]
    else:
        na = None
    div = _divergence(fbs, trace, s) if na is None else None
    for fb in fbs:
        for idx in fb["post_complaint_records"]:
            flags.append({"flag": "post_complaint_record", "record": idx})
    flags.extend(complaint_laundering(trace))
    records = [e for e in trace.events if type(e) is Claims]
    draft = None
    if s.schedule == "draft_first" and records:
        last = records[-1]
        assert isinstance(last, Claims)
        draft = draft_first_audit(last.claims, s.draft_first_threshold)
    events = [_public(fb) for fb in fbs]
    return {
        "not_applicable": na,
        "applied": na is None,
        "feedback_events": events,
        "divergence": div,
        "unknown_reason": div["unknown_reason"] if div else None,
        "flags": flags,
        "timeline": timeline(lineage, events, flags),
        "draft_first": draft,
        "settings": settings_dict if settings_dict is not None else s.to_dict(),
    }
