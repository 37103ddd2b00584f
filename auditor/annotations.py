"""Human annotation services (issue 7; SPEC §5.5, §6 "Annotation"): build queues from an audit
run, assign items with a lease, record verdicts (blind A/B for pairs), skip and undo, measure
agreement, adjudicate, and flow final verdicts back into the run's transitions.

Write functions are `<entity>_<action>`, keyword-only; views only translate to and from them.
"""

from __future__ import annotations

import math
import secrets
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime, timedelta
from itertools import combinations
from typing import Any

from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from auditor.models import (
    AnnotationItem,
    AnnotationQueue,
    AuditResult,
    AuditRun,
    ResultOverride,
    Verdict,
)
from policies.stats import cohen_kappa, krippendorff_alpha_nominal
from policies.transitions import transition
from traces.models import Event

KINDS = ("outcome", "pair", "feedback", "commit")
FILTER_FIELDS = ("policy", "transition", "category")


class AnnotationRejected(Exception):
    """The request cannot be honoured as asked (not your claim, bad label, already final)."""


# --- verdict schema --------------------------------------------------------------------------

DEFAULT_SCHEMA: dict[str, dict[str, Any]] = {
    "outcome": {
        "question": "Did the guarded trajectory succeed?",
        "rubric": "Judge the end state of the guarded trajectory against the user's request: "
        "success when the task is done as asked, failure when it is not or something was "
        "broken on the way. Can't tell only when the trace does not show enough.",
        "labels": [
            {"value": "success", "text": "Succeeded", "keys": ["1", "y"]},
            {"value": "failure", "text": "Failed", "keys": ["2", "n"]},
            {"value": "unclear", "text": "Can't tell", "keys": ["3", "x"]},
        ],
        "fatal": False,
    },
    "pair": {
        "question": "Which call is better at this point of the conversation?",
        "rubric": "Read the conversation so far, then compare A and B as the agent's next "
        "action. Prefer the one that serves the user's latest request; flag fatal (f) when "
        "the call you did not choose would make the task fail.",
        "labels": [
            {"value": "A", "text": "A is better", "keys": ["1", "a"]},
            {"value": "B", "text": "B is better", "keys": ["2", "b"]},
            {"value": "tie", "text": "No difference", "keys": ["3", "t"]},
        ],
        "fatal": True,
    },
    "feedback": {
        "question": "Was the user's feedback right?",
        "rubric": "Valid when the feedback points at a real error in the answer before it; "
        "mistaken when the answer was right and the feedback pushes it to a wrong one.",
        "labels": [
            {"value": "valid", "text": "Feedback right", "keys": ["1", "y"]},
            {"value": "mistaken", "text": "Feedback mistaken", "keys": ["2", "n"]},
            {"value": "unclear", "text": "Can't tell", "keys": ["3", "x"]},
        ],
        "fatal": False,
    },
    "commit": {
        "question": "Is the committed candidate valid?",
        "rubric": "Valid when the candidate VRR commits solves the task (would pass a full, "
        "correct test suite), whatever the verifier's votes said.",
        "labels": [
            {"value": "valid", "text": "Valid", "keys": ["1", "y"]},
            {"value": "invalid", "text": "Invalid", "keys": ["2", "n"]},
            {"value": "unclear", "text": "Can't tell", "keys": ["3", "x"]},
        ],
        "fatal": False,
    },
}

# An outcome item's final label → the guarded outcome it sets ("unclear" sets nothing).
OUTCOME_VALUES = {"success": True, "failure": False}
RESERVED_KEYS = {"f", "s", "u", "c", "?", "enter"}


def schema_for(queue: AnnotationQueue, kind: str) -> dict[str, Any]:
    """The queue's schema for `kind`: its overrides (question, rubric, labels) over the
    defaults. Pair labels keep the values A and B: they are de-blinded to actor / twin."""
    base = dict(DEFAULT_SCHEMA[kind])
    over = (queue.schema or {}).get(kind) or {}
    for key in ("question", "rubric", "labels"):
        if over.get(key):
            base[key] = over[key]
    return base


