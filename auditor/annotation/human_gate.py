"""TwinCheck's human gate: blind pairwise verdicts from annotation become the
judge of a re-replay of the trace, so a replacement is applied only when the verdicts meet the
paper's gate (in both orders: the twin preferred, the actor's call fatal, the twin's not,
confidence and margin over the run's thresholds).

- With the ``human`` judge, the run's held certificates with valid twins await review; a pair
  queue is opened when the run finishes (`open_review_queue`).
- With another judge (``heuristic``), human verdicts decide only the pairs where that judge
  abstained (`ReviewedJudge`); elsewhere its own verdicts stand.
- Each annotator sees one blind order; `pair_order` shows the later annotators the other one,
  so k = 2 agreeing verdicts cover both orders.

A settled pair item (or an undone one) replays its trace again (`pair_flow_back`), and the
run's tables are recomputed.
"""

from __future__ import annotations

import hashlib
import hmac
from typing import Any

from django.conf import settings

from auditor.annotation.models import AnnotationItem, AnnotationQueue, Verdict
from auditor.runs.models import AuditResult, AuditRun
from auditor.runs.rereplay import rereplay_trace
from policies.judge_registry import make_judge
from policies.judges import HumanJudge, Judge, PairRequest
from policies.judges import Verdict as JudgeVerdict

HUMAN_CONFIDENCE = 1.0  # a person's considered choice; the gate's margin still applies


def blind_order(*, item_id: int, user_id: int) -> list[str]:
    """The blind A/B order of a pair for one annotator: which of actor and twin is shown as A.
    Random across items and annotators (a keyed hash under the site's secret, which annotators
    cannot compute), yet the same each time this annotator is shown this item — a reload or a
    lapsed and renewed claim shows the same A and B."""
    digest = hmac.new(
        settings.SECRET_KEY.encode(), f"pair-order:{item_id}:{user_id}".encode(), hashlib.sha256
    ).digest()
    return ["actor", "twin"] if digest[0] & 1 == 0 else ["twin", "actor"]


def pair_order(item: AnnotationItem, *, user=None) -> list[str] | None:  # type: ignore[no-untyped-def]
    """The order to show `user` next: the opposite of the first verdict someone else gave,
    else None (the annotator's own blind order). The first verdict, not the last, so that the
    order an annotator is shown does not change when others answer in between."""
    first = (
        Verdict.objects.filter(item=item, skipped=False)
        .exclude(annotator=user)
        .order_by("created_at", "id")
        .values_list("display_order", flat=True)
        .first()
    )
    if isinstance(first, list) and sorted(first) == ["actor", "twin"]:
        return [first[1], first[0]]
    return None


def judgment_of(v: Verdict) -> tuple[str, dict[str, Any]] | None:
    """A verdict as a judgment in the orientation it was shown (None if not a pair verdict)."""
    order = list(v.display_order or [])
    if sorted(order) != ["actor", "twin"] or v.label not in ("actor", "twin", "tie"):
        return None
    side = {order[0]: "A", order[1]: "B"}
    orientation = "actor_first" if order[0] == "actor" else "twin_first"
    if v.label == "tie":
        return orientation, {
            "prefer": None,
            "scores": {"A": 2, "B": 2},
            "fatal": {"A": False, "B": False},
            "confidence": HUMAN_CONFIDENCE,
        }
    chosen = side[v.label]
    other = "B" if chosen == "A" else "A"
    return orientation, {
        "prefer": chosen,
        "scores": {chosen: 4, other: 0},
        "fatal": {chosen: False, other: bool(v.fatal)},
        "confidence": HUMAN_CONFIDENCE,
    }


def result_verdicts(result: AuditResult) -> dict[tuple[str, str], dict[str, Any]]:
    """Judgments keyed (pair id, orientation) from the settled pair items of ``result``."""
    out: dict[tuple[str, str], dict[str, Any]] = {}
    items = AnnotationItem.objects.filter(
        result=result, kind="pair", status=AnnotationItem.Status.DONE
    )
    for item in items:
        pair = str((item.payload or {}).get("pair") or "")
        for v in Verdict.objects.filter(item=item, skipped=False).order_by("created_at", "id"):
            got = judgment_of(v)
            if pair and got is not None:
                out[(pair, got[0])] = {**got[1], "judge": "human"}
    return out


class ReviewedJudge:
    """The run's judge, with human verdicts standing in where it abstained."""

    def __init__(self, base: Judge, human: HumanJudge) -> None:
        self.base = base
        self.human = human
        self.name = getattr(base, "name", "judge")

    def judge(self, request: PairRequest) -> JudgeVerdict:
        v = self.base.judge(request)
        if not getattr(v, "abstained", False):
            return v
        h = self.human.judge(request)
        return v if getattr(h, "abstained", False) else h


def pair_flow_back(item: AnnotationItem) -> None:
    """Replay the item's trace with the verdicts now settled (called on settle and undo)."""
    result = AuditResult.objects.select_related("run").get(pk=item.result_id)
    run = result.run
    if run.judge not in ("human", "heuristic"):
        return  # a model or recorded judgment decides; human verdicts there are evaluation
    human = HumanJudge(result_verdicts(result))
    judge: Judge = human if run.judge == "human" else ReviewedJudge(make_judge(run.judge), human)
    rereplay_trace(run=run, trace_id=result.trace_id, judge=judge)


def open_review_queue(run: AuditRun) -> AnnotationQueue | None:
    """For a finished human-judge run with pairs awaiting review: its pair queue (made once)."""
    if run.judge != "human" or run.status != AuditRun.Status.DONE:
        return None
    # In the function: services imports flowback, which imports this module; and only here,
    # so a run of another judge finishes without loading the annotation services.
    from auditor.annotation.services import queue_create

    existing = AnnotationQueue.objects.filter(run=run, kinds=["pair"]).first()
    if existing is not None:
        return existing
    waiting = any(
        rec.get("awaiting_review")
        for rec in AuditResult.objects.filter(run=run, policy="twincheck").values_list(
            "record", flat=True
        )
        if isinstance(rec, dict)
    )
    if not waiting:
        return None
    return queue_create(run=run, name=f"TwinCheck pairs of run #{run.pk}", kinds=["pair"], k=2)


def on_run_finished(sender: type, run: AuditRun, **_: Any) -> None:
    """`auditor.runs.signals.run_finished` receiver (connected in auditor/apps.py)."""
    open_review_queue(run)
