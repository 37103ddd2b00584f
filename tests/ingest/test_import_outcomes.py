"""What a user sees when a foreign file is not what the importer needs: a file
whose every record is rejected says which format it was read as and the field most records lack;
a file the importers cannot detect names the nearest format; a final-solution file says what it
does not contain."""

from __future__ import annotations

import orjson
import pytest

from tests.real_data import count_records, real_file
from traces.services import upload_create, upload_process

pytestmark = pytest.mark.django_db

HUMANEVAL = real_file("ldb/humaneval_reflexion_gpt-3.5-turbo-0613.jsonl")


def ingest(project, data: bytes, name: str):  # type: ignore[no-untyped-def]
    upload, _ = upload_create(
        project=project, fileobj=data, filename=name, source="cli", enqueue=False
    )
    return upload_process(upload_id=upload.pk)


def real(drop: tuple[str, ...] = (), **change) -> bytes:  # type: ignore[no-untyped-def]
    out = []
    for line in HUMANEVAL.read_bytes().splitlines():
        rec = {k: v for k, v in orjson.loads(line).items() if k not in drop}
        rec.update(change)
        out.append(orjson.dumps(rec))
    return b"\n".join(out) + b"\n"


def test_every_record_rejected_names_the_format_and_the_missing_field(project, client, alice):
    up = ingest(project, real(drop=("given_tests",)), "run.jsonl")
    assert (
        up.status == "done"
        and up.traces_accepted == 0
        and up.traces_rejected == count_records(HUMANEVAL)
    )
    summary = up.report["rejected_all"]
    assert summary.startswith("every record was rejected when read as repair_runs")
    assert "$.given_tests" in summary and "votes cannot be counted" in summary
    client.force_login(alice)
    page = client.get(up.get_absolute_url()).content.decode()
    assert 'id="rejected-all"' in page and "read as repair_runs" in page


def test_undetected_file_fails_naming_the_nearest_format(project):
    up = ingest(project, real(drop=("implementations", "test_feedback", "solution")), "run.jsonl")
    assert up.status == "failed"
    assert "nearest: repair_runs (the first record lacks the field" in up.failure
    assert "implementations" in up.failure or "solution" in up.failure


def test_final_solution_file_reports_what_it_lacks_on_the_upload_page(project, client, alice):
    up = ingest(
        project,
        real(drop=("implementations", "test_feedback", "given_tests", "is_passing")),
        "humaneval_reflexion_gpt-3.5-turbo-0613.jsonl",
    )
    assert up.status == "done" and (up.traces_accepted, up.traces_rejected) == (
        count_records(HUMANEVAL),
        0,
    )
    [note] = up.report["notes"]
    client.force_login(alice)
    page = client.get(up.get_absolute_url()).content.decode()
    assert "only its final <code>solution</code>" in page or "only its final `solution`" in page
    assert 'id="run-source"' in page and "reflexion" in page
    assert note


def test_inspect_eval_log_goes_through_the_service(project, tmp_path):
    from tests.importers.inspect_samples import write_log

    path = write_log(tmp_path, "eval")
    up = ingest(project, path.read_bytes(), path.name)
    assert up.status == "done" and up.format_detected == "inspect_ai"
    assert (up.traces_accepted, up.traces_rejected) == (2, 0), up.errors
    assert up.run_model == "mockllm/model" and up.run_benchmark == "weather"