def schema_validate(schema: Any) -> dict[str, Any]:
    """Check a queue schema given as JSON by an owner; return it, or raise AnnotationRejected."""
    if not isinstance(schema, dict):
        raise AnnotationRejected("the schema must be a JSON object keyed by item kind")
    for kind, over in schema.items():
        if kind not in KINDS:
            raise AnnotationRejected(f"unknown item kind {kind!r}; kinds: {', '.join(KINDS)}")
        if not isinstance(over, dict):
            raise AnnotationRejected(f"{kind}: expected an object")
        for key in ("question", "rubric"):
            if key in over and not isinstance(over[key], str):
                raise AnnotationRejected(f"{kind}.{key}: expected text")
        labels = over.get("labels")
        if labels is None:
            continue
        if not isinstance(labels, list) or not labels:
            raise AnnotationRejected(f"{kind}.labels: expected a non-empty list")
        seen_values: set[str] = set()
        seen_keys: set[str] = set()
        for lab in labels:
            if not isinstance(lab, dict) or not isinstance(lab.get("value"), str):
                raise AnnotationRejected(f"{kind}.labels: each label needs a text 'value'")
            value = lab["value"].strip()
            if not value or len(value) > 40 or value in seen_values:
                raise AnnotationRejected(f"{kind}.labels: bad or repeated value {value!r}")
            seen_values.add(value)
            keys = lab.get("keys", [])
            if not isinstance(keys, list) or not all(isinstance(k, str) for k in keys):
                raise AnnotationRejected(f"{kind}.labels: 'keys' must be a list of keys")
            for k in keys:
                k = k.lower()
                if len(k) != 1 or k in RESERVED_KEYS or k in seen_keys:
                    raise AnnotationRejected(f"{kind}.labels: key {k!r} is reserved or repeated")
                seen_keys.add(k)
        if kind == "pair" and not {"A", "B"} <= seen_values:
            raise AnnotationRejected("pair.labels: must keep the values A and B")
    return schema


# --- building queues -------------------------------------------------------------------------


def queue_create(
    *,
    run: AuditRun,
    name: str,
    kinds: Sequence[str] = KINDS,
    source: str = AnnotationQueue.Source.NEEDS,
    result_filter: Mapping[str, str] | None = None,
    k: int = 2,
    lease_seconds: int = 600,
    schema: Mapping[str, Any] | None = None,
    user=None,  # type: ignore[no-untyped-def]
) -> AnnotationQueue:
    """A queue over `run` and its items. `source=needs`: the results that need a human verdict
    (unknown guarded outcomes, TwinCheck pairs, feedback without a validity label, VRR commits
    of unlabelled candidates). `source=filter`: every result matching `result_filter` (policy,
    transition, category), asked each question of `kinds` that applies to it."""
    kinds = [x for x in dict.fromkeys(kinds) if x in KINDS]
    if not kinds:
        raise AnnotationRejected(f"choose at least one item kind: {', '.join(KINDS)}")
    if source not in AnnotationQueue.Source.values:
        raise AnnotationRejected(f"unknown source {source!r}")
    if not 1 <= int(k) <= 20:
        raise AnnotationRejected("k (annotators per item) must be between 1 and 20")
    if not 30 <= int(lease_seconds) <= 86400:
        raise AnnotationRejected("the lease must be between 30 s and 24 h")
    if run.status != AuditRun.Status.DONE:
        raise AnnotationRejected("the audit run is not finished yet")
    flt = {f: str(v) for f, v in (result_filter or {}).items() if f in FILTER_FIELDS and v}
    with transaction.atomic():
        queue = AnnotationQueue.objects.create(
            run=run,
            name=(name or "").strip()[:200] or f"run #{run.pk}",
            kinds=kinds,
            source=source,
            result_filter=flt,
            k=int(k),
            lease_seconds=int(lease_seconds),
            schema=schema_validate(dict(schema or {})),
            created_by=user if getattr(user, "pk", None) is not None else None,
        )
        AnnotationItem.objects.bulk_create(
            list(_candidate_items(queue)), ignore_conflicts=True, batch_size=2000
        )
    return queue


