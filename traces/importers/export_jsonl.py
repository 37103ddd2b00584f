"""This product's own JSONL export, uploaded again: a dataset moves between
instances, or into a fresh project, with its traces and events exactly as they were stored.

Export line (auditor/exports/writers/jsonl.py): `{"trace": {trace_id, agent, model, …},
"events": [v1 events as uploaded], "decisions": [...], "annotations": [...]}`. The events are
yielded unchanged — their trace ids included, so the ingest does not put a run into them
(`keeps_ids`). Decisions and verdicts are not events: they are re-created by the auditor when
the upload asks for it (`Upload.with_annotations`); here they are only counted. The header's
totals (`started_at` … `cost_usd`) are not read either: ingest computes them from the events'
timing fields, as for any upload, so they come back the same.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import BinaryIO

from ._common import head_lines, iter_jsonl, short, type_name
from .base import ImportReport, SourceEvent

# A first line longer than the detection head: `{"trace": {"trace_id": …` is how it starts.
_HEAD = re.compile(rb'^\s*\{\s*"trace"\s*:\s*\{\s*"trace_id"\s*:')


class ExportImporter:
    name = "ta_export"
    label = "Trace Auditor JSONL export (re-import)"
    keeps_ids = True

    def sniff(self, head: bytes, filename: str) -> bool:
        records = head_lines(head, 1)
        if records:
            rec = records[0]
            return (
                isinstance(rec, dict)
                and isinstance(rec.get("trace"), dict)
                and isinstance(rec.get("events"), list)
            )
        return _HEAD.match(head) is not None

    def convert(self, stream: BinaryIO, report: ImportReport) -> Iterator[SourceEvent]:
        decisions = annotations = 0
        seen: dict[str, int] = {}
        for line, rec in iter_jsonl(stream, report):
            out = _line(line, rec, report, seen)
            if out is None:
                continue
            events, n_decisions, n_annotations = out
            decisions += n_decisions
            annotations += n_annotations
            for event in events:
                yield SourceEvent(line, event)
        if decisions or annotations:
            report.note(
                f"the export holds {decisions} decisions and {annotations} annotations; they are "
                "re-created as an imported audit run only when the upload asks for it "
                "(with annotations)"
            )


def _line(
    line: int, rec: object, report: ImportReport, seen: dict[str, int]
) -> tuple[list[dict], int, int] | None:
    def fail(trace_id: str | None, path: str, message: str) -> None:
        report.error(line=line, trace_id=trace_id, path=path, message=message)

    if not isinstance(rec, dict):
        fail(None, "$", f"expected an export line object, found {type_name(rec)}")
        return None
    head = rec.get("trace")
    tid = head.get("trace_id") if isinstance(head, dict) else None
    if not isinstance(tid, str) or not tid:
        fail(None, "$.trace.trace_id", f"expected the trace id string, found {type_name(tid)}")
        return None
    if tid in seen:
        fail(
            tid,
            "$.trace.trace_id",
            f"expected each trace once, found it again (first on line {seen[tid]})",
        )
        return None
    seen[tid] = line
    events = rec.get("events")
    if not isinstance(events, list) or not events:
        fail(tid, "$.events", f"expected a non-empty array of v1 events, found {short(events, 60)}")
        return None
    for i, event in enumerate(events):
        if not isinstance(event, dict):
            fail(tid, f"$.events[{i}]", f"expected a v1 event object, found {type_name(event)}")
            return None
        if event.get("trace_id") != tid:
            fail(
                tid,
                f"$.events[{i}].trace_id",
                f"expected {tid!r} (the line's trace), found {short(event.get('trace_id'), 60)}",
            )
            return None
    counts = []
    for key in ("decisions", "annotations"):
        value = rec.get(key, [])
        if not isinstance(value, list):
            fail(tid, f"$.{key}", f"expected an array, found {type_name(value)}")
            return None
        counts.append(len(value))
    return events, counts[0], counts[1]
