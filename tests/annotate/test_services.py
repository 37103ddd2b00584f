"""Annotation services: queues from real runs, assignment with leases, verdicts, agreement,
adjudication and the flow-back into transitions."""

from __future__ import annotations

import json
import threading
from datetime import timedelta

import pytest
from django.db import connection
from django.utils import timezone

from auditor.annotation.display import item_display
from auditor.annotation.human_gate import blind_order
from auditor.annotation.schema import (
    DEFAULT_SCHEMA,
    AnnotationRejected,
    schema_for,
    schema_validate,
)
from auditor.annotation.selectors import (
    agreement,
    queue_agreement,
    queue_disagreements,
    queue_progress,
)
from auditor.annotation.services import (
    item_adjudicate,
    item_claim,
    item_release,
    queue_create,
    queue_update,
    verdict_submit,
    verdict_undo,
)
from auditor.models import AnnotationItem, AuditResult, ResultOverride, Verdict
from tests.annotate.conftest import SYCON, ingest_bytes, make_run

pytestmark = pytest.mark.django_db


def answer(queue, user, label: str, **kw):  # type: ignore[no-untyped-def]
    item = item_claim(queue=queue, user=user)
    assert item is not None
    return verdict_submit(item_id=item.pk, user=user, label=label, **kw)


# --- building ----------------------------------------------------------------------------


def test_queue_of_what_needs_a_verdict_matches_the_results(run, alice):
    queue = queue_create(run=run, name="all", user=alice)
    items = AnnotationItem.objects.filter(queue=queue)
    unknown = AuditResult.objects.filter(run=run, transition="unknown", guarded_success=None)
    assert items.filter(kind="outcome").count() == unknown.count() > 0
    assert set(items.filter(kind="outcome").values_list("result_id", flat=True)) == set(
        unknown.values_list("pk", flat=True)
    )
    # one pair per TwinCheck decision with a twin that passed the structural checks
    pairs = [
        (r.pk, i)
        for r in AuditResult.objects.filter(run=run, policy="twincheck")
        for i, d in enumerate(r.record.get("decisions") or [])
        if d.get("twin") and d["checks"]["passed"]
    ]
    assert sorted(items.filter(kind="pair").values_list("result_id", "ref")) == sorted(pairs)
    assert len(pairs) == 3  # the three lock traces
    pair = items.filter(kind="pair").first()
    assert pair.payload["call"]["name"] == "unlock_account"
    assert pair.payload["twin"]["kind"] == "completion"
    # the examples' feedback and commits carry labels: nothing to ask in "needs" mode
    assert not items.filter(kind__in=["feedback", "commit"]).exists()


def test_filter_queue_asks_every_matching_result(run_one_loop_decided, alice):
    # The example's capitulation under mistaken pushback is a checklist rescue, its repair loop
    # cannot be judged by the checklist (no per-claim confidence: not applicable, never
    # "same"), and VRR decides the one-loop run because the run lowers its minimum of evidence.
    run = run_one_loop_decided

    def queue(transition: str, kinds: list[str]):  # type: ignore[no-untyped-def]
        q = queue_create(
            run=run,
            name=f"labelled too: {transition}",
            kinds=kinds,
            source="filter",
            result_filter={"transition": transition},
            user=alice,
        )
        return AnnotationItem.objects.filter(queue=q)

    na = queue("not_applicable", ["feedback", "commit"])
    assert na.filter(kind="feedback").count() == 1  # the repair loop's bug report
    assert set(na.values_list("result__transition", flat=True)) == {"not_applicable"}
    same = queue("same", ["feedback", "commit"])
    commit = same.get(kind="commit")
    assert commit.payload["shipped_round"] == 1 and commit.payload["machine_valid"] is True
    assert set(same.values_list("result__transition", flat=True)) == {"same"}
    pushbacks = queue("rescue", ["feedback"])
    assert pushbacks.count() == 2  # both pushbacks, labelled ones too
    assert set(pushbacks.values_list("result__transition", flat=True)) == {"rescue"}