def _candidate_items(queue: AnnotationQueue) -> Iterable[AnnotationItem]:
    results = AuditResult.objects.filter(run=queue.run).order_by("trace_id", "policy")
    by_filter = queue.source == AnnotationQueue.Source.FILTER
    if by_filter:
        flt = queue.result_filter
        if flt.get("policy"):
            results = results.filter(policy=flt["policy"])
        if flt.get("transition"):
            results = results.filter(transition=flt["transition"])
        if flt.get("category"):
            results = results.filter(trace__category=flt["category"])
    kinds = set(queue.kinds)
    fields = ("id", "policy", "transition", "guarded_success", "continuation", "record")
    for r in results.only(*fields).iterator(chunk_size=500):
        rec = r.record if isinstance(r.record, dict) else {}

        def item(kind: str, ref: int = 0, **payload: Any) -> AnnotationItem:
            return AnnotationItem(queue=queue, result=r, kind=kind, ref=ref, payload=payload)  # noqa: B023

        if "outcome" in kinds and r.guarded_success is None:
            if by_filter or r.transition == AuditResult.Transition.UNKNOWN:
                yield item("outcome", policy=r.policy, continuation=r.continuation)
        if "pair" in kinds and r.policy == "twincheck":
            for i, d in enumerate(rec.get("decisions") or []):
                twin = d.get("twin")
                if isinstance(twin, dict) and (d.get("checks") or {}).get("passed"):
                    yield item(
                        "pair",
                        i,
                        call_index=d.get("call_index"),
                        call=d.get("call") or {},
                        twin=twin,
                        pair=d.get("pair"),
                    )
        if "feedback" in kinds and r.policy == "checklist":
            for i, fb in enumerate(rec.get("feedback_events") or []):
                if by_filter or fb.get("valid") is None:
                    yield item(
                        "feedback",
                        i,
                        index=fb.get("index"),
                        feedback_kind=fb.get("kind"),
                        candidate_before=fb.get("candidate_before"),
                        candidate_after=fb.get("candidate_after"),
                        machine_valid=fb.get("valid"),
                    )
        if "commit" in kinds and r.policy == "vrr" and rec.get("shipped_round") is not None:
            shipped = int(rec["shipped_round"])
            validity = rec.get("true_validity") or []
            known = validity[shipped] if shipped < len(validity) else None
            if by_filter or known is None:
                yield item(
                    "commit",
                    shipped,
                    shipped_round=shipped,
                    actor_round=rec.get("actor_round"),
                    mode=rec.get("mode"),
                    machine_valid=known,
                )


def queue_update(*, queue: AnnotationQueue, k: int, schema: Mapping[str, Any]) -> AnnotationQueue:
    """Change k and the verdict schema. Items settle again under the new k: raising it reopens
    agreed items (their flow-back reverted), lowering it can finish open ones."""
    if not 1 <= int(k) <= 20:
        raise AnnotationRejected("k (annotators per item) must be between 1 and 20")
    schema = schema_validate(dict(schema))
    with transaction.atomic():
        queue.k = int(k)
        queue.schema = schema
        queue.save(update_fields=["k", "schema"])
        for item in (
            AnnotationItem.objects.select_for_update()
            .filter(queue=queue, verdicts_count__gt=0)
            .exclude(final_source="adjudication")
            .order_by("id")
        ):
            item.queue = queue
            _settle(item)
    return queue


# --- assignment ------------------------------------------------------------------------------


