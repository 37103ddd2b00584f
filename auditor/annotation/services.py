"""Human annotation services (SPEC §5.5, §6 "Annotation"): build queues from an audit
run, assign items with a lease, record verdicts (blind A/B for pairs), skip and undo, and
adjudicate. A settled item's verdict flows back into the run (`flowback`); what the pages read
is in `selectors` and `display`, the verdict schema in `schema`.

Write functions are `<entity>_<action>`, keyword-only; views only translate to and from them.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any

from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from auditor.annotation.flowback import flow_back, revert_flow_back
from auditor.annotation.human_gate import blind_order, pair_order
from auditor.annotation.models import AnnotationItem, AnnotationQueue, Verdict
from auditor.annotation.schema import (
    FILTER_FIELDS,
    KINDS,
    AnnotationRejected,
    adjudication_labels,
    schema_for,
    schema_validate,
)
from auditor.runs.models import DECISION_FIELDS, AuditResult, AuditRun
from policies.stats.report import annotation_queue

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


def _candidate_items(
    queue: AnnotationQueue, trace_ids: Iterable[int] | None = None
) -> Iterable[AnnotationItem]:
    results = AuditResult.objects.filter(run=queue.run).order_by("trace_id", "policy")
    if trace_ids is not None:  # traces chosen on the list (auditor.annotation.bulk)
        results = results.filter(trace_id__in=list(trace_ids))
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
    for r in results.only("id", "trace_id", "policy", *DECISION_FIELDS).iterator(chunk_size=500):
        rec = r.record if isinstance(r.record, dict) else {}
        # Which outcome a human must supply and why (policies.stats.report.annotation_queue): every
        # unknown transition, whichever side is unknown (an unknown "keep" is no "same").
        [unknown] = annotation_queue(
            [{"trace_id": r.trace_id, **{f: getattr(r, f) for f in DECISION_FIELDS}}]
        ) or [None]

        def item(kind: str, ref: int = 0, **payload: Any) -> AnnotationItem:
            return AnnotationItem(queue=queue, result=r, kind=kind, ref=ref, payload=payload)  # noqa: B023

        if "outcome" in kinds and unknown is not None:
            yield item(
                "outcome",
                policy=r.policy,
                continuation=r.continuation,
                needs=unknown["needs"],
                reason=unknown["reason"],
            )
        elif "outcome" in kinds and by_filter and r.guarded_success is None:
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
            # Pairs: the second annotator sees the other order, so two verdicts cover both.
            order = (
                (
                    pair_order(candidate, user=user)
                    or blind_order(item_id=candidate.pk, user_id=user.pk)
                )
                if candidate.kind == "pair"
                else []
            )
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
    queue_id: int | None = None,
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
        # The page checked the user's role in the queue named by the URL: the item must be of
        # that queue, or a claim held in a project the user has since left could be answered
        # through another project's queue URL.
        if item is None or (queue_id is not None and item.queue_id != queue_id):
            raise AnnotationRejected("no such item in this queue")
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
        revert_flow_back(item)
        item.status = "done"
        item.final_label = label
        item.final_source = "adjudication"
        item.save(update_fields=["status", "final_label", "final_source"])
        flow_back(item)
    return item


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
        flow_back(item)
    elif item.status != "done" and was_final:
        revert_flow_back(item)
