"""JSONL: one line per trace — `{"trace": header, "events": [v1 events as uploaded],
"decisions": [...], "annotations": [...], "tags": [...], "comments": [...]}`. The events
re-ingest as they are."""

from __future__ import annotations

from collections import defaultdict

import orjson

from auditor.annotation.selectors import result_annotations
from auditor.exports.rows import decision_entry, trace_header
from auditor.exports.snapshot import Snapshot
from auditor.trace_notes import selectors as note_selectors
from traces.selectors import load_events

COLUMNS = ["trace", "events", "decisions", "annotations", "tags", "comments"]


def write(snapshot: Snapshot, path: str) -> dict:
    snapshot.columns = list(COLUMNS)
    n_traces = n_events = n_decisions = n_annotations = 0
    with open(path, "wb") as out:
        for part in snapshot.trace_chunks():
            ids = [t["id"] for t in part]
            events = load_events(ids)
            decisions: dict[int, list[dict]] = defaultdict(list)
            rows = snapshot.decisions_of(ids)
            notes = result_annotations([r["id"] for r in rows])
            tags = note_selectors.tags_of(ids)
            comments = note_selectors.comments_by_trace(ids)
            for r in rows:
                decisions[r["trace_id"]].append(decision_entry(r, notes.get(r["id"])))
            for t in part:
                ds = decisions.get(t["id"], [])
                anns = [
                    {"run": d["run"], "policy": d["policy"], **a}
                    for d in ds
                    for a in d.pop("annotations")
                ]
                line = {
                    "trace": trace_header(t),
                    "events": events[t["id"]],
                    "decisions": ds,
                    "annotations": anns,
                    "tags": tags.get(t["id"], []),
                    "comments": comments.get(t["id"], []),
                }
                out.write(orjson.dumps(line) + b"\n")
                n_traces += 1
                n_events += len(events[t["id"]])
                n_decisions += len(ds)
                n_annotations += len(anns)
            del events, decisions, rows, notes
            snapshot.heartbeat()
    return {
        "rows": n_traces,
        "traces": n_traces,
        "events": n_events,
        "decisions": n_decisions,
        "annotations": n_annotations,
    }