def item_claim(
    *,
    queue: AnnotationQueue,
    user,
    now: datetime | None = None,  # type: ignore[no-untyped-def]
) -> AnnotationItem | None:
    """The next item for `user`, claimed for the queue's lease; None when nothing is left.

    An item is offered only while it is open, has fewer than k verdicts, and the user has not
    answered or skipped it; a claim someone else holds blocks it until its lease expires.
    The user's own live claim comes back first (a reload shows the same item).
    """
    now = now or timezone.now()
    held = (
        AnnotationItem.objects.filter(queue=queue, claimed_by=user, status="open")
        .exclude(verdicts__annotator=user)
        .first()
    )
    if held is not None:
        AnnotationItem.objects.filter(pk=held.pk, claimed_by=user).update(
            lease_until=now + timedelta(seconds=queue.lease_seconds)
        )
        held.refresh_from_db()
        return held
    answered = Verdict.objects.filter(item__queue=queue, annotator=user).values("item_id")
    free = Q(claimed_by__isnull=True) | Q(lease_until__lte=now)
    for _attempt in range(8):
        with transaction.atomic():
            # Two annotators asking at once: on PostgreSQL, SKIP LOCKED hands each of them a
            # different row without waiting. The conditional update below is the guard that
            # also holds where FOR UPDATE is a no-op (SQLite): of two claims on one row, only
            # the first changes it; the second sees 0 rows and tries the next item.
            candidate = (
                AnnotationItem.objects.select_for_update(skip_locked=True)
                .filter(queue=queue, status="open", verdicts_count__lt=queue.k)
                .filter(free)
                .exclude(pk__in=answered)
                .order_by("-verdicts_count", "id")
                .first()
            )
            if candidate is None:
                return None
            order = _random_order() if candidate.kind == "pair" else []
            changed = (
                AnnotationItem.objects.filter(pk=candidate.pk)
                .filter(free)
                .update(
                    claimed_by=user,
                    lease_until=now + timedelta(seconds=queue.lease_seconds),
                    claim_order=order,
                )
            )
        if changed == 1:
            candidate.refresh_from_db()
            return candidate
    return None


def _random_order() -> list[str]:
    """The blind A/B order for one showing: which of actor and twin is shown as A."""
    return ["actor", "twin"] if secrets.randbelow(2) == 0 else ["twin", "actor"]


def item_release(*, item: AnnotationItem, user) -> None:  # type: ignore[no-untyped-def]
    AnnotationItem.objects.filter(pk=item.pk, claimed_by=user).update(
        claimed_by=None, lease_until=None, claim_order=[]
    )


# --- verdicts --------------------------------------------------------------------------------


def verdict_submit(
    *,
    item_id: int,
    user,  # type: ignore[no-untyped-def]
    label: str = "",
    fatal: bool | None = None,
    comment: str = "",
    skipped: bool = False,
    seconds: float | None = None,
) -> Verdict:
    """Record the user's verdict (or skip) on an item they hold. For pairs the label chosen
    on screen (A / B) is stored de-blinded (actor / twin) with the order shown. When the item
    reaches k verdicts it settles: agreement → final label (and flow-back), else adjudication."""
    with transaction.atomic():
        item = (
            AnnotationItem.objects.select_for_update()
            .select_related("queue")
            .filter(pk=item_id)
            .first()
        )
        if item is None:
            raise AnnotationRejected("no such item")
        if item.claimed_by_id != user.pk:
            raise AnnotationRejected("this item is not assigned to you (the claim expired?)")
        if Verdict.objects.filter(item=item, annotator=user).exists():
            raise AnnotationRejected("you already answered this item")
        shown = ""
        canonical = ""
        schema = schema_for(item.queue, item.kind)
        if not skipped:
            if item.status != "open" or item.verdicts_count >= item.queue.k:
                raise AnnotationRejected("this item has all its verdicts already")
            values = [lab["value"] for lab in schema["labels"]]
            if label not in values:
                raise AnnotationRejected("choose one of: " + ", ".join(values))
            shown = label
            canonical = label
            if item.kind == "pair":
                order = item.claim_order or ["actor", "twin"]
                canonical = {"A": order[0], "B": order[1]}.get(label, label)
        verdict = Verdict.objects.create(
            item=item,
            annotator=user,
            label=canonical,
            shown_label=shown,
            fatal=bool(fatal) if schema.get("fatal") and not skipped else None,
            comment=(comment or "").strip()[:5000],
            display_order=list(item.claim_order or []),
            skipped=skipped,
            seconds=seconds,
        )
        item.claimed_by = None
        item.lease_until = None
        item.claim_order = []
        item.save(update_fields=["claimed_by", "lease_until", "claim_order"])
        if not skipped:
            _settle(item)
    return verdict


