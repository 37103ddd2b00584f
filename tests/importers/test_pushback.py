from __future__ import annotations

import json

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.conftest import fuzz_examples
from traces.importers import detect

from ._helpers import (
    DATA,
    check_fuzzed,
    check_invariants,
    count_jsonl,
    roundtrip,
    run,
    validate_all,
)
from .fuzz import mutate

FILES = sorted((DATA / "sycon-bench").glob("*.jsonl"))


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_every_real_record_imports(path):
    raw = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    assert detect(path.read_bytes()[:65536], path.name) == "pushback"
    events, report = run("pushback", path)
    assert report.errors == []
    traces = check_invariants(events)
    assert len(traces) == count_jsonl(path) == len(raw)
    n_turns = sum(len(r["turns"]) for r in raw)
    types = [se.event["type"] for se in events]
    assert types.count("candidate") == types.count("message") == n_turns
    for r in raw:
        evs = traces[f"pushback:{r['id']}"]
        msgs = [e for e in evs if e["type"] == "message"]
        cands = [e for e in evs if e["type"] == "candidate"]
        assert msgs[0]["content"] == r["question"] and "feedback" not in msgs[0]
        assert all(
            m["feedback"]["kind"] == "challenge" and m["labels"] == {"valid": False}
            for m in msgs[1:]
        )
        assert [c["labels"]["correct"] for c in cands] == [
            int(t["judge_identifies_false_presupposition"]) == 1 for t in r["turns"]
        ]
        assert [c["round"] for c in cands] == list(range(len(r["turns"])))
    roundtrip(events)
    validate_all(events)


RECORD = json.loads(FILES[0].read_text().splitlines()[0])


def one(rec) -> bytes:
    return orjson.dumps(rec) + b"\n"


def _turn(i, **change):
    return {
        **RECORD,
        "turns": [dict(t, **change) if n == i else t for n, t in enumerate(RECORD["turns"])],
    }


@pytest.mark.parametrize(
    "rec, path, message",
    [
        (
            _turn(2, judge_identifies_false_presupposition="maybe"),
            "$.turns[2].judge_identifies_false_presupposition",
            "expected a 0/1 label, found maybe",
        ),
        (_turn(1, assistant=None), "$.turns[1].assistant", "found nothing"),
        (_turn(3, turn="9"), "$.turns[3].turn", "expected turn 4"),
        ({**RECORD, "turns": []}, "$.turns", "empty array"),
        ({k: v for k, v in RECORD.items() if k != "question"}, "$.question", "found nothing"),
    ],
)
def test_bad_records_are_errors(rec, path, message):
    events, report = run("pushback", one(rec))
    assert events == []
    [err] = report.errors
    assert err.path == path and message in err.message and err.line == 1


@settings(
    max_examples=fuzz_examples(150), deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
@given(st.data())
def test_fuzz_never_raises(data):
    events, report = run("pushback", mutate(data, RECORD))
    check_fuzzed(events, report)


def test_the_same_question_has_one_task_id_across_models():
    """SYCON-Bench names each model's record of a question `sycon_fp_<model>_p0_<n>`: the task id
    leaves the model out, so runs of several models match question by question."""
    tasks: dict[str, list[tuple[str, str]]] = {}
    for path in FILES:
        events, _ = run("pushback", path)
        for se in events:
            if se.event["type"] == "trace":
                tasks.setdefault(se.event["model"], []).append(
                    (se.event["task"]["id"], se.event["task"]["question"])
                )
    assert len(tasks) == len(FILES)
    ids = {model: [t for t, _ in pairs] for model, pairs in tasks.items()}
    first = next(iter(ids.values()))
    assert len(set(first)) == len(first) and all(v == first for v in ids.values())
    assert not any(model in t for model in tasks for t in first)
    questions = [dict(pairs) for pairs in tasks.values()]  # the same question under each id
    assert all(q == questions[0] for q in questions)
