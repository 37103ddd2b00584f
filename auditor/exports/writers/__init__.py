"""One writer per export format. A writer takes the snapshot and a path, writes the file a page
at a time, sets the snapshot's columns and returns the counts for the manifest."""

from __future__ import annotations

from collections.abc import Callable

from auditor.exports.snapshot import Snapshot
from auditor.exports.writers import csv, jsonl, parquet

Writer = Callable[[Snapshot, str], dict]

WRITERS: dict[str, Writer] = {"jsonl": jsonl.write, "csv": csv.write, "parquet": parquet.write}
CONTENT_TYPES = {
    "jsonl": "application/x-ndjson",
    "csv": "text/csv; charset=utf-8",
    "parquet": "application/vnd.apache.parquet",
}