def verdict_undo(*, verdict_id: int, user) -> AnnotationItem:  # type: ignore[no-untyped-def]
    """Take back the user's verdict: the item reopens (its flow-back reverted) and is claimed
    for the user again, with the same A/B order they saw. Not after an adjudication."""
    with transaction.atomic():
        verdict = (
            Verdict.objects.select_related("item").filter(pk=verdict_id, annotator=user).first()
        )
        if verdict is None:
            raise AnnotationRejected("nothing to undo")
        item = (
            AnnotationItem.objects.select_for_update()
            .select_related("queue")
            .get(pk=verdict.item_id)
        )
        if item.final_source == "adjudication":
            raise AnnotationRejected("this item was adjudicated; its verdicts are final")
        order = verdict.display_order
        verdict.delete()
        _settle(item)
        if (
            item.claimed_by_id is None
            or item.lease_until is None
            or item.lease_until <= (timezone.now())
        ):
            item.claimed_by = user
            item.lease_until = timezone.now() + timedelta(seconds=item.queue.lease_seconds)
            item.claim_order = order if item.kind == "pair" else []
            item.save(update_fields=["claimed_by", "lease_until", "claim_order"])
    return item


def item_adjudicate(
    *,
    item_id: int,
    user,
    label: str,  # type: ignore[no-untyped-def]
) -> AnnotationItem:
    """An owner's final verdict (canonical label: for pairs actor / twin / tie). Views check
    the role; this checks the label."""
    with transaction.atomic():
        item = AnnotationItem.objects.select_for_update().select_related("queue").get(pk=item_id)
        allowed = adjudication_labels(item)
        if label not in [v for v, _t in allowed]:
            raise AnnotationRejected("choose one of: " + ", ".join(v for v, _t in allowed))
        _revert_flow_back(item)
        item.status = "done"
        item.final_label = label
        item.final_source = "adjudication"
        item.save(update_fields=["status", "final_label", "final_source"])
        _flow_back(item)
    return item


def adjudication_labels(item: AnnotationItem) -> list[tuple[str, str]]:
    """(value, text) of the canonical labels an adjudicator chooses from."""
    schema = schema_for(item.queue, item.kind)
    out = []
    for lab in schema["labels"]:
        value = lab["value"]
        if item.kind == "pair" and value in ("A", "B"):
            continue
        out.append((value, lab.get("text") or value))
    if item.kind == "pair":
        out = [("actor", "the actor's call"), ("twin", "the twin"), *out]
    return out


def _settle(item: AnnotationItem) -> None:
    """Recount the item's verdicts and set its state; call inside the item's row lock."""
    labels = list(Verdict.objects.filter(item=item, skipped=False).values_list("label", flat=True))
    item.verdicts_count = len(labels)
    was_final = item.status == "done"
    if item.final_source == "adjudication":
        item.save(update_fields=["verdicts_count"])
        return
    if len(labels) >= item.queue.k and len(set(labels)) == 1:
        item.status, item.final_label, item.final_source = "done", labels[0], "agreement"
    elif len(labels) >= item.queue.k:
        item.status, item.final_label, item.final_source = "disagree", "", ""
    else:
        item.status, item.final_label, item.final_source = "open", "", ""
    item.save(update_fields=["verdicts_count", "status", "final_label", "final_source"])
    if item.status == "done" and not was_final:
        _flow_back(item)
    elif item.status != "done" and was_final:
        _revert_flow_back(item)


