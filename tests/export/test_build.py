"""Building snapshots in-process (the function the worker runs): formats, round trip, manifest,
immutability."""

from __future__ import annotations

import csv
import hashlib
import io
import json

import orjson
import pytest
from django.core.files.storage import default_storage

from auditor.exports.selectors import export_open
from auditor.exports.services import ExportRejected, export_build, export_create
from auditor.exports.writers import WRITERS
from auditor.exports.writers.parquet import parquet_schema
from auditor.models import AuditResult, Export
from tests.conftest import STRICT
from tests.export.conftest import SYCON_TRACES, ingest
from traces.models import Event, Project, Trace

pytestmark = pytest.mark.django_db


def build(project, fmt, filters=None, chunk_size=None) -> Export:  # type: ignore[no-untyped-def]
    export = export_create(project=project, format=fmt, filters=filters, enqueue=False)
    built = export_build(export_id=export.pk, chunk_size=chunk_size)
    assert built is not None and built.status == "done", built and built.error
    return built


def read(export: Export) -> bytes:
    with export_open(export) as fh:
        return fh.read()


def jsonl_lines(export: Export) -> list[dict]:
    return [orjson.loads(x) for x in read(export).splitlines()]


def test_jsonl_round_trip_reingests_the_same_traces_and_events(audited):
    project, run = audited
    export = build(project, "jsonl", chunk_size=37)  # several chunks
    lines = jsonl_lines(export)
    originals = Trace.objects.filter(project=project)
    assert len(lines) == originals.count() == export.rows == export.manifest["counts"]["traces"]
    # Decisions of every policy of the run are in the export, with their record.
    for line in lines:
        assert {d["policy"] for d in line["decisions"]} == set(run.policies)
        assert all(d["run"] == run.pk and isinstance(d["record"], dict) for d in line["decisions"])
    assert export.manifest["counts"]["decisions"] == AuditResult.objects.filter(run=run).count()
    # Re-ingest the v1 events into a fresh project.
    v1 = b"".join(orjson.dumps(ev) + b"\n" for line in lines for ev in line["events"])
    fresh = Project.objects.create(name="fresh")
    ingest(fresh, v1, "reimport.jsonl")

    def snapshot(p: Project) -> dict[str, list]:
        out: dict[str, list] = {}
        for ev in Event.objects.filter(trace__project=p).order_by("trace__external_id", "seq"):
            out.setdefault(ev.trace.external_id, []).append(ev.payload)
        return out

    assert snapshot(fresh) == snapshot(project)
    assert len(snapshot(project)) == SYCON_TRACES + 7  # + 3 hand-written + 4 with claim records
    header = {t.external_id: t for t in Trace.objects.filter(project=fresh)}
    for line in lines:
        t = header[line["trace"]["trace_id"]]
        assert (t.model, t.benchmark, t.category, t.outcome_success) == (
            line["trace"]["model"],
            line["trace"]["benchmark"],
            line["trace"]["category"],
            line["trace"]["outcome"]["success"],
        )
        # The header's outcome is the recorded one and says so (the audited one is per decision).
        assert line["trace"]["outcome"]["source"] == "recorded"


