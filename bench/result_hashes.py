#!/usr/bin/env python
"""Hashes of everything an audit stores, to compare two versions of the code on the same data.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/DB .venv/bin/python bench/result_hashes.py

Ingests, into a new project, the real files of ../shared/data (as tests/ingest/test_shared_data.py
imports them) and the BFCL samples (`traces.samples.bfcl`, the demo's, seed 0), audits them
inline with all four policies and prints a SHA-256 of each of:

- ``results``: every decision read back whole (its record, its guarded trajectory rebuilt from
  the stored suffix), keyed by (upload file, trace external id, policy);
- ``items``: each trace's item status and error;
- ``calibrations``: the run's VRR calibrations;
- ``summary``: the run summary;
- ``export.jsonl`` / ``export.csv``: a JSONL and a CSV export of the project, rows in order;

then one hash of all. Ids, timestamps and timings are left out (they differ between databases),
and JSON is hashed with sorted keys, so two runs of the same code print the same hashes.
"""

from __future__ import annotations

import csv
import hashlib
import io
import os
import sys
import tempfile
import uuid
from pathlib import Path
from typing import Any

import orjson

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "auditor.settings")

DATA = ROOT.parent / "shared" / "data"
#: What differs between two databases, not between two versions' results.
VOLATILE = {
    "id",
    "pk",
    "run",
    "run_id",
    "trace_pk",
    "result_id",
    "created_at",
    "upload",
    "upload_id",
}


def digest(value: Any) -> str:
    text = orjson.dumps(value, option=orjson.OPT_SORT_KEYS | orjson.OPT_NON_STR_KEYS)
    return hashlib.sha256(text).hexdigest()


def _whole_record(result: Any, run: Any) -> Any:
    """The record as its policy wrote it, in whichever version of the code this is."""
    try:  # a version that stores records naming their settings
        from auditor.runs.record_settings import full_record  # type: ignore[import-not-found]
    except ImportError:
        return result.record
    return full_record(result.record, run.record_settings)


def _whole_trajectory(result: Any) -> Any:
    method = getattr(result, "full_trajectory", None)
    if method is not None:
        return method()
    from auditor.runs.trajectory import full_trajectory  # type: ignore[import-not-found]

    return full_trajectory(result)


def _clean(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _clean(v) for k, v in value.items() if k not in VOLATILE}
    if isinstance(value, list):
        return [_clean(v) for v in value]
    return value


def ingest(project: Any) -> list[str]:
    from traces.models import Upload
    from traces.samples.bfcl import write_samples
    from traces.services import upload_create, upload_process

    names = []
    with tempfile.TemporaryDirectory() as tmp:
        files = sorted(p for p in DATA.glob("*/*") if p.suffix in (".json", ".jsonl"))
        files += write_samples(Path(tmp), per_category=5, seed=0)
        for path in files:
            with path.open("rb") as fh:
                upload, _ = upload_create(
                    project=project,
                    fileobj=fh,
                    filename=path.name,
                    source=Upload.Source.CLI,
                    enqueue=False,
                )
            upload = upload_process(upload_id=upload.pk) or upload
            assert upload.status == Upload.Status.DONE, (path, upload.failure)
            names.append(f"{path.name}: {upload.traces_accepted} traces")
    return names


def export_text(project: Any, fmt: str) -> bytes:
    from auditor.exports.selectors import export_open
    from auditor.exports.services import export_build, export_create

    export = export_create(project=project, format=fmt, enqueue=False)
    built = export_build(export_id=export.pk)
    assert built is not None and built.status == "done", built and built.error
    with export_open(built) as fh:
        return fh.read()


def main() -> None:
    import django

    django.setup()
    from auditor.models import AuditItem, AuditResult, Calibration
    from auditor.runs.services import audit_run_create, audit_run_start
    from traces.models import Project

    project = Project.objects.create(name=f"result-hashes-{uuid.uuid4().hex[:8]}")
    for line in ingest(project):
        print(line)
    run = audit_run_create(project=project, environment="auto", enqueue=False)
    run = audit_run_start(run_id=run.pk, inline=True)
    assert run is not None and run.status == "done", run and run.failure
    print(f"run #{run.pk}: {run.traces_total} traces, {run.error_count} errors")

    key = ("trace__upload__filename", "trace__external_id")
    results = []
    for r in AuditResult.objects.filter(run=run).select_related("trace__upload"):
        results.append(
            [
                r.trace.upload.filename,
                r.trace.external_id,
                r.policy,
                r.applied,
                r.actor_success,
                r.guarded_success,
                r.transition,
                r.continuation,
                _whole_record(r, run),
                _whole_trajectory(r),
            ]
        )
    results.sort(key=lambda row: (row[0], row[1], row[2]))
    items = sorted(AuditItem.objects.filter(run=run).values_list(*key, "status", "error"))
    calibrations = sorted(
        Calibration.objects.filter(run=run).values_list(
            "model", "verifier", "traces", "observations", "params"
        ),
        key=lambda c: (c[0], c[1]),
    )
    jsonl = [_clean(orjson.loads(line)) for line in export_text(project, "jsonl").splitlines()]
    csv_rows = [
        _clean(dict(row))
        for row in csv.DictReader(io.StringIO(export_text(project, "csv").decode(), newline=""))
    ]
    # a CSV cell holding JSON (the record) is compared as its value, not its text's key order
    for row in csv_rows:
        for k, v in row.items():
            if v.startswith(("{", "[")):
                try:
                    row[k] = _clean(orjson.loads(v))
                except orjson.JSONDecodeError:
                    pass
    parts = {
        "results": results,
        "items": items,
        "calibrations": calibrations,
        "summary": _clean(run.summary),
        "export.jsonl": jsonl,
        "export.csv": csv_rows,
    }
    print(f"{len(results)} results, {len(jsonl)} JSONL lines, {len(csv_rows)} CSV rows")
    for name, value in parts.items():
        print(f"{name:14} {digest(value)}")
    print(f"{'all':14} {digest(parts)}")


if __name__ == "__main__":
    main()
