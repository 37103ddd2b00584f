"""A trace's duration, tokens and cost travel in every export format — JSONL in the trace
header, CSV and Parquet on each decision row — with null (an empty cell) where the source gave
none, never 0; a re-imported JSONL export gets the same totals back from its events."""

from __future__ import annotations

import csv
import io
from datetime import UTC, datetime

import orjson
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from auditor.exports.selectors import export_open
from auditor.exports.services import export_build, export_create
from auditor.runs.services import audit_run_create, audit_run_start
from tests.builders.v1 import jsonl, simple_trace
from traces.models import Project, Trace
from traces.services import upload_create, upload_process
from traces.totals import COLUMNS

pytestmark = pytest.mark.django_db

START = datetime(2026, 1, 1, 10, 0, tzinfo=UTC)
# The timed trace's totals as traces.totals defines them: the span from the header's `ts` to the
# last end (10:00:04 + 1 s), the summed usage (120 + 190 total tokens) and the summed cost.
TIMED = {
    "started_at": START,
    "duration_ms": 5000.0,
    "input_tokens": 250,
    "output_tokens": 50,
    "total_tokens": 310,
    "cost_usd": pytest.approx(0.0065),
}
# Usage only: no time and no cost anywhere in the trace.
TOKENS_ONLY = {
    "started_at": None,
    "duration_ms": None,
    "input_tokens": 7,
    "output_tokens": 3,
    "total_tokens": 10,
    "cost_usd": None,
}
UNKNOWN = dict.fromkeys(COLUMNS)


def timed_events() -> list[dict]:
    """v1 with its optional timing fields (SPEC §3): `ts`, `duration_ms`, `usage`, `cost_usd`."""
    header, user, call, result, answer = simple_trace("timed", n_calls=1)
    header["ts"] = "2026-01-01T10:00:00Z"
    call.update(
        ts="2026-01-01T10:00:01Z",
        duration_ms=1500,
        usage={"input_tokens": 100, "output_tokens": 20},
        cost_usd=0.0025,
    )
    answer.update(
        ts="2026-01-01T10:00:04Z",
        duration_ms=1000,
        usage={"input_tokens": 150, "output_tokens": 30, "total_tokens": 190},
        cost_usd=0.004,
    )
    return [header, user, call, result, answer]


def tokens_only_events() -> list[dict]:
    events = simple_trace("tokens", n_calls=1)
    events[-1]["usage"] = {"input_tokens": 7, "output_tokens": 3}
    return events


def upload(project: Project, data: bytes, name: str, **kwargs):  # type: ignore[no-untyped-def]
    up, _ = upload_create(
        project=project, fileobj=data, filename=name, source="cli", enqueue=False, **kwargs
    )
    up = upload_process(upload_id=up.pk)
    assert up is not None and up.status == "done", up and up.errors[:3]
    return up


@pytest.fixture
def timed(project):  # type: ignore[no-untyped-def]
    events = timed_events() + tokens_only_events() + simple_trace("plain")
    upload(project, jsonl(events), "timed.jsonl")
    stored = {t.external_id: t for t in Trace.objects.filter(project=project)}
    assert {k: getattr(stored["timed"], k) for k in COLUMNS} == TIMED
    assert {k: getattr(stored["tokens"], k) for k in COLUMNS} == TOKENS_ONLY
    assert {k: getattr(stored["plain"], k) for k in COLUMNS} == UNKNOWN
    run = audit_run_create(project=project, environment="none", enqueue=False)
    audit_run_start(run_id=run.pk, inline=True)
    return project, run


def build(project: Project, fmt: str) -> bytes:
    export = export_create(project=project, format=fmt, enqueue=False)
    built = export_build(export_id=export.pk)
    assert built is not None and built.status == "done", built and built.error
    with export_open(built) as fh:
        return fh.read()


def headers(data: bytes) -> dict[str, dict]:
    return {x["trace"]["trace_id"]: x["trace"] for x in map(orjson.loads, data.splitlines())}


def totals_of(header: dict) -> dict:
    out = {k: header[k] for k in COLUMNS}
    if out["started_at"] is not None:
        out["started_at"] = datetime.fromisoformat(out["started_at"])
    return out


