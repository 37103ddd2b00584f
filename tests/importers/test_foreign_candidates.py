"""A repair-log candidate written for another task (LATS logs: `implementations[0]` is often
`strlen` whatever the task) is flagged at import by the importer's own rule
(`traces.importers._foreign_candidates`): kept in the trace, marked on the candidate, counted in
the upload's report and in the run's data-quality section."""

from __future__ import annotations

import io
import json

import orjson
import pytest

from auditor.runs.summary import audit_run_counts
from tests.audit.test_runs import run_inline
from tests.policies.test_repair_candidates import ENCRYPT_WRONG, STRLEN, lats_record
from traces.importers._foreign_candidates import is_foreign_program
from traces.services import upload_create, upload_process

from ._helpers import run

LATS = "humaneval-py._mcts_8_gpt-4_pass_at_k_1_py.jsonl"


def candidates(first: str) -> tuple[list[dict], dict]:
    events, report = run("repair_runs", json.dumps(lats_record(first)).encode() + b"\n", LATS)
    assert report.errors == []
    cands = [se.event for se in events if se.event["type"] == "candidate"]
    return cands, report.flags


def test_a_foreign_first_implementation_is_flagged_and_kept() -> None:
    cands, flags = candidates(STRLEN)
    assert [c["content"] for c in cands][0] == STRLEN  # kept as the log has it
    assert [bool((c.get("meta") or {}).get("foreign_candidate")) for c in cands] == [
        True,
        False,
        False,
    ]
    assert flags["foreign_candidate"] == 1


def test_a_first_implementation_for_the_task_is_not_flagged() -> None:
    cands, flags = candidates(ENCRYPT_WRONG)
    assert not any((c.get("meta") or {}).get("foreign_candidate") for c in cands)
    assert "foreign_candidate" not in flags


@pytest.mark.parametrize(
    ("program", "foreign"),
    [
        (STRLEN, True),
        ("def strlen(s):\n    return encrypt(s)\n", True),  # calls it, does not define it
        ("def helper(s):\n    encrypt = 1\n    return s\n", True),  # a local, not top level
        (ENCRYPT_WRONG, False),
        ("import os\n\ndef encrypt(s):\n    return s\n", False),
        ("encrypt = lambda s: s\n", False),
        ("from codecs import encode as encrypt\n", False),
        ("class encrypt:\n    pass\n", False),
        ("try:\n    from x import encrypt\nexcept ImportError:\n    encrypt = None\n", False),
        ("def encrypt(s:\n    return s", False),  # a repair with a syntax error: its loop's
        ("def strlen(s:\n    return s", True),  # ... unless the name is not there at all
        ("", False),  # no program text
    ],
)
def test_the_rule(program: str, foreign: bool) -> None:
    assert is_foreign_program(program, "encrypt") is foreign


def test_without_an_entry_point_nothing_is_foreign() -> None:
    assert is_foreign_program(STRLEN, None) is False
    assert is_foreign_program(STRLEN, "not an identifier") is False
    assert is_foreign_program(STRLEN, 1) is False  # a record's entry_point may be anything


@pytest.mark.django_db
def test_the_upload_report_and_the_data_quality_section_count_them(project) -> None:  # type: ignore[no-untyped-def]
    lines = []
    for i, first in enumerate([STRLEN, STRLEN, ENCRYPT_WRONG]):
        rec = lats_record(first)
        rec["name"] = f"HumanEval_{89 + i}_encrypt"
        lines.append(json.dumps(rec))
    fh = io.BytesIO(("\n".join(lines) + "\n").encode())
    upload, _ = upload_create(
        project=project, fileobj=fh, filename=LATS, source="cli", enqueue=False
    )
    upload = upload_process(upload_id=upload.pk)
    assert upload.status == "done" and upload.error_count == 0
    assert upload.report["flags"]["foreign_candidate"] == 2
    audit = run_inline(project, policies=["vrr"], environment="none")
    got = orjson.loads(orjson.dumps(audit_run_counts(audit)))["data_quality"]
    foreign = {f["flag"]: f for f in got["flags"]}["foreign_candidate"]
    assert (foreign["traces"], foreign["events"]) == (2, 2)


def test_a_completion_of_the_task_s_prompt_is_not_foreign() -> None:
    """Reflexion's HumanEval logs record ``solution`` as the body of the prompt's function."""
    prompt = "def encrypt(s: str) -> str:\n    '''Rotate the alphabet by four.'''\n"
    body = "    return ''.join(chr((ord(c) - 93) % 26 + 97) for c in s)"
    assert is_foreign_program(body, "encrypt", prompt) is False
    assert is_foreign_program(body, "encrypt") is True  # without the prompt: no definition
    assert is_foreign_program(STRLEN, "encrypt", prompt) is True  # a whole other program
    assert is_foreign_program(body, "strlen", prompt) is True  # the body of another function