# --- flow-back -------------------------------------------------------------------------------


def _flow_back(item: AnnotationItem) -> None:
    """An outcome item's final verdict becomes the result's guarded outcome, and its
    transition rescue / harm / same; the machine values stay in a ResultOverride and the run's
    tables are recomputed."""
    if item.kind != "outcome" or item.final_label not in OUTCOME_VALUES:
        return
    result = AuditResult.objects.select_for_update().get(pk=item.result_id)
    existing = ResultOverride.objects.filter(result=result).first()
    if existing is not None and existing.item_id != item.pk:
        return  # another item (another queue) already settled this result: first one wins
    human = OUTCOME_VALUES[item.final_label]
    machine_actor = existing.machine_actor_success if existing else result.actor_success
    machine_guarded = existing.machine_guarded_success if existing else result.guarded_success
    machine_transition = existing.machine_transition if existing else result.transition
    if machine_guarded is not None:
        return  # only unknown guarded outcomes are the human's to decide
    actor = machine_actor
    human_actor = None
    if actor is None and result.continuation == "exact":
        # guarded = actor trajectory: the verdict on one is the verdict on the other
        actor = human_actor = human
    ResultOverride.objects.update_or_create(
        result=result,
        defaults={
            "item": item,
            "machine_actor_success": machine_actor,
            "machine_guarded_success": machine_guarded,
            "machine_transition": machine_transition,
            "human_guarded_success": human,
            "human_actor_success": human_actor,
            "source": item.final_source,
        },
    )
    result.actor_success = actor
    result.guarded_success = human
    result.transition = transition(actor, human)
    result.save(update_fields=["actor_success", "guarded_success", "transition"])
    _resummarise(result.run_id)


def _revert_flow_back(item: AnnotationItem) -> None:
    override = ResultOverride.objects.filter(item=item).select_related("result").first()
    if override is None:
        return
    result = override.result
    result.actor_success = override.machine_actor_success
    result.guarded_success = override.machine_guarded_success
    result.transition = override.machine_transition
    result.save(update_fields=["actor_success", "guarded_success", "transition"])
    override.delete()
    _resummarise(result.run_id)


def _resummarise(run_id: int) -> None:
    from auditor.services import audit_run_summary

    run = AuditRun.objects.get(pk=run_id)
    AuditRun.objects.filter(pk=run_id).update(summary=audit_run_summary(run))


# --- progress, agreement, disagreements ------------------------------------------------------


def queue_progress(queue: AnnotationQueue, user=None) -> dict[str, Any]:  # type: ignore[no-untyped-def]
    items = AnnotationItem.objects.filter(queue=queue)
    counts = {s: 0 for s in ("open", "disagree", "done")}
    verdicts = 0
    total = 0
    for status, n, v in _status_counts(items):
        counts[status] = counts.get(status, 0) + n
        verdicts += v
        total += n
    needed = total * queue.k
    mine = (
        Verdict.objects.filter(item__queue=queue, annotator=user, skipped=False).count()
        if user is not None
        else 0
    )
    return {
        "items": total,
        **counts,
        "verdicts": verdicts,
        "needed": needed,
        "percent": round(100 * verdicts / needed) if needed else 100,
        "mine": mine,
    }


def _status_counts(items) -> list[tuple[str, int, int]]:  # type: ignore[no-untyped-def]
    from django.db.models import Count, Sum

    return [
        (r["status"], r["n"], r["v"] or 0)
        for r in items.values("status").annotate(n=Count("id"), v=Sum("verdicts_count"))
    ]


def _num(x: float) -> float | None:
    return None if x is None or (isinstance(x, float) and math.isnan(x)) else round(x, 4)


