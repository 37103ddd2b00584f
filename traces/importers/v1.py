"""Native v1 JSONL (SPEC §3) read through the importer interface.

Only parses: one JSON object per line, each yielded as is. Full validation (required fields,
types, limits) is `traces/validate.py`'s job; here a line that is not JSON, not an object, or
lacks a string `trace_id` / `type` is an error, since nothing downstream could group it.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import BinaryIO

from ._common import head_lines, iter_jsonl, type_name
from .base import ImportReport, SourceEvent


class V1Importer:
    name = "v1"
    label = "Trace Auditor v1 JSONL"

    def sniff(self, head: bytes, filename: str) -> bool:
        records = head_lines(head, 2)
        return bool(records) and all(
            isinstance(r, dict)
            and isinstance(r.get("trace_id"), str)
            and isinstance(r.get("type"), str)
            for r in records
        )

    def convert(self, stream: BinaryIO, report: ImportReport) -> Iterator[SourceEvent]:
        for line, obj in iter_jsonl(stream, report):
            if not isinstance(obj, dict):
                report.error(
                    line=line,
                    trace_id=None,
                    path="$",
                    message=f"expected an event object, found {type_name(obj)}",
                )
                continue
            trace_id = obj.get("trace_id")
            if not isinstance(trace_id, str) or not trace_id:
                report.error(
                    line=line,
                    trace_id=None,
                    path="$.trace_id",
                    message=f"expected a non-empty string, found {type_name(trace_id)}",
                )
                continue
            if not isinstance(obj.get("type"), str):
                report.error(
                    line=line,
                    trace_id=trace_id,
                    path="$.type",
                    message=f"expected an event type string, found {type_name(obj.get('type'))}",
                )
                continue
            yield SourceEvent(line, obj)
