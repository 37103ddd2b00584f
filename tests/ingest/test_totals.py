"""A trace's duration, tokens and cost, computed at ingest from its events' optional timing
fields (traces.totals): the header's figures win, else the events add up; the duration is the
span from the first `ts` to the last end, else the sum of `duration_ms`; a trace without any
such field keeps nulls, never 0. Also the backfill of traces stored before the columns."""

from __future__ import annotations

import io
from datetime import UTC, datetime

import pytest
from django.core.management import call_command

from tests.builders.v1 import header, jsonl
from traces.models import Event, Trace
from traces.services import upload_create, upload_process
from traces.totals import totals_of

pytestmark = pytest.mark.django_db


def _ingest(project, events: list[dict], name: str = "t.jsonl"):  # type: ignore[no-untyped-def]
    upload, _ = upload_create(
        project=project, fileobj=io.BytesIO(jsonl(events)), filename=name, source="cli",
        enqueue=False,
    )  # fmt: skip
    upload = upload_process(upload_id=upload.pk)
    assert upload.status == "done" and upload.error_count == 0, upload.errors[:3]
    return {t.external_id: t for t in Trace.objects.filter(upload=upload)}


def _msg(tid: str, **fields) -> dict:  # type: ignore[no-untyped-def]
    return {"trace_id": tid, "type": "message", "role": "assistant", "content": "ok", **fields}


def test_events_add_up_and_the_duration_spans_first_start_to_last_end(project):
    traces = _ingest(
        project,
        [
            header("a"),
            _msg("a", ts="2026-01-31T12:00:00Z", end_ts="2026-01-31T12:00:02Z",
                 usage={"input_tokens": 100, "output_tokens": 10}, cost_usd=0.25),
            {"trace_id": "a", "type": "tool_result", "status": "ok", "ts": "2026-01-31T12:00:03Z",
             "duration_ms": 500},
            _msg("a", ts="2026-01-31T13:00:04+01:00",
                 usage={"input_tokens": 200, "output_tokens": 20, "total_tokens": 225},
                 cost_usd=0.5),
        ],
    )  # fmt: skip
    t = traces["a"]
    assert t.started_at == datetime(2026, 1, 31, 12, 0, tzinfo=UTC)
    assert t.duration_ms == 4000.0  # 12:00:00 → 12:00:04 (the +01:00 time is 12:00:04Z)
    assert (t.input_tokens, t.output_tokens, t.total_tokens) == (300, 30, 335)
    assert t.cost_usd == pytest.approx(0.75)


def test_the_header_figures_win_over_the_sums(project):
    traces = _ingest(
        project,
        [
            header("h", ts="2026-01-31T12:00:00Z", duration_ms=9000, cost_usd=1.5,
                   usage={"input_tokens": 1000, "output_tokens": 100}),
            _msg("h", ts="2026-01-31T12:00:01Z", end_ts="2026-01-31T12:00:02Z",
                 usage={"input_tokens": 7, "output_tokens": 1}, cost_usd=0.01),
        ],
    )  # fmt: skip
    t = traces["h"]
    assert t.duration_ms == 9000 and t.cost_usd == 1.5
    assert (t.input_tokens, t.output_tokens, t.total_tokens) == (1000, 100, 1100)


def test_durations_are_summed_when_no_two_points_in_time_are_given(project):
    traces = _ingest(
        project,
        [header("d"), _msg("d", duration_ms=1200), _msg("d", duration_ms=300.5)],
    )
    t = traces["d"]
    assert t.duration_ms == 1500.5 and t.started_at is None
    assert t.cost_usd is None and t.total_tokens is None


def test_a_trace_without_any_figure_keeps_nulls_never_zero(project):
    t = _ingest(project, [header("n"), _msg("n")])["n"]
    assert [t.started_at, t.duration_ms, t.input_tokens, t.total_tokens, t.cost_usd] == [None] * 5


def test_a_zero_cost_is_kept_as_zero(project):
    t = _ingest(project, [header("z"), _msg("z", cost_usd=0)])["z"]
    assert t.cost_usd == 0.0


def test_figures_of_a_trace_whose_events_span_many_chunks(project, settings):
    settings.TA_INGEST_BATCH_EVENTS = 2
    events = [header("c")] + [
        _msg("c", ts=f"2026-01-31T12:00:{i:02d}Z", usage={"output_tokens": 1}, cost_usd=0.1)
        for i in range(7)
    ]
    t = _ingest(project, events)["c"]
    assert t.duration_ms == 6000 and t.output_tokens == 7 and t.total_tokens == 7
    assert t.cost_usd == pytest.approx(0.7)


def test_an_invalid_figure_rejects_its_trace_with_the_field_named(project):
    upload, _ = upload_create(
        project=project,
        fileobj=io.BytesIO(
            jsonl([header("bad"), _msg("bad", usage={"input_tokens": -5}), header("good")])
        ),
        filename="bad.jsonl",
        source="cli",
        enqueue=False,
    )
    upload = upload_process(upload_id=upload.pk)
    assert upload.traces_rejected == 1 and upload.traces_accepted == 1
    [error] = upload.errors
    assert error["path"] == "$.usage.input_tokens" and "an integer >= 0" in error["message"]


def test_totals_of_reads_events_in_any_order():
    events = [
        _msg("x", ts="2026-01-31T12:00:05Z", usage={"input_tokens": 3}),
        _msg("x", ts="2026-01-31T12:00:01Z", end_ts="2026-01-31T12:00:02Z"),
    ]
    out = totals_of(events)
    assert out["duration_ms"] == 4000 and out["input_tokens"] == 3 and out["total_tokens"] == 3


def test_the_command_recomputes_traces_stored_without_figures(project):
    traces = _ingest(
        project,
        [header("b"), _msg("b", ts="2026-01-31T12:00:00Z", end_ts="2026-01-31T12:00:03Z",
                           usage={"input_tokens": 4, "output_tokens": 2}, cost_usd=0.2),
         header("plain"), _msg("plain")],
    )  # fmt: skip
    Trace.objects.filter(pk__in=[t.pk for t in traces.values()]).update(
        duration_ms=None, total_tokens=None, input_tokens=None, output_tokens=None,
        cost_usd=None, started_at=None,
    )  # fmt: skip
    out = io.StringIO()
    call_command("trace_totals", stdout=out)
    assert "1 traces carry" in out.getvalue()
    b = Trace.objects.get(pk=traces["b"].pk)
    assert (b.duration_ms, b.total_tokens, b.cost_usd) == (3000, 6, 0.2)
    plain = Trace.objects.get(pk=traces["plain"].pk)
    assert plain.duration_ms is None and plain.cost_usd is None
    assert Event.objects.filter(trace=plain).count() == 2