def agreement(units: Mapping[int, Mapping[str, str]]) -> dict[str, Any]:
    """Agreement over units {item: {annotator: label}}: Krippendorff's α (any number of
    annotators, missing data), Cohen's κ for every pair of annotators on the items both
    labelled (the headline κ when there are exactly two), and per label (one vs rest)."""
    annotators = sorted({a for u in units.values() for a in u})
    matrix = [[u.get(a) for a in annotators] for u in units.values()]
    alpha = krippendorff_alpha_nominal(matrix)
    pairs = []
    for a, b in combinations(annotators, 2):
        shared = [(u[a], u[b]) for u in units.values() if a in u and b in u]
        if shared:
            kappa = cohen_kappa([x for x, _ in shared], [y for _, y in shared])
            pairs.append({"a": a, "b": b, "n": len(shared), "kappa": _num(kappa)})
    labels = sorted({v for row in matrix for v in row if v is not None})
    per_label = []
    for lab in labels:
        binary = [[None if v is None else v == lab for v in row] for row in matrix]
        entry: dict[str, Any] = {
            "label": lab,
            "n": sum(1 for row in matrix for v in row if v == lab),
            "alpha": _num(krippendorff_alpha_nominal(binary)),
            "kappa": None,
        }
        if len(annotators) == 2:
            shared = [(r[0], r[1]) for r in binary if r[0] is not None and r[1] is not None]
            if shared:
                entry["kappa"] = _num(cohen_kappa([x for x, _ in shared], [y for _, y in shared]))
        per_label.append(entry)
    return {
        "annotators": annotators,
        "units": len(units),
        "paired_units": sum(1 for row in matrix if sum(v is not None for v in row) >= 2),
        "alpha": _num(alpha),
        "kappa": pairs[0]["kappa"] if len(annotators) == 2 and pairs else None,
        "pairs": pairs,
        "labels": per_label,
    }


def queue_agreement(queue: AnnotationQueue) -> dict[str, Any]:
    """Agreement of the queue's verdicts, overall (labels prefixed by kind) and per kind."""
    by_kind: dict[str, dict[int, dict[str, str]]] = defaultdict(lambda: defaultdict(dict))
    rows = Verdict.objects.filter(item__queue=queue, skipped=False).values_list(
        "item_id", "item__kind", "annotator__username", "label"
    )
    for item_id, kind, who, label in rows:
        by_kind[kind][item_id][who] = label
    overall_units = {
        item_id: {who: f"{kind}:{lab}" for who, lab in u.items()}
        for kind, units in by_kind.items()
        for item_id, u in units.items()
    }
    return {
        "overall": agreement(overall_units),
        "kinds": [{"kind": kind, **agreement(by_kind[kind])} for kind in KINDS if kind in by_kind],
    }


def queue_disagreements(queue: AnnotationQueue) -> list[AnnotationItem]:
    return list(
        AnnotationItem.objects.filter(queue=queue, status="disagree")
        .select_related("result__trace")
        .prefetch_related("verdicts__annotator")
        .order_by("id")
    )


# --- what an item shows ----------------------------------------------------------------------

TEXT_LIMIT = 4000


def _text(value: Any) -> str:
    """Plain text for the page (escaped by the template, never marked safe)."""
    import json

    if value is None:
        return ""
    s = value if isinstance(value, str) else json.dumps(value, indent=2, ensure_ascii=False)
    return s if len(s) <= TEXT_LIMIT else s[:TEXT_LIMIT] + f"… ({len(s) - TEXT_LIMIT} more)"


def _event_line(ev: Mapping[str, Any]) -> dict[str, str]:
    kind = str(ev.get("type") or "")
    if kind == "message":
        return {"type": kind, "who": str(ev.get("role") or ""), "text": _text(ev.get("content"))}
    if kind == "tool_call":
        return {
            "type": kind,
            "who": str(ev.get("name") or ""),
            "text": _text(ev.get("arguments")),
        }
    if kind == "tool_result":
        return {"type": kind, "who": str(ev.get("status") or ""), "text": _text(ev.get("content"))}
    if kind == "candidate":
        body = ev.get("answer") if ev.get("answer") is not None else ev.get("content")
        return {"type": kind, "who": f"round {ev.get('round', '')}", "text": _text(body)}
    if kind == "trace":
        return {"type": kind, "who": "", "text": ""}
    return {
        "type": kind,
        "who": "",
        "text": _text({k: v for k, v in ev.items() if k != "trace_id"}),
    }