def test_queue_from_real_sycon_run_has_one_item_per_pushback(project, alice):
    if not SYCON.exists():
        pytest.fail(f"real data file missing: {SYCON}")
    ingest_bytes(project, SYCON.read_bytes(), SYCON.name)
    run = make_run(project, locks=0, examples=False, policies=["checklist"])
    queue = queue_create(run=run, name="pushbacks", kinds=["feedback"], source="filter", user=alice)
    records = [json.loads(x) for x in SYCON.read_text().splitlines() if x.strip()]
    pushbacks = sum(len(r["turns"]) - 1 for r in records)
    assert queue.items.count() == pushbacks > 0
    item = item_claim(queue=queue, user=alice)
    show = item_display(item)
    assert show["feedback"] and show["feedback"]["text"]
    assert show["task"] == records[0]["question"] or show["task"]


def test_queue_needs_a_finished_run_and_valid_settings(run, alice):
    with pytest.raises(AnnotationRejected):
        queue_create(run=run, name="x", kinds=["nope"])
    with pytest.raises(AnnotationRejected):
        queue_create(run=run, name="x", k=0)
    with pytest.raises(AnnotationRejected, match="reserved"):
        queue_create(
            run=run,
            name="x",
            schema={"outcome": {"labels": [{"value": "ok", "keys": ["s"]}]}},
        )
    with pytest.raises(AnnotationRejected, match="A and B"):
        schema_validate({"pair": {"labels": [{"value": "left"}, {"value": "right"}]}})
    run.status = "running"
    run.save()
    with pytest.raises(AnnotationRejected, match="not finished"):
        queue_create(run=run, name="x")


def test_default_schemas_pass_their_own_validation():
    assert schema_validate(DEFAULT_SCHEMA) == DEFAULT_SCHEMA


def test_custom_labels_and_rubric_are_used(run, alice):
    queue = queue_create(
        run=run,
        name="custom",
        kinds=["outcome"],
        k=1,
        schema={
            "outcome": {
                "rubric": "Did the account end up locked?",
                "labels": [
                    {"value": "success", "text": "Locked", "keys": ["1"]},
                    {"value": "failure", "text": "Not locked", "keys": ["2"]},
                ],
            }
        },
    )
    schema = schema_for(queue, "outcome")
    assert schema["rubric"] == "Did the account end up locked?"
    assert schema["question"] == DEFAULT_SCHEMA["outcome"]["question"]
    item = item_claim(queue=queue, user=alice)
    with pytest.raises(AnnotationRejected, match="choose one of"):
        verdict_submit(item_id=item.pk, user=alice, label="unclear")


# --- assignment --------------------------------------------------------------------------


def test_k_annotators_per_item(run, alice, bob, carol):
    queue = queue_create(run=run, name="k2", kinds=["pair"], k=2)
    first = answer(queue, alice, "A").item
    # Bob is offered the item that already has a verdict, so items complete early
    bobs = item_claim(queue=queue, user=bob)
    assert bobs.pk == first.pk
    verdict_submit(item_id=bobs.pk, user=bob, label="B")
    first.refresh_from_db()
    assert first.verdicts_count == 2 and first.status in ("done", "disagree")
    # with k verdicts the item is offered to nobody else
    carols = item_claim(queue=queue, user=carol)
    assert carols.pk != first.pk


def test_an_annotator_never_gets_the_same_item_twice(run, alice):
    queue = queue_create(run=run, name="once", kinds=["pair"], k=3)
    seen = []
    while (item := item_claim(queue=queue, user=alice)) is not None:
        seen.append(item.pk)
        skip = len(seen) == 2
        verdict_submit(item_id=item.pk, user=alice, label="tie", skipped=skip)
    assert len(seen) == len(set(seen)) == 3
    assert Verdict.objects.filter(item__queue=queue, annotator=alice, skipped=True).count() == 1
    with pytest.raises(AnnotationRejected):
        verdict_submit(item_id=seen[0], user=alice, label="tie")


