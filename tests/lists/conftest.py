"""Builders of the list tests: uploads and traces made directly in the database, with the
fields the dashboard and the traces list filter and sort on."""

from __future__ import annotations

from traces.models import Event, Trace, Upload


def make_upload(project, status=Upload.Status.DONE, name="f.jsonl"):  # type: ignore[no-untyped-def]
    return Upload.objects.create(
        project=project,
        filename=name,
        size=1,
        content_hash=name,
        source="cli",
        status=status,
        failure="bad file" if status == Upload.Status.FAILED else "",
    )


def make_trace(project, upload, tid, **kw):  # type: ignore[no-untyped-def]
    t = Trace.objects.create(project=project, upload=upload, external_id=tid, **kw)
    Event.objects.create(
        trace=t, seq=0, type="trace", line=1, payload={"trace_id": tid, "type": "trace"}
    )
    return t