def _lines(events: Iterable[Mapping[str, Any]]) -> list[dict[str, str]]:
    """Display lines of events, without the header (it says nothing to an annotator)."""
    return [_event_line(e) for e in events if e.get("type") != "trace"]


def _events(item: AnnotationItem, start: int, stop: int) -> list[dict[str, Any]]:
    """The trace's events [start, stop) in replay order (the policies' event indices)."""
    start = max(0, start)
    if stop <= start:
        return []
    return list(
        Event.objects.filter(trace_id=item.result.trace_id)
        .order_by("seq")
        .values_list("payload", flat=True)[start:stop]
    )


def _first_user_message(item: AnnotationItem) -> str:
    ev = (
        Event.objects.filter(trace_id=item.result.trace_id, type="message", role="user")
        .order_by("seq")
        .values_list("payload", flat=True)
        .first()
    )
    return _text((ev or {}).get("content"))


def _call_view(call: Mapping[str, Any]) -> dict[str, str]:
    kind = call.get("kind") or "call"
    if kind == "completion":
        return {"kind": "reply", "title": "Reply to the user", "body": _text(call.get("text"))}
    if kind == "delete" or (not call.get("name") and not call.get("text")):
        return {"kind": "nothing", "title": "No call (do nothing here)", "body": ""}
    return {
        "kind": "call",
        "title": str(call.get("name") or ""),
        "body": _text(call.get("arguments") or {}),
    }


def item_display(item: AnnotationItem, *, blind: bool = True) -> dict[str, Any]:
    """What the annotation page shows for an item. For pairs the two candidates come as A and
    B in the order of the current claim; nothing on the page says which is the actor."""
    p = item.payload or {}
    out: dict[str, Any] = {"kind": item.kind, "task": _first_user_message(item)}
    if item.kind == "outcome":
        traj = item.result.guarded_trajectory
        if not traj:
            n = Event.objects.filter(trace_id=item.result.trace_id).count()
            traj = _events(item, n - 12, n)
        out["events"] = _lines((traj or [])[-12:])
        out["continuation"] = item.result.continuation
        out["policy"] = item.result.policy
        out["actor_success"] = item.result.actor_success
    elif item.kind == "pair":
        idx = int(p.get("call_index") or 0)
        out["events"] = _lines(_events(item, idx - 8, idx))
        views = {
            "actor": _call_view({"kind": "call", **(p.get("call") or {})}),
            "twin": _call_view(p.get("twin") or {}),
        }
        order = item.claim_order or ["actor", "twin"]
        out["a"], out["b"] = views[order[0]], views[order[1]]
        if not blind:
            out["order"] = order
            out["actor"], out["twin"] = views["actor"], views["twin"]
    elif item.kind == "feedback":
        idx = int(p.get("index") or 0)
        before = p.get("candidate_before")
        start = int(before) if before is not None else idx - 4
        out["events"] = _lines(_events(item, start, idx))
        fb = _events(item, idx, idx + 1)
        out["feedback"] = _event_line(fb[0]) if fb else None
        after = p.get("candidate_after")
        nxt = _events(item, int(after), int(after) + 1) if after is not None else []
        out["after"] = _event_line(nxt[0]) if nxt else None
    elif item.kind == "commit":
        shipped = int(p.get("shipped_round") or 0)
        cands = sorted(
            Event.objects.filter(trace_id=item.result.trace_id, type="candidate").values_list(
                "payload", flat=True
            ),
            key=lambda e: (e.get("round") if isinstance(e.get("round"), int) else 0),
        )
        cand = cands[shipped] if shipped < len(cands) else None
        out["candidate"] = _event_line(cand) if cand else None
        out["shipped_round"] = shipped
        out["n_rounds"] = len(cands)
    return out
