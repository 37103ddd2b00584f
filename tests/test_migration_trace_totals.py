"""The trace-totals migration (traces.0016_trace_totals): traces stored before the duration,
tokens and cost columns existed get them from their stored events; traces whose events record
none keep nulls."""

from __future__ import annotations

import pytest

from tests.migrating import migrated_back

BEFORE = [("traces", "0015_upload_dismissed")]

pytestmark = pytest.mark.django_db(transaction=True)


def test_stored_traces_get_their_figures_from_their_events(postgres, transactional_db):  # type: ignore[no-untyped-def]
    with migrated_back(BEFORE) as migration:
        apps = migration.apps
        Project = apps.get_model("traces", "Project")
        Upload = apps.get_model("traces", "Upload")
        Trace = apps.get_model("traces", "Trace")
        Event = apps.get_model("traces", "Event")
        project = Project.objects.create(name="old")
        up = Upload.objects.create(
            project=project, file="u.jsonl", filename="u.jsonl", size=1, content_hash="h",
            source="cli", status="done",
        )  # fmt: skip

        def trace(tid: str, payloads: list[dict]) -> int:
            t = Trace.objects.create(project=project, upload=up, external_id=tid)
            for seq, p in enumerate(payloads):
                Event.objects.create(
                    trace=t, seq=seq, type=p["type"], line=seq + 1,
                    payload={"trace_id": tid, **p},
                )  # fmt: skip
            return t.pk

        timed = trace(
            "timed",
            [
                {"type": "trace", "ts": "2026-01-31T12:00:00Z"},
                {"type": "message", "role": "assistant", "ts": "2026-01-31T12:00:01Z",
                 "end_ts": "2026-01-31T12:00:05.5Z", "cost_usd": 0.125,
                 "usage": {"input_tokens": 90, "output_tokens": 10}},
            ],
        )  # fmt: skip
        plain = trace("plain", [{"type": "trace"}, {"type": "message", "role": "user"}])
        apps = migration.forward()
        Trace = apps.get_model("traces", "Trace")
        t = Trace.objects.get(pk=timed)
        assert (t.duration_ms, t.input_tokens, t.output_tokens, t.total_tokens, t.cost_usd) == (
            5500.0, 90, 10, 100, 0.125,
        )  # fmt: skip
        assert t.started_at.isoformat() == "2026-01-31T12:00:00+00:00"
        p = Trace.objects.get(pk=plain)
        assert [p.started_at, p.duration_ms, p.total_tokens, p.cost_usd] == [None] * 4
