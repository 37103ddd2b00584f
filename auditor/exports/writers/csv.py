"""CSV: one row per decision, the decision columns then `record.<key>` for the top-level keys of
the decision records (at most MAX_FLAT_COLUMNS). UTF-8, RFC 4180 quoting; booleans are written
`true`/`false`, the trace's `started_at` as ISO 8601 and null (also a trace total the source did
not give) as an empty cell; `tags`, `comments`, `record` and `annotations` are
JSON."""

from __future__ import annotations

import csv

from auditor.exports.rows import DECISION_COLUMNS, csv_cell, scalar
from auditor.exports.snapshot import Snapshot

MAX_FLAT_COLUMNS = 64


def write(snapshot: Snapshot, path: str) -> dict:
    flat = snapshot.record_keys(MAX_FLAT_COLUMNS)
    snapshot.columns = [*DECISION_COLUMNS, *(f"record.{k}" for k in flat)]
    n = n_ann = 0
    with open(path, "w", newline="", encoding="utf-8") as out:
        writer = csv.writer(out)
        writer.writerow(snapshot.columns)
        for rows in snapshot.rows():
            for row in rows:
                record = row["_record"]
                cells = [csv_cell(row[c]) for c in DECISION_COLUMNS]
                cells += [
                    csv_cell(scalar(record.get(k))) if isinstance(record, dict) else ""
                    for k in flat
                ]
                writer.writerow(cells)
                n_ann += row["_n_annotations"]
            n += len(rows)
    return snapshot.row_counts(n, n_ann)