def test_parquet_reads_back_with_pyarrow(audited):
    import pyarrow.parquet as pq

    project, run = audited
    export = build(project, "parquet", chunk_size=100)
    n = AuditResult.objects.filter(run=run).count()
    path = default_storage.path(export.file.name)
    pf = pq.ParquetFile(path)
    assert pf.schema_arrow.remove_metadata() == parquet_schema().remove_metadata()
    assert pf.schema_arrow.metadata[b"trace_auditor.schema_version"] == b"1"
    assert pf.metadata.num_rows == n == export.rows
    # One row group per chunk of at most 100 rows.
    assert pf.metadata.num_row_groups == -(-n // 100)
    assert max(pf.metadata.row_group(i).num_rows for i in range(pf.num_row_groups)) == 100
    table = pf.read()
    by_key = {(r["trace_pk"], r["policy"]): r for r in table.to_pylist()}
    for res in AuditResult.objects.filter(run=run).select_related("trace"):
        row = by_key[(res.trace_id, res.policy)]
        assert row["run"] == run.pk and row["trace_id"] == res.trace.external_id
        assert (row["applied"], row["actor_success"], row["guarded_success"]) == (
            res.applied,
            res.actor_success,
            res.guarded_success,
        )
        assert row["transition"] == res.transition and row["continuation"] == res.continuation
        assert json.loads(row["record"]) == res.record
        assert json.loads(row["annotations"]) == []


def test_csv_reads_back_with_the_csv_module(audited):
    project, run = audited
    export = build(project, "csv", filters={"policy": "checklist"}, chunk_size=64)
    rows = list(csv.DictReader(io.StringIO(read(export).decode("utf-8"), newline="")))
    results = AuditResult.objects.filter(run=run, policy="checklist").select_related("trace")
    assert len(rows) == results.count() == export.rows
    assert rows[0].keys() >= {
        "run",
        "trace_id",
        "policy",
        "applied",
        "actor_success",
        "guarded_success",
        "transition",
        "continuation",
        "record",
    }
    flat = [c for c in rows[0] if c.startswith("record.")]
    assert flat, "key record fields are flattened into columns"
    by_trace = {r["trace_id"]: r for r in rows}
    for res in results:
        row = by_trace[res.trace.external_id]
        assert row["policy"] == "checklist" and row["transition"] == res.transition
        assert row["applied"] == ("true" if res.applied else "false")
        assert (
            row["guarded_success"] == {True: "true", False: "false", None: ""}[res.guarded_success]
        )
        # exported whole, with the settings it was decided with
        assert json.loads(row["record"]) == res.record and "settings" in res.record
        assert "record.settings" in flat
        for col in flat:
            value = res.record.get(col.removeprefix("record."))
            if isinstance(value, str):
                assert row[col] == value


def test_manifest_hash_counts_filters_and_run_settings(audited):
    project, run = audited
    export = build(project, "jsonl", filters={"transition": ["rescue", "harm"]})
    m = export.manifest
    data = read(export)
    assert m["content_hash"] == hashlib.sha256(data).hexdigest()
    assert m["hash_algorithm"] == "sha256" and m["bytes"] == len(data) == export.bytes
    assert m["schema_version"] == 1 and m["format"] == "jsonl"
    assert m["filters"] == {"runs": [run.pk], "transition": ["harm", "rescue"]}
    assert m["runs"][str(run.pk)]["settings"] == {"checklist": {"theta": 0.6}}
    assert m["runs"][str(run.pk)]["policies"] == run.policies
    assert m["runs"][str(run.pk)]["model_settings"] == {}  # no model: an offline audit
    assert m["created_at"] and m["built_at"]
    # Only traces with a rescue or harm are exported, and only those decisions.
    lines = jsonl_lines(export)
    expected = AuditResult.objects.filter(run=run, transition__in=["rescue", "harm"])
    assert len(lines) == expected.values("trace").distinct().count() > 0
    assert sum(len(x["decisions"]) for x in lines) == expected.count() == m["counts"]["decisions"]
    assert {d["transition"] for x in lines for d in x["decisions"]} <= {"rescue", "harm"}
    per_policy = m["counts"]["transitions"]
    assert sum(n for p in per_policy.values() for n in p.values()) == expected.count()


def test_trace_filters_narrow_the_export(audited):
    project, _run = audited
    export = build(project, "jsonl", filters={"benchmark": "hand", "category": ["c0"]})
    lines = jsonl_lines(export)
    assert sorted(x["trace"]["trace_id"] for x in lines) == ["hand-0", "hand-2"]


def test_a_built_export_is_immutable(audited):
    project, _run = audited
    export = build(project, "csv")
    before = (export.file.name, export.manifest["content_hash"], export.finished_at)
    # A second build (a redelivered task, a user pressing again) does nothing.
    assert export_build(export_id=export.pk) is None
    export.refresh_from_db()
    assert (export.file.name, export.manifest["content_hash"], export.finished_at) == before
    # And the model refuses to be saved over.
    export.manifest = {}
    with pytest.raises(ValueError, match="immutable"):
        export.save()
    assert Export.objects.get(pk=export.pk).manifest["content_hash"] == before[1]


def test_rejects_unknown_format_filter_and_foreign_run(audited, django_user_model):
    project, run = audited
    with pytest.raises(ExportRejected, match="format"):
        export_create(project=project, format="xlsx", enqueue=False)
    with pytest.raises(ExportRejected, match="policies"):
        export_create(project=project, format="csv", filters={"policy": "nope"}, enqueue=False)
    with pytest.raises(ExportRejected, match="unknown filters"):
        export_create(project=project, format="csv", filters={"colour": "red"}, enqueue=False)
    other = Project.objects.create(name="other")
    with pytest.raises(ExportRejected, match="no audit runs"):
        export_create(project=other, format="csv", filters={"runs": [run.pk]}, enqueue=False)


def test_a_failing_build_is_a_visible_failed_state(audited, monkeypatch):
    project, _run = audited
    export = export_create(project=project, format="parquet", enqueue=False)

    def boom(*a, **k):  # type: ignore[no-untyped-def]
        raise RuntimeError("disk on fire")

    monkeypatch.setitem(WRITERS, "parquet", boom)
    built = export_build(export_id=export.pk)
    assert built is not None and built.status == "failed" and "disk on fire" in built.error
    assert not built.file.name
    with pytest.raises(ExportRejected):
        export_open(built)


def test_an_empty_project_exports_an_empty_snapshot(project):
    export = build(project, "parquet")
    import pyarrow.parquet as pq

    assert export.rows == 0
    assert pq.read_table(default_storage.path(export.file.name)).num_rows == 0
    assert export.manifest["filters"] == {"runs": []}


def _datasets():  # type: ignore[no-untyped-def]
    try:
        import datasets
    except ImportError:
        if STRICT:
            pytest.fail("the datasets package is required in strict mode (requirements-dev.txt)")
        pytest.skip("the datasets package is not installed (requirements-dev.txt pins it)")
    return datasets


def test_files_load_with_datasets(audited, tmp_path):
    datasets = _datasets()
    project, run = audited
    n = AuditResult.objects.filter(run=run).count()
    pq_export = build(project, "parquet", chunk_size=100)
    ds = datasets.load_dataset(
        "parquet",
        data_files=default_storage.path(pq_export.file.name),
        split="train",
        cache_dir=str(tmp_path / "hf"),
    )
    assert ds.num_rows == n and "record" in ds.column_names
    assert json.loads(ds[0]["record"]) is not None
    js_export = build(project, "jsonl", filters={"benchmark": "hand"})
    ds = datasets.load_dataset(
        "json",
        data_files=default_storage.path(js_export.file.name),
        split="train",
        cache_dir=str(tmp_path / "hf"),
    )
    assert ds.num_rows == 3 and set(ds.column_names) == {
        "trace",
        "events",
        "decisions",
        "annotations",
        "tags",
        "comments",
    }


def test_the_celery_task_builds_on_the_export_queue(
    audited, monkeypatch, django_capture_on_commit_callbacks
):
    from auditor.exports.tasks import build_export

    project, _run = audited
    sent = []
    monkeypatch.setattr(build_export, "apply_async", lambda **kw: sent.append(kw))
    with django_capture_on_commit_callbacks(execute=True):
        export = export_create(project=project, format="csv")
    assert sent == [{"args": [export.pk], "queue": "export"}]
    monkeypatch.undo()
    build_export.apply(args=[export.pk]).get()
    export.refresh_from_db()
    assert export.status == "done" and export.attempts == 1
    build_export.apply(args=[export.pk]).get()  # redelivered: nothing happens
    export.refresh_from_db()
    assert export.attempts == 1


def test_a_stale_running_build_is_taken_over(audited, settings):
    from datetime import timedelta

    from django.utils import timezone

    project, _run = audited
    export = export_create(project=project, format="jsonl", enqueue=False)
    # A worker claimed it and was killed: running, silent for longer than TA_STALE_SECONDS.
    Export.objects.filter(pk=export.pk).update(
        status="running",
        attempts=1,
        heartbeat_at=timezone.now() - timedelta(seconds=settings.TA_STALE_SECONDS + 5),
    )
    built = export_build(export_id=export.pk)
    assert built is not None and built.status == "done" and built.attempts == 2
