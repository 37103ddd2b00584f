"""What the queue pages read — progress, agreement (Krippendorff's α, Cohen's κ), the items
waiting for adjudication — and the annotations of audit results as exports write them."""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Mapping, Sequence
from itertools import combinations
from typing import Any

from django.db.models import Count, Sum

from auditor.annotation.models import AnnotationItem, AnnotationQueue, ResultOverride, Verdict
from auditor.annotation.schema import KINDS
from policies.stats.methods import cohen_kappa, krippendorff_alpha_nominal


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


def items_left(*, queue: AnnotationQueue, user) -> bool:  # type: ignore[no-untyped-def]
    """Whether the queue still has an item the user may give a verdict on: open, short of k
    verdicts, and not answered or skipped by them (another annotator's claim only delays it)."""
    if not getattr(user, "is_authenticated", False):
        return False
    return (
        AnnotationItem.objects.filter(queue=queue, status="open", verdicts_count__lt=queue.k)
        .exclude(verdicts__annotator=user)
        .exists()
    )


def _status_counts(items) -> list[tuple[str, int, int]]:  # type: ignore[no-untyped-def]
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


def result_annotations(result_ids: Sequence[int]) -> dict[int, dict]:
    """Per audit result: its annotation items with their verdicts, and the human override of
    its outcome, if any, as exports write them. Annotators appear by user id (pseudonymous),
    not by name."""
    if not result_ids:
        return {}
    out: dict[int, dict] = {}
    items = (
        AnnotationItem.objects.filter(result_id__in=result_ids)
        .prefetch_related("verdicts")
        .order_by("result_id", "id")
    )
    for item in items:
        out.setdefault(item.result_id, {"items": []})["items"].append(
            {
                "item": item.pk,
                "queue": item.queue_id,
                "kind": item.kind,
                "ref": item.ref,
                "status": item.status,
                "final_label": item.final_label or None,
                "final_source": item.final_source or None,
                "verdicts": [
                    {
                        "annotator": v.annotator_id,
                        "label": v.label,
                        "fatal": v.fatal,
                        "skipped": v.skipped,
                        "comment": v.comment,
                        "display_order": v.display_order,
                        "seconds": v.seconds,
                        "created_at": v.created_at.isoformat(),
                    }
                    for v in item.verdicts.all()
                ],
            }
        )
    for o in ResultOverride.objects.filter(result_id__in=result_ids):
        out.setdefault(o.result_id, {"items": []})["override"] = {
            "machine_guarded_success": o.machine_guarded_success,
            "machine_transition": o.machine_transition,
            "human_guarded_success": o.human_guarded_success,
            "source": o.source,
        }
    return out
