"""Tags and comments travel in every export format: JSONL per trace, CSV and Parquet per
decision (JSON text columns, named as such in the Parquet metadata)."""

from __future__ import annotations

import csv
import io
import json

import orjson
import pyarrow.parquet as pq
import pytest

from auditor.exports.selectors import export_open
from auditor.exports.services import export_build, export_create
from auditor.runs.services import audit_run_create, audit_run_start
from auditor.trace_notes.services import comment_add, tag_add
from tests.builders.v1 import jsonl, simple_trace
from traces.services import upload_create, upload_process

pytestmark = pytest.mark.django_db


@pytest.fixture
def noted(project, alice):  # type: ignore[no-untyped-def]
    events = simple_trace("a") + simple_trace("b")
    up, _ = upload_create(
        project=project, fileobj=jsonl(events), filename="ab.jsonl", source="cli", enqueue=False
    )
    up = upload_process(upload_id=up.pk)
    a = up.traces.get(external_id="a")
    run = audit_run_create(project=project, environment="none", enqueue=False)
    audit_run_start(run_id=run.pk, inline=True)
    tag_add(trace=a, name="Flaky", user=alice)
    comment_add(trace=a, body='=HYPERLINK("x") <b>bold</b>', user=alice)
    return project, run


def build(project, fmt, run):  # type: ignore[no-untyped-def]
    export = export_create(project=project, format=fmt, filters={"runs": [run.pk]}, enqueue=False)
    built = export_build(export_id=export.pk)
    assert built is not None and built.status == "done", built and built.error
    with export_open(built) as fh:
        return fh.read()


def test_jsonl_lines_carry_tags_and_comments(noted):
    project, run = noted
    lines = {
        x["trace"]["trace_id"]: x
        for x in map(orjson.loads, build(project, "jsonl", run).splitlines())
    }
    assert lines["a"]["tags"] == ["Flaky"] and lines["b"]["tags"] == []
    (c,) = lines["a"]["comments"]
    assert c["author"] == "alice" and c["body"] == '=HYPERLINK("x") <b>bold</b>'
    assert lines["b"]["comments"] == []


def test_csv_and_parquet_rows_carry_them_as_json(noted):
    project, run = noted
    rows = list(csv.DictReader(io.StringIO(build(project, "csv", run).decode(), newline="")))
    assert rows and {"tags", "comments"} <= rows[0].keys()
    for row in rows:
        tags = json.loads(row["tags"])
        assert tags == (["Flaky"] if row["trace_id"] == "a" else [])
        if row["trace_id"] == "a":
            assert json.loads(row["comments"])[0]["body"].startswith("=HYPERLINK")
    table = pq.read_table(io.BytesIO(build(project, "parquet", run)))
    meta = table.schema.metadata[b"trace_auditor.json_columns"].decode().split(",")
    assert "tags" in meta and "comments" in meta
    by_trace = {}
    for r in table.to_pylist():
        by_trace.setdefault(r["trace_id"], r)
    assert json.loads(by_trace["a"]["tags"]) == ["Flaky"]
