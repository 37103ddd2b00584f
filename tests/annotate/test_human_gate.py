"""TwinCheck's human gate closes the loop with annotation: a human-judge run's pairs become blind
pair items (shown in both orders), a replacement is applied only when the verdicts meet the
paper's gate, the affected trace is replayed again and the run's tables update; an undo
reverts it. With the heuristic judge, human verdicts decide only where it abstained."""

from __future__ import annotations

import pytest
from django.urls import reverse

from auditor.annotation.human_gate import ReviewedJudge, judgment_of
from auditor.annotation.models import AnnotationItem, AnnotationQueue
from auditor.annotation.services import item_claim, verdict_submit, verdict_undo
from auditor.models import AuditResult, AuditRun
from auditor.runs.services import audit_run_create, audit_run_start
from policies.judges import HumanJudge, PairRequest, Proposal, Verdict

from .conftest import ingest_bytes, lock_traces

pytestmark = pytest.mark.django_db


def human_run(project) -> AuditRun:  # type: ignore[no-untyped-def]
    ingest_bytes(project, lock_traces(2), "locks.jsonl")
    run = audit_run_create(
        project=project, policies=["twincheck"], judge="human", environment="none", enqueue=False
    )
    audit_run_start(run_id=run.pk, inline=True)
    run.refresh_from_db()
    assert run.status == "done"
    return run


def answer(queue, user, choose: str, fatal: bool) -> AnnotationItem:  # type: ignore[no-untyped-def]
    """Claim the next item and choose ``choose`` (actor / twin) by the letter it is shown as."""
    item = item_claim(queue=queue, user=user)
    assert item is not None and sorted(item.claim_order) == ["actor", "twin"]
    letter = "A" if item.claim_order[0] == choose else "B"
    verdict_submit(item_id=item.pk, user=user, label=letter, fatal=fatal)
    item.refresh_from_db()
    return item


def twincheck_of(item: AnnotationItem) -> AuditResult:
    return AuditResult.objects.get(pk=item.result_id)


def test_human_verdicts_in_both_orders_apply_the_replacement_and_update_the_run(
    project, alice, bob, carol, client
):
    run = human_run(project)
    queue = AnnotationQueue.objects.get(run=run)  # opened when the run finished
    assert queue.kinds == ["pair"] and queue.k == 2
    assert queue.items.count() == 2
    for r in AuditResult.objects.filter(run=run):
        assert r.record["awaiting_review"] and not r.record["decisions"][0]["gate"]["replace"]
    client.force_login(alice)
    page = client.get(reverse("auditor:run", args=[run.pk])).content.decode()
    assert "<strong>2</strong> pairs await review" in page

    # Trace 1: both annotators prefer the twin and flag the actor's unlock fatal.
    first = answer(queue, bob, "twin", fatal=True)
    shown_first = list(first.verdicts.get().display_order)
    assert twincheck_of(first).record["awaiting_review"]  # one order is not the gate
    item = item_claim(queue=queue, user=carol)
    assert item is not None and item.pk == first.pk  # the item with a verdict comes first
    assert item.claim_order == shown_first[::-1]  # the other order
    letter = "A" if item.claim_order[0] == "twin" else "B"
    verdict_submit(item_id=item.pk, user=carol, label=letter, fatal=True)
    item.refresh_from_db()
    assert item.status == "done"
    res = twincheck_of(item)
    d = res.record["decisions"][0]
    assert d["gate"]["replace"] and d["judge"] == "human"
    assert {j["orientation"] for j in d["judgments"]} == {"actor_first", "twin_first"}
    assert not res.record["awaiting_review"] and res.continuation != "exact"
    run.refresh_from_db()
    report = run.summary["twincheck"]["report"]
    assert report["per_certificate"]["all"]["accepted"] == 1
    assert report["awaiting_review"] == 1
    page = client.get(reverse("auditor:run", args=[run.pk])).content.decode()
    assert "<strong>1</strong> pair awaits review" in page

    # Trace 2: they prefer the twin but nobody calls the actor's call fatal: the gate keeps it.
    other = answer(queue, bob, "twin", fatal=False)
    other = answer(queue, carol, "twin", fatal=False)
    assert other.status == "done"
    d2 = twincheck_of(other).record["decisions"][0]
    assert not d2["gate"]["replace"] and "awaiting" not in d2["gate"]["reason"]

    # Undo one verdict of trace 1: the replacement is taken back and the pair waits again.
    verdict_undo(verdict_id=first.verdicts.get(annotator=carol).pk, user=carol)
    res = twincheck_of(first)
    assert not res.record["decisions"][0]["gate"]["replace"] and res.record["awaiting_review"]
    run.refresh_from_db()
    assert run.summary["twincheck"]["report"]["per_certificate"]["all"]["accepted"] == 0


class Abstains:
    name = "heuristic"

    def judge(self, request: PairRequest) -> Verdict:
        return Verdict.abstain(self.name, "no evidence")


class Decides:
    name = "heuristic"

    def judge(self, request: PairRequest) -> Verdict:
        return Verdict("A", False, True, 4, 0, 0.9, self.name)


def test_with_the_heuristic_judge_human_verdicts_stand_in_only_where_it_abstained():
    human = HumanJudge(
        {("p", "actor_first"): {"prefer": "B", "scores": {"A": 0, "B": 4}, "fatal": {"A": True}}}
    )
    req = PairRequest("p", "actor_first", Proposal("delete"), Proposal("delete"), "")
    assert ReviewedJudge(Abstains(), human).judge(req).prefer == "B"  # the human's
    assert ReviewedJudge(Decides(), human).judge(req).prefer == "A"  # the judge's own
    other = PairRequest("q", "actor_first", Proposal("delete"), Proposal("delete"), "")
    assert ReviewedJudge(Abstains(), human).judge(other).abstained  # nobody decided


def test_a_verdict_becomes_a_judgment_in_the_order_it_was_shown():
    from auditor.annotation.models import Verdict as V

    v = V(label="twin", fatal=True, display_order=["twin", "actor"])
    assert judgment_of(v) == (
        "twin_first",
        {
            "prefer": "A",
            "scores": {"A": 4, "B": 0},
            "fatal": {"A": False, "B": True},
            "confidence": 1.0,
        },
    )
    assert judgment_of(V(label="tie", display_order=["actor", "twin"]))[1]["prefer"] is None
    assert judgment_of(V(label="valid", display_order=[])) is None
