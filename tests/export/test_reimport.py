"""Export → re-ingest into a fresh project: the JSONL export is detected on upload,
the traces come back with their events exactly, and — when the upload asks — the decisions and
the human verdicts come back as an imported audit run with its annotation items."""

from __future__ import annotations

import gzip

import orjson
import pytest

from auditor.annotation.services import item_claim, queue_create, verdict_submit
from auditor.exports.selectors import export_open
from auditor.exports.services import export_build, export_create
from auditor.models import AnnotationItem, AuditResult, AuditRun, ResultOverride, Verdict
from traces.importers import detect
from traces.models import Event, Project, Trace
from traces.services import upload_create, upload_process

pytestmark = pytest.mark.django_db


def export_lines(project: Project) -> tuple[bytes, list[dict]]:
    export = export_create(project=project, format="jsonl", enqueue=False)
    export = export_build(export_id=export.pk, chunk_size=23)
    assert export is not None and export.status == "done"
    with export_open(export) as fh:
        raw = fh.read()
    return raw, [orjson.loads(x) for x in raw.splitlines()]


def events_of(project: Project) -> dict[str, list]:
    out: dict[str, list] = {}
    for ev in Event.objects.filter(trace__project=project).order_by("trace__external_id", "seq"):
        out.setdefault(ev.trace.external_id, []).append(ev.payload)
    return out


def reingest(data: bytes, name: str, *, with_annotations: bool):  # type: ignore[no-untyped-def]
    fresh = Project.objects.create(name=f"fresh-{with_annotations}-{name}")
    upload, _ = upload_create(
        project=fresh,
        fileobj=data,
        filename=name,
        source="cli",
        enqueue=False,
        with_annotations=with_annotations,
    )
    return fresh, upload_process(upload_id=upload.pk)


def annotate(run, alice, bob):  # type: ignore[no-untyped-def]
    unknown = AuditResult.objects.filter(run=run, policy="checklist").order_by("id").first()
    AuditResult.objects.filter(pk=unknown.pk).update(
        transition="unknown", guarded_success=None, continuation="truncated"
    )
    queue = queue_create(run=run, name="outcomes", kinds=["outcome"], k=2, user=alice)
    for user, comment in ((alice, "looks fine"), (bob, "<b>ok</b>")):
        item = item_claim(queue=queue, user=user)
        verdict_submit(item_id=item.pk, user=user, label="success", comment=comment)
    assert AnnotationItem.objects.filter(queue=queue, status="done").exists()


def comparable(lines: list[dict]) -> dict[str, dict]:
    """Per trace: the decisions and annotations with the ids of the instance taken out
    (run, item, queue, annotator ids differ between instances; who agreed with whom does not)."""
    out = {}
    for line in lines:
        decisions = sorted(
            ({k: v for k, v in d.items() if k != "run"} for d in line["decisions"]),
            key=lambda d: d["policy"],
        )
        annotations = []
        for a in line["annotations"]:
            verdicts = sorted(
                (
                    {k: v for k, v in x.items() if k not in ("annotator", "created_at")}
                    for x in a["verdicts"]
                ),
                key=lambda v: v["comment"],
            )
            annotators = len({x["annotator"] for x in a["verdicts"]})
            rest = {k: v for k, v in a.items() if k not in ("run", "item", "queue", "verdicts")}
            annotations.append({**rest, "verdicts": verdicts, "annotators": annotators})
        out[line["trace"]["trace_id"]] = {
            "trace": {k: v for k, v in line["trace"].items() if k != "pk"},
            "decisions": decisions,
            "annotations": annotations,
        }
    return out


def test_export_round_trip_into_a_fresh_project_keeps_traces_events_decisions_verdicts(
    audited, alice, bob
):
    project, run = audited
    annotate(run, alice, bob)
    raw, lines = export_lines(project)
    assert detect(raw[:65536], "export.jsonl") == "ta_export"
    assert sum(len(x["annotations"]) for x in lines) >= 1

    fresh, upload = reingest(gzip.compress(raw), "export.jsonl.gz", with_annotations=True)
    assert upload.status == "done" and upload.format_detected == "ta_export"
    assert (upload.traces_accepted, upload.traces_rejected) == (len(lines), 0), upload.errors[:3]
    assert events_of(fresh) == events_of(project)  # the events exactly, ids as they were
    counts = upload.report["annotations_import"]
    assert counts["errors"] == [] and counts["runs"] == 1
    assert counts["decisions"] == AuditResult.objects.filter(run=run).count()

    imported = AuditRun.objects.get(project=fresh)
    assert imported.settings["imported"]["source_run"] == run.pk
    # The export lines do not carry the run's policy order: the policies, in the order first seen.
    assert sorted(imported.policies) == sorted(run.policies) and imported.status == "done"
    assert imported.summary.keys() == run.summary.keys()
    assert ResultOverride.objects.filter(result__run=imported).count() == 1
    annotators = set(
        Verdict.objects.filter(item__queue__run=imported).values_list("annotator", flat=True)
    )
    assert len(annotators) == 2 and alice.pk not in annotators and bob.pk not in annotators

    _, again = export_lines(fresh)
    assert comparable(again) == comparable(lines)


def test_without_the_option_only_traces_and_events_come_back(audited, alice, bob):
    project, run = audited
    annotate(run, alice, bob)
    raw, lines = export_lines(project)
    fresh, upload = reingest(raw, "export.jsonl", with_annotations=False)
    assert upload.traces_accepted == len(lines) and events_of(fresh) == events_of(project)
    assert not AuditRun.objects.filter(project=fresh).exists()
    assert "re-created as an imported audit run only when" in upload.report["notes"][0]


def test_reimport_into_the_same_project_rejects_every_trace_as_already_stored(audited):
    project, _run = audited
    raw, lines = export_lines(project)
    upload, _ = upload_create(
        project=project, fileobj=raw, filename="e.jsonl", source="cli", enqueue=False
    )
    upload = upload_process(upload_id=upload.pk)
    assert upload.traces_accepted == 0 and upload.traces_rejected == len(lines)
    assert "already stored in this project" in upload.errors[0]["message"]
    assert Trace.objects.filter(project=project).count() == len(lines)


def test_bad_decisions_are_reported_with_line_and_path_and_the_traces_stay(audited):
    project, _run = audited
    _raw, lines = export_lines(project)
    lines[0]["decisions"][0]["transition"] = "sideways"
    lines[1]["decisions"][0]["record"] = "not a record"
    lines[2]["events"][0]["trace_id"] = "someone-else"
    data = b"".join(orjson.dumps(x) + b"\n" for x in lines)
    fresh, upload = reingest(data, "export.jsonl", with_annotations=True)
    assert upload.traces_rejected == 1 and upload.traces_accepted == len(lines) - 1
    [err] = upload.errors
    assert (err["line"], err["path"]) == (3, "$.events[0].trace_id")
    errors = upload.report["annotations_import"]["errors"]
    assert {(e["line"], e["path"]) for e in errors} == {
        (1, "$.decisions[0].transition"),
        (2, "$.decisions[0].record"),
    }
    assert "expected one of" in errors[0]["message"] or "expected one of" in errors[1]["message"]