def test_two_annotators_asking_in_turn_get_different_items(run, alice, bob):
    queue = queue_create(run=run, name="turns", kinds=["pair"], k=2)
    a = item_claim(queue=queue, user=alice)
    b = item_claim(queue=queue, user=bob)
    assert a.pk != b.pk
    # a reload gives each their own claim back
    assert item_claim(queue=queue, user=alice).pk == a.pk
    with pytest.raises(AnnotationRejected, match="not assigned"):
        verdict_submit(item_id=a.pk, user=bob, label="A")


@pytest.mark.django_db(transaction=True)
def test_two_claims_at_once_get_different_items(project, alice, bob):
    if connection.vendor != "postgresql":
        pytest.skip("row locks need PostgreSQL")
    run = make_run(project, examples=False, policies=["twincheck"])
    queue = queue_create(run=run, name="race", kinds=["pair"], k=2)
    barrier = threading.Barrier(2)
    got: dict[str, int | None] = {}

    def claim(user) -> None:  # type: ignore[no-untyped-def]
        from django.db import connection as conn

        try:
            barrier.wait()
            item = item_claim(queue=queue, user=user)
            got[user.username] = item.pk if item else None
        finally:
            conn.close()

    for _ in range(3):  # several rounds: each starts with every claim released
        got.clear()
        AnnotationItem.objects.filter(queue=queue).update(claimed_by=None, lease_until=None)
        threads = [threading.Thread(target=claim, args=(u,)) for u in (alice, bob)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert got["alice"] and got["bob"] and got["alice"] != got["bob"], got
    held = AnnotationItem.objects.filter(queue=queue, claimed_by__isnull=False)
    assert held.count() == 2


def test_an_expired_lease_frees_the_item(run, alice, bob):
    queue = queue_create(
        run=run,
        name="lease",
        kinds=["pair"],
        k=2,
        lease_seconds=60,
        source="filter",
        result_filter={"policy": "twincheck", "transition": "unknown"},
    )
    AnnotationItem.objects.filter(queue=queue).exclude(
        pk=queue.items.order_by("id").first().pk
    ).delete()
    now = timezone.now()
    held = item_claim(queue=queue, user=alice, now=now)
    assert item_claim(queue=queue, user=bob, now=now + timedelta(seconds=59)) is None
    taken = item_claim(queue=queue, user=bob, now=now + timedelta(seconds=61))
    assert taken is not None and taken.pk == held.pk
    with pytest.raises(AnnotationRejected, match="not assigned"):
        verdict_submit(item_id=held.pk, user=alice, label="A")
    verdict_submit(item_id=taken.pk, user=bob, label="A")


# --- blind pairs -------------------------------------------------------------------------


def test_pair_verdict_is_deblinded_and_logs_the_order_shown(run, alice):
    queue = queue_create(run=run, name="blind", kinds=["pair"], k=1)
    orders = set()
    while (item := item_claim(queue=queue, user=alice)) is not None:
        order = list(item.claim_order)
        assert sorted(order) == ["actor", "twin"]
        show = item_display(item)
        twin_text = "The requested operation is complete."
        assert (show["a"]["body"] == twin_text) == (order[0] == "twin")
        assert "order" not in show and "actor" not in show
        v = verdict_submit(item_id=item.pk, user=alice, label="A", fatal=True)
        assert v.label == order[0] and v.shown_label == "A" and v.display_order == order
        assert v.fatal is True
        orders.add(tuple(order))
    assert orders  # random per item and annotator; both occur over many of them (below)
    seen = {tuple(blind_order(item_id=i, user_id=u)) for i in range(40) for u in range(5)}
    assert seen == {("actor", "twin"), ("twin", "actor")}


def test_pair_order_is_stable_per_item_and_annotator(run, alice, bob):
    """The same annotator sees the same A and B for an item after a release and a new claim;
    another annotator, after the first verdict, sees the other order."""
    queue = queue_create(run=run, name="stable", kinds=["pair"], k=2)
    first = item_claim(queue=queue, user=bob)
    assert first is not None
    order = list(first.claim_order)
    assert order == blind_order(item_id=first.pk, user_id=bob.pk)
    item_release(item=first, user=bob)
    again = item_claim(queue=queue, user=bob)
    assert again is not None and again.pk == first.pk and list(again.claim_order) == order
    verdict_submit(item_id=again.pk, user=bob, label="A")
    other = item_claim(queue=queue, user=alice)
    assert other is not None and other.pk == first.pk and list(other.claim_order) == order[::-1]


# --- agreement ---------------------------------------------------------------------------


def test_kappa_and_alpha_match_hand_computation():
    # alice: y y n n ; bob: y n n n
    units = {
        1: {"a": "y", "b": "y"},
        2: {"a": "y", "b": "n"},
        3: {"a": "n", "b": "n"},
        4: {"a": "n", "b": "n"},
    }
    out = agreement(units)
    # κ: p_o = 3/4, p_e = .5·.25 + .5·.75 = .5 → (.75 − .5)/(1 − .5) = 0.5
    assert out["kappa"] == pytest.approx(0.5)
    # α: coincidences o_yy = 2, o_yn = o_ny = 1, o_nn = 4; n_y = 3, n_n = 5, n = 8;
    # D_o = 2, D_e = 2·3·5/7 = 30/7 → α = 1 − 14/30 = 8/15
    assert out["alpha"] == pytest.approx(8 / 15, abs=1e-4)
    # a third annotator who labelled only item 1 (missing data elsewhere): o_yy = 3 from
    # unit 1's three pairs → n_y = 4, n_n = 5, n = 9; D_e = 2·4·5/8 = 5 → α = 1 − 2/5 = 0.6
    units[1]["c"] = "y"
    out = agreement(units)
    assert out["alpha"] == pytest.approx(0.6)
    assert out["kappa"] is None  # three annotators: κ per pair instead
    assert {(p["a"], p["b"]): p["kappa"] for p in out["pairs"]}[("a", "b")] == pytest.approx(0.5)
    # per label (one vs rest) on two labels equals the overall value
    assert {lab["label"]: lab["alpha"] for lab in out["labels"]}["y"] == pytest.approx(0.6)


def test_queue_agreement_from_verdicts(run, alice, bob):
    queue = queue_create(
        run=run,
        name="agree",
        kinds=["outcome"],
        k=2,
        source="filter",
        result_filter={"policy": "twincheck", "transition": "unknown"},
    )
    items = list(queue.items.order_by("id"))
    assert len(items) == 4  # three lock traces and the retail example
    labels = {
        alice: ["success", "success", "failure", "failure"],
        bob: ["success", "failure", "failure", "failure"],
    }
    for user, labs in labels.items():
        for it, lab in zip(items, labs, strict=True):
            AnnotationItem.objects.filter(pk=it.pk).update(claimed_by=user)
            verdict_submit(item_id=it.pk, user=user, label=lab)
    out = queue_agreement(queue)
    kind = out["kinds"][0]
    assert kind["kind"] == "outcome"
    assert kind["kappa"] == pytest.approx(0.5)
    assert kind["alpha"] == pytest.approx(8 / 15, abs=1e-4)
    assert out["overall"]["alpha"] == pytest.approx(8 / 15, abs=1e-4)
    assert [i.pk for i in queue_disagreements(queue)] == [items[1].pk]
    progress = queue_progress(queue, alice)
    assert progress == {
        "items": 4,
        "open": 0,
        "disagree": 1,
        "done": 3,
        "verdicts": 8,
        "needed": 8,
        "percent": 100,
        "mine": 4,
    }


# --- flow-back, undo, adjudication ---------------------------------------------------------


def lock_outcome_queue(run, k=2):  # type: ignore[no-untyped-def]
    queue = queue_create(
        run=run,
        name="outcomes",
        kinds=["outcome"],
        k=k,
        source="filter",
        result_filter={"policy": "twincheck", "category": "accounts"},
    )
    assert queue.items.count() == 3
    return queue


def test_agreed_outcome_flows_back_into_transition_and_summary(run, alice, bob):
    before = run.summary["twincheck"]["overall"]["transitions"]
    queue = lock_outcome_queue(run)
    a = answer(queue, alice, "success")
    item = a.item
    result = AuditResult.objects.get(pk=item.result_id)
    assert result.transition == "unknown"  # one verdict of two: nothing flows yet
    b = answer(queue, bob, "success")
    assert b.item_id == item.pk
    result.refresh_from_db()
    assert (result.actor_success, result.guarded_success, result.transition) == (
        False,
        True,
        "rescue",
    )
    override = ResultOverride.objects.get(result=result)
    assert override.machine_transition == "unknown"
    assert override.machine_guarded_success is None
    assert override.human_guarded_success is True and override.source == "agreement"
    run.refresh_from_db()
    after = run.summary["twincheck"]["overall"]["transitions"]
    assert after["rescue"] == before["rescue"] + 1
    assert after["unknown"] == before["unknown"] - 1

    # Bob takes his verdict back: the item reopens and the machine values return
    verdict_undo(verdict_id=b.pk, user=bob)
    result.refresh_from_db()
    assert (result.guarded_success, result.transition) == (None, "unknown")
    assert not ResultOverride.objects.filter(result=result).exists()
    run.refresh_from_db()
    assert run.summary["twincheck"]["overall"]["transitions"] == before
    item.refresh_from_db()
    assert item.status == "open" and item.claimed_by_id == bob.pk
    # and he answers again, differently: a disagreement the owner settles
    verdict_submit(item_id=item.pk, user=bob, label="failure")
    item.refresh_from_db()
    assert item.status == "disagree"
    result.refresh_from_db()
    assert result.transition == "unknown"
    item_adjudicate(item_id=item.pk, user=alice, label="failure")
    result.refresh_from_db()
    assert (result.guarded_success, result.transition) == (False, "same")
    assert ResultOverride.objects.get(result=result).source == "adjudication"
    run.refresh_from_db()
    assert run.summary["twincheck"]["overall"]["transitions"]["same"] == before["same"] + 1
    with pytest.raises(AnnotationRejected, match="adjudicated"):
        verdict_undo(verdict_id=a.pk, user=alice)


def test_unclear_verdict_leaves_the_transition_unknown(run, alice):
    queue = lock_outcome_queue(run, k=1)
    v = answer(queue, alice, "unclear")
    v.item.refresh_from_db()
    assert v.item.status == "done" and v.item.final_label == "unclear"
    assert AuditResult.objects.get(pk=v.item.result_id).transition == "unknown"


def test_adjudication_accepts_canonical_labels_only(run, alice, bob):
    queue = queue_create(run=run, name="pairs", kinds=["pair"], k=1)
    item = queue.items.first()
    with pytest.raises(AnnotationRejected):
        item_adjudicate(item_id=item.pk, user=alice, label="A")
    item_adjudicate(item_id=item.pk, user=alice, label="twin")
    item.refresh_from_db()
    assert (item.status, item.final_label, item.final_source) == ("done", "twin", "adjudication")


def test_changing_k_settles_items_again(run, alice, bob):
    queue = lock_outcome_queue(run, k=1)
    v = answer(queue, alice, "success")
    result = AuditResult.objects.get(pk=v.item.result_id)
    result.refresh_from_db()
    assert result.transition == "rescue"
    queue_update(queue=queue, k=2, schema={})
    v.item.refresh_from_db()
    result.refresh_from_db()
    assert v.item.status == "open" and result.transition == "unknown"
    answer(queue, bob, "success")
    result.refresh_from_db()
    assert result.transition == "rescue"
    with pytest.raises(AnnotationRejected):
        queue_update(queue=queue, k=0, schema={})