def test_jsonl_trace_headers_carry_the_totals_null_where_unknown(timed):
    project, _run = timed
    by_id = headers(build(project, "jsonl"))
    assert by_id["timed"]["started_at"] == "2026-01-01T10:00:00+00:00"
    assert totals_of(by_id["timed"]) == TIMED
    assert totals_of(by_id["tokens"]) == TOKENS_ONLY
    # The keys are there, null: a reader tells "unknown" from "none spent".
    assert totals_of(by_id["plain"]) == UNKNOWN


def test_csv_rows_carry_the_totals_empty_where_unknown(timed):
    project, run = timed
    rows = list(csv.DictReader(io.StringIO(build(project, "csv").decode(), newline="")))
    assert {r["trace_id"] for r in rows} == {"timed", "tokens", "plain"}
    assert len(rows) == 3 * len(run.policies)
    header = list(rows[0])
    assert header[header.index("task_id") + 1 : header.index("tags")] == list(COLUMNS)
    for row in rows:
        cells = {k: row[k] for k in COLUMNS}
        if row["trace_id"] == "timed":
            assert datetime.fromisoformat(cells.pop("started_at")) == START
            assert {k: float(v) for k, v in cells.items()} == {
                k: TIMED[k] for k in COLUMNS if k != "started_at"
            }
            assert cells["input_tokens"] == "250" and cells["total_tokens"] == "310"
        elif row["trace_id"] == "tokens":
            assert cells == {
                **dict.fromkeys(COLUMNS, ""),
                "input_tokens": "7",
                "output_tokens": "3",
                "total_tokens": "10",
            }
        else:
            assert cells == dict.fromkeys(COLUMNS, "")


def test_parquet_types_the_totals_and_leaves_unknown_null(timed):
    project, run = timed
    table = pq.read_table(io.BytesIO(build(project, "parquet")))
    assert table.schema.field("started_at").type == pa.timestamp("us", tz="UTC")
    assert table.schema.field("duration_ms").type == pa.float64()
    assert table.schema.field("cost_usd").type == pa.float64()
    for name in ("input_tokens", "output_tokens", "total_tokens"):
        assert table.schema.field(name).type == pa.int64()
    rows = table.to_pylist()
    assert len(rows) == 3 * len(run.policies)
    expected = {"timed": TIMED, "tokens": TOKENS_ONLY, "plain": UNKNOWN}
    for row in rows:
        assert {k: row[k] for k in COLUMNS} == expected[row["trace_id"]]


def test_reimported_export_gets_its_totals_from_the_events(timed):
    """The ta_export importer reads no totals from the line's header: ingest sums the events, which
    carry their timing fields byte for byte, so the re-imported traces have the same totals, and
    a header whose totals were edited (or are nonsense) changes nothing and rejects nothing."""
    project, _run = timed
    data = build(project, "jsonl")
    lines = [orjson.loads(x) for x in data.splitlines()]
    for line in lines:
        if line["trace"]["trace_id"] == "plain":
            line["trace"].update(cost_usd=-1, duration_ms="soon", total_tokens=0)
        if line["trace"]["trace_id"] == "timed":
            line["trace"].update(cost_usd=99.0, started_at="not a time")
    edited = b"".join(orjson.dumps(x) + b"\n" for x in lines)
    fresh = Project.objects.create(name="fresh")
    up = upload(fresh, edited, "again.jsonl", with_annotations=True)
    assert up.format_detected == "ta_export" and up.traces_accepted == 3
    assert not up.errors and not up.report["annotations_import"]["errors"]
    again = {t.external_id: t for t in Trace.objects.filter(project=fresh)}
    assert {k: getattr(again["timed"], k) for k in COLUMNS} == TIMED
    assert {k: getattr(again["tokens"], k) for k in COLUMNS} == TOKENS_ONLY
    assert {k: getattr(again["plain"], k) for k in COLUMNS} == UNKNOWN
    # Exported again, the headers' totals are the source's (the edits are gone).
    first, second = headers(data), headers(build(fresh, "jsonl"))
    for tid, head in first.items():
        assert totals_of(second[tid]) == totals_of(head)
