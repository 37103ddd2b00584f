from __future__ import annotations

import pytest

from traces.importers import IMPORTERS, ImportReport, detect

from ._helpers import DATA, run

REAL = {
    "tau-bench/gpt-4o-airline.json": "tau_bench",
    "tau2-bench/airline_grok-3.json": "tau_bench",
    "tau2-bench/telecom_grok-3.json": "tau_bench",
    "ldb/humaneval_reflexion_gpt-3.5-turbo-0613.jsonl": "repair_runs",
    "ldb/mbpp_ldb_gpt-3.5-turbo-0613.jsonl": "repair_runs",
    "sycon-bench/false_presuppositions_gpt-4o_prompt0.jsonl": "pushback",
    "sycon-bench/false_presuppositions_claude_prompt0.jsonl": "pushback",
    "sycon-bench/false_presuppositions_Qwen2.5-7B-Instruct_prompt0.jsonl": "pushback",
}


def test_registry_names_match_importers():
    assert set(IMPORTERS) == {
        "ta_export",
        "otlp",
        "inspect_ai",
        "tau_bench",
        "bfcl",
        "repair_runs",
        "sycobench",
        "pushback",
        "openai_chat",
        "v1",
    }
    for name, importer in IMPORTERS.items():
        assert importer.name == name and importer.label


@pytest.mark.parametrize("rel, fmt", REAL.items())
def test_detects_every_real_file_from_its_head(rel, fmt):
    head = (DATA / rel).read_bytes()[:65536]
    assert detect(head, rel.rsplit("/", 1)[-1]) == fmt
    assert detect(head, "upload.bin") == fmt  # content alone is enough


def test_undetectable_input_names_the_formats_tried():
    with pytest.raises(ValueError) as exc:
        detect(b"id,name\n1,x\n", "data.csv")
    message = str(exc.value)
    assert "data.csv" in message
    for name in IMPORTERS:
        assert name in message


def test_v1_lines_detect_as_v1_and_read_back():
    blob = (
        b'{"trace_id": "t1", "type": "trace", "seq": 0}\n'
        b'{"trace_id": "t1", "type": "message", "seq": 1}\n'
    )
    assert detect(blob, "x.jsonl") == "v1"
    events, report = run("v1", blob + b"not json\n" + b'{"type": "message"}\n[1]\n')
    assert [e.line for e in events] == [1, 2]
    assert [(e.line, e.path) for e in report.errors] == [(3, "$"), (4, "$.trace_id"), (5, "$")]


def test_report_filename_is_used_when_the_stream_has_no_name():
    # The ingest passes a decompressed stream; a `filename` on the report names the upload.
    report = ImportReport(format="repair_runs")
    report.filename = "mbpp_ldb_gpt-3.5-turbo-0613.jsonl"
    import io

    line = (DATA / "ldb" / "mbpp_ldb_gpt-3.5-turbo-0613.jsonl").read_bytes().split(b"\n", 1)[0]
    [header, *_] = IMPORTERS["repair_runs"].convert(io.BytesIO(line + b"\n"), report)
    assert header.event["agent"] == "ldb" and header.event["model"] == "gpt-3.5-turbo-0613"
