"""Every real file (../shared/data, or its samples in tests/data/real) goes through the whole
ingest service (auto-detected format, the importer, the v1 validator, storage): zero crashes,
zero rejected records, a report per file — and the stored traces survive a round trip as v1."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from tests.real_data import data_root
from traces.models import Event, Project, Trace
from traces.services import upload_create, upload_process

pytestmark = pytest.mark.django_db

DATA = data_root()
FILES = sorted(p for p in DATA.glob("*/*") if p.suffix in (".json", ".jsonl"))
EXPECTED_FORMAT = {
    "tau-bench": "tau_bench",
    "tau2-bench": "tau_bench",
    "ldb": "repair_runs",
    "sycon-bench": "pushback",
}


def test_shared_data_is_there():
    assert len(FILES) == 8, FILES


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_real_file_imports_cleanly_through_the_service(path: Path, project):
    with path.open("rb") as fh:
        upload, _ = upload_create(
            project=project, fileobj=fh, filename=path.name, source="cli", enqueue=False
        )
    upload = upload_process(upload_id=upload.pk)
    assert upload.status == "done", upload.failure
    assert upload.format_detected == EXPECTED_FORMAT[path.parent.name]
    assert upload.error_count == 0 and upload.traces_rejected == 0, upload.errors[:3]
    assert upload.report["format"] == upload.format_detected  # the mapping report is kept
    if path.suffix == ".jsonl":
        records = sum(1 for line in path.read_bytes().splitlines() if line.strip())
    else:
        doc = orjson.loads(path.read_bytes())
        records = len(doc["simulations"] if isinstance(doc, dict) else doc)
    assert upload.traces_accepted == records
    assert Event.objects.filter(trace__upload=upload).count() == upload.events > records


def test_round_trip_as_v1_gives_the_same_traces(project):
    path = DATA / "tau2-bench" / "airline_grok-3.json"
    with path.open("rb") as fh:
        upload, _ = upload_create(
            project=project, fileobj=fh, filename=path.name, source="cli", enqueue=False
        )
    upload_process(upload_id=upload.pk)
    exported = b"".join(
        orjson.dumps(payload) + b"\n"
        for payload in Event.objects.filter(trace__upload=upload)
        .order_by("trace_id", "seq")
        .values_list("payload", flat=True)
    )
    other = Project.objects.create(name="round-trip")
    again, _ = upload_create(
        project=other, fileobj=exported, filename="export.jsonl", source="cli", enqueue=False
    )
    again = upload_process(upload_id=again.pk)
    assert again.format_detected == "v1" and again.error_count == 0

    def traces(p):  # type: ignore[no-untyped-def]
        out = {}
        for t in Trace.objects.filter(project=p):
            out[t.external_id] = (
                t.model,
                t.task_id,
                t.outcome_success,
                t.outcome_reward,
                list(t.event_set.order_by("seq").values_list("payload", flat=True)),
            )
        return out

    simulations = len(orjson.loads(path.read_bytes())["simulations"])  # 10 in the full file
    assert traces(other) == traces(project) and len(traces(project)) == simulations > 1
