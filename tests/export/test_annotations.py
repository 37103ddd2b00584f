"""Annotations travel with the export: items, each annotator's verdict, and the human override
of an outcome (with the machine's values kept)."""

from __future__ import annotations

import json

import orjson
import pytest
from django.core.files.storage import default_storage

from auditor.annotation.services import item_claim, queue_create, verdict_submit
from auditor.exports.selectors import export_open
from auditor.exports.services import export_build, export_create
from auditor.models import AnnotationItem, AuditResult

pytestmark = pytest.mark.django_db


def test_verdicts_and_overrides_are_exported(audited, alice, bob):
    import pyarrow.parquet as pq

    project, run = audited
    # A truncated continuation whose guarded outcome only a human can tell (SPEC §4).
    unknown = AuditResult.objects.filter(run=run, policy="checklist").order_by("id").first()
    AuditResult.objects.filter(pk=unknown.pk).update(
        transition="unknown", guarded_success=None, continuation="truncated"
    )
    queue = queue_create(run=run, name="outcomes", kinds=["outcome"], k=2, user=alice)
    first = AnnotationItem.objects.filter(queue=queue).order_by("id").first()
    assert first is not None, "the run has unknown outcomes to annotate"
    for user in (alice, bob):
        item = item_claim(queue=queue, user=user)
        assert item is not None and item.pk == first.pk
        verdict_submit(item_id=item.pk, user=user, label="success", comment="<b>ok</b>")
    first.refresh_from_db()
    assert first.status == "done" and first.final_label == "success"
    result = AuditResult.objects.get(pk=first.result_id)

    jsonl = export_create(project=project, format="jsonl", enqueue=False)
    jsonl = export_build(export_id=jsonl.pk, chunk_size=20)
    assert jsonl is not None and jsonl.manifest["annotations_included"] is True
    with export_open(jsonl) as fh:
        lines = [orjson.loads(x) for x in fh.read().splitlines()]
    line = next(x for x in lines if x["trace"]["pk"] == result.trace_id)
    (ann,) = [a for a in line["annotations"] if a["item"] == first.pk]
    assert ann["run"] == run.pk and ann["policy"] == result.policy
    assert ann["kind"] == "outcome" and ann["final_label"] == "success"
    assert sorted(v["annotator"] for v in ann["verdicts"]) == sorted([alice.pk, bob.pk])
    assert {v["comment"] for v in ann["verdicts"]} == {"<b>ok</b>"}
    decision = next(d for d in line["decisions"] if d["policy"] == result.policy)
    assert decision["override"]["human_guarded_success"] is True
    assert decision["override"]["machine_transition"] == "unknown"
    assert decision["transition"] == result.transition != "unknown"
    assert (
        jsonl.manifest["counts"]["annotations"]
        == AnnotationItem.objects.filter(queue=queue).count()
    )

    parquet = export_create(project=project, format="parquet", enqueue=False)
    parquet = export_build(export_id=parquet.pk, chunk_size=20)
    table = pq.read_table(default_storage.path(parquet.file.name)).to_pylist()
    row = next(
        r for r in table if r["trace_pk"] == result.trace_id and r["policy"] == result.policy
    )
    items = json.loads(row["annotations"])
    assert [i["final_label"] for i in items] == ["success"]
    assert row["machine_transition"] == "unknown" and row["guarded_success"] is True
