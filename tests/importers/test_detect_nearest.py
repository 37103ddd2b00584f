"""A file no importer detects names the nearest format and the field its first record lacks."""

from __future__ import annotations

import orjson
import pytest

from traces.importers import detect


@pytest.mark.parametrize(
    ("record", "fmt", "missing"),
    [
        (
            {"task_id": "HumanEval/1", "is_solved": True, "prompt": "def f():"},
            "repair_runs",
            "solution",
        ),
        ({"name": "mbpp_2_f", "implementations": ["x"]}, "repair_runs", "test_feedback"),
        ({"question": "Why?", "answers": []}, "pushback", "turns"),
        ({"trace_id": "t1", "kind": "message"}, "v1", "type"),
    ],
)
def test_not_detected_names_nearest_format_and_missing_field(record, fmt, missing):
    with pytest.raises(ValueError) as exc:
        detect(orjson.dumps(record) + b"\n", "x.jsonl")
    text = str(exc.value)
    assert "could not detect the format of 'x.jsonl'" in text
    assert f"nearest: {fmt} (the first record lacks the field {missing})" in text


def test_nothing_in_common_names_no_nearest_format():
    with pytest.raises(ValueError) as exc:
        detect(b'{"zzz": 1}\n', "x.jsonl")
    assert "nearest" not in str(exc.value)
