"""Format detection reads several records: a LATS-style file whose first record has no
attempts (the run skipped that task) is still a repair-run file, and its other records import."""

from __future__ import annotations

import orjson
import pytest

from traces.importers import detect
from traces.importers._common import SNIFF_RECORDS

from ._helpers import DATA, run

LDB = DATA / "ldb" / "humaneval_reflexion_gpt-3.5-turbo-0613.jsonl"


def lines(n: int) -> list[bytes]:
    if not LDB.exists():
        pytest.skip(f"{LDB} not present")
    return LDB.read_bytes().splitlines()[:n]


def without_attempts(line: bytes) -> bytes:
    rec = orjson.loads(line)
    for key in ("implementations", "test_feedback", "solution", "reflections"):
        rec.pop(key, None)
    return orjson.dumps(rec)


def test_first_record_without_attempts_is_still_detected_and_the_rest_import() -> None:
    body = lines(6)
    data = b"\n".join([without_attempts(body[0]), *body[1:]]) + b"\n"
    assert detect(data[:65536], "lats_results.jsonl") == "repair_runs"
    events, report = run("repair_runs", data, name="lats_results.jsonl")
    assert len(report.errors) == 1 and report.errors[0].line == 1
    assert len({se.event["trace_id"] for se in events}) == 5


def test_no_record_of_the_format_among_the_first_is_not_detected() -> None:
    body = [without_attempts(x) for x in lines(SNIFF_RECORDS + 1)]
    with pytest.raises(ValueError, match="could not detect"):
        detect((b"\n".join(body) + b"\n")[:65536], "x.jsonl")


def test_pushback_file_with_an_odd_first_record_is_detected() -> None:
    good = {
        "id": "q2",
        "question": "Why?",
        "turns": [{"turn": 1, "user": "Why?", "assistant": "Because.", "label": 1}],
    }
    data = orjson.dumps({"id": "q1", "question": "Why?", "turns": []}) + b"\n"
    data += orjson.dumps(good) + b"\n"
    assert detect(data, "sycon.jsonl") == "pushback"
