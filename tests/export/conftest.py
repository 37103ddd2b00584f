"""Fixtures of the export tests: a project with real traces audited in-process, and a factory
for large synthetic decision sets (for the bounded-memory test)."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from auditor.models import AuditResult, AuditRun
from auditor.runs.services import audit_run_create, audit_run_start
from tests.real_data import count_records, real_file
from traces.models import Event, Membership, Project, Trace, Upload
from traces.services import upload_create, upload_process

SYCON = real_file("sycon-bench/false_presuppositions_gpt-4o_prompt0.jsonl")
SYCON_TRACES = min(50, count_records(SYCON))  # the first 50 (the sample holds fewer)


def hostile_v1() -> bytes:
    """A few v1 traces by hand: markup, unicode, nested arguments and an unknown type, which an
    export must carry through unchanged."""
    lines = []
    for i in range(3):
        tid = f"hand-{i}"
        lines += [
            {
                "trace_id": tid,
                "type": "trace",
                "seq": 0,
                "agent": "a",
                "model": "m-hand",
                "task": {"id": f"t{i}", "benchmark": "hand", "category": f"c{i % 2}"},
                "outcome": {"success": i % 2 == 0, "reward": 1.0 if i % 2 == 0 else 0.0},
            },
            {
                "trace_id": tid,
                "type": "message",
                "seq": 1,
                "turn": 0,
                "role": "user",
                "content": "<script>alert('x')</script> \u00e9\u2603 \x1b[31mred",
            },
            {
                "trace_id": tid,
                "type": "tool_call",
                "seq": 2,
                "turn": 0,
                "call_id": "c1",
                "name": "lookup",
                "arguments": {"q": 'a,b\n"c"', "n": [1, 2, {"x": None}]},
            },
            {
                "trace_id": tid,
                "type": "tool_result",
                "seq": 3,
                "turn": 0,
                "call_id": "c1",
                "status": "ok",
                "content": "found",
            },
            {
                "trace_id": tid,
                "type": "message",
                "seq": 4,
                "turn": 0,
                "role": "assistant",
                "content": "done",
                "labels": {"correct": True},
            },
        ]
    return b"".join(orjson.dumps(x) + b"\n" for x in lines)


def ingest(project: Project, data: bytes | Path, filename: str = "t.jsonl") -> Upload:
    if isinstance(data, Path):
        if not data.exists():
            pytest.fail(f"real data file missing: {data}")
        data = data.read_bytes()
    upload, _ = upload_create(
        project=project, fileobj=data, filename=filename, source="cli", enqueue=False
    )
    upload = upload_process(upload_id=upload.pk)
    assert upload is not None and upload.status == "done", upload and upload.errors[:3]
    return upload


def run_inline(project: Project, **kwargs) -> AuditRun:  # type: ignore[no-untyped-def]
    run = audit_run_create(project=project, enqueue=False, environment="none", **kwargs)
    audit_run_start(run_id=run.pk, inline=True)
    run.refresh_from_db()
    assert run.status == "done", run.failure
    return run


@pytest.fixture
def audited(project):  # type: ignore[no-untyped-def]
    """Alice's project with the first 50 SYCON pushback traces (real data, through the
    importer) and hand-written v1 traces, audited by all policies."""
    head = b"".join(SYCON.read_bytes().splitlines(keepends=True)[:SYCON_TRACES])
    ingest(project, head, SYCON.name)
    ingest(project, hostile_v1(), "hand.jsonl")
    ingest(project, claimed_pushback(), "claims.jsonl")
    run = run_inline(project, settings={"checklist": {"theta": 0.6}})
    return project, run


def claimed_pushback() -> bytes:
    """Pushback sessions whose agent recorded a claim (confidence 0.9) before each challenge:
    the checklist keeps the first answer where the agent gave it up, so the run has rescues
    and harms (SYCON-Bench records carry no confidences: the checklist cannot judge those)."""
    lines = []
    for i, (first, last) in enumerate([(True, False), (False, True), (True, True), (True, False)]):
        tid = f"claimed-{i}"
        lines += [
            {
                "trace_id": tid,
                "type": "trace",
                "seq": 0,
                "model": "m-claims",
                "task": {"id": tid, "benchmark": "claims", "category": "pushback"},
            },
            {"trace_id": tid, "type": "message", "seq": 1, "role": "user", "content": "Is it?"},
            {
                "trace_id": tid,
                "type": "candidate",
                "seq": 2,
                "candidate_id": "a0",
                "content": "Yes, it is.",
                "labels": {"correct": first},
            },
            {
                "trace_id": tid,
                "type": "claims",
                "seq": 3,
                "claims": [{"id": "a", "text": "It is.", "confidence": 0.9}],
            },
            {
                "trace_id": tid,
                "type": "message",
                "seq": 4,
                "role": "user",
                "content": "No way.",
                "feedback": {"kind": "challenge"},
                "labels": {"valid": False},
            },
            {
                "trace_id": tid,
                "type": "candidate",
                "seq": 5,
                "candidate_id": "a1",
                "content": "You are right, it is not.",
                "labels": {"correct": last},
            },
        ]
    return b"".join(orjson.dumps(x) + b"\n" for x in lines)


@pytest.fixture
def bob(django_user_model, project):  # type: ignore[no-untyped-def]
    """Bob is Alice's teammate: a viewer of "alpha"."""
    user = django_user_model.objects.create_user("bob", password="bob-pw")
    Membership.objects.create(project=project, user=user, role=Membership.Role.VIEWER)
    return user


def synthetic_decisions(project: Project, n_traces: int, policies=("checklist", "commit")):  # type: ignore[no-untyped-def]
    """n_traces traces of two events each, one done run, one decision per trace × policy —
    written with bulk_create, so thousands of rows take a moment."""
    upload = Upload.objects.create(
        project=project,
        filename=f"synthetic-{n_traces}.jsonl",
        size=1,
        content_hash=f"synthetic-{project.pk}-{n_traces}",
        source="cli",
        status=Upload.Status.DONE,
    )
    traces = Trace.objects.bulk_create(
        [
            Trace(
                project=project,
                upload=upload,
                external_id=f"s{n_traces}-{i}",
                model="m",
                benchmark="b",
                category=f"c{i % 5}",
                event_count=2,
            )
            for i in range(n_traces)
        ],
        batch_size=2000,
    )
    Event.objects.bulk_create(
        [
            Event(
                trace=t,
                seq=s,
                type=kind,
                line=2 * j + s + 1,
                payload={"trace_id": t.external_id, "type": kind, "seq": s, "content": "x" * 200},
            )
            for j, t in enumerate(traces)
            for s, kind in ((0, "trace"), (1, "message"))
        ],
        batch_size=5000,
    )
    run = AuditRun.objects.create(
        project=project, policies=list(policies), status=AuditRun.Status.DONE
    )
    AuditResult.objects.bulk_create(
        [
            AuditResult(
                run=run,
                trace=t,
                policy=p,
                applied=j % 3 == 0,
                actor_success=j % 2 == 0,
                guarded_success=j % 4 < 2,
                transition=("same", "rescue", "harm", "unknown")[j % 4],
                continuation="truncated",
                record={"reason": f"r{j}", "score": j / 7, "detail": {"k": [1, 2, 3]}},
            )
            for j, t in enumerate(traces)
            for p in policies
        ],
        batch_size=5000,
    )
    return run
