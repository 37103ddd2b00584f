"""Fixtures of the annotation tests: a finished audit run with items of every kind, and the
personas of the project (Alice owns it; Bob and Carol annotate; Vera views; Charlie is out)."""

from __future__ import annotations

import io

import pytest

from auditor.models import AuditRun
from auditor.runs.services import audit_run_create, audit_run_start
from tests.builders.events import lock_unlock_trace
from tests.builders.v1 import jsonl
from tests.conftest import REPO
from tests.real_data import real_file
from traces.models import Membership
from traces.services import upload_create, upload_process

EXAMPLES = REPO / "traces" / "schema" / "examples"
SYCON = real_file("sycon-bench/false_presuppositions_gpt-4o_prompt0.jsonl")


def ingest_bytes(project, data: bytes, name: str):  # type: ignore[no-untyped-def]
    upload, _ = upload_create(
        project=project, fileobj=io.BytesIO(data), filename=name, source="cli", enqueue=False
    )
    upload = upload_process(upload_id=upload.pk)
    assert upload.status == "done" and upload.error_count == 0, upload.errors[:3]
    return upload


def lock_traces(n: int) -> bytes:
    """n copies of TwinCheck's Fig. 4 pattern (lock, then an unasked unlock): with no
    environment the guarded outcome is unknown, and each has one actor-vs-twin pair."""
    events = []
    for i in range(n):
        for e in lock_unlock_trace(success=False):
            e = dict(e, trace_id=f"lock-{i}")
            if e["type"] == "trace":
                e["task"] = {"id": f"lock-{i}", "benchmark": "toy", "category": "accounts"}
            events.append(e)
    return jsonl(events)


def make_run(  # type: ignore[no-untyped-def]
    project, *, locks: int = 3, examples: bool = True, policies=None, settings=None
) -> AuditRun:
    if locks:
        ingest_bytes(project, lock_traces(locks), "locks.jsonl")
    if examples:
        for path in sorted(EXAMPLES.glob("*.jsonl")):
            ingest_bytes(project, path.read_bytes(), path.name)
    kwargs: dict = {"policies": policies} if policies else {}
    if settings:
        kwargs["settings"] = settings
    run = audit_run_create(project=project, enqueue=False, environment="none", **kwargs)
    audit_run_start(run_id=run.pk, inline=True)
    run.refresh_from_db()
    assert run.status == "done" and run.error_count == 0
    return run


def member(django_user_model, project, name: str, role: str):  # type: ignore[no-untyped-def]
    user = django_user_model.objects.create_user(name, password=f"{name}-pw")
    Membership.objects.create(project=project, user=user, role=role)
    return user


@pytest.fixture
def bob(django_user_model, project):  # type: ignore[no-untyped-def]
    return member(django_user_model, project, "bob", Membership.Role.ANNOTATOR)


@pytest.fixture
def carol(django_user_model, project):  # type: ignore[no-untyped-def]
    return member(django_user_model, project, "carol", Membership.Role.ANNOTATOR)


@pytest.fixture
def vera(django_user_model, project):  # type: ignore[no-untyped-def]
    return member(django_user_model, project, "vera", Membership.Role.VIEWER)


@pytest.fixture
def run(project) -> AuditRun:  # type: ignore[no-untyped-def]
    return make_run(project)


#: The example repair loop is the run's only loop: α and β have one or two labelled transitions,
#: below VRR's minimum of evidence, and VRR is not applicable there. Tests of VRR's annotation
#: items lower the minimum so that the one loop is decided.
ONE_LOOP_DECIDED = {"vrr": {"min_evidence": 1}}


@pytest.fixture
def run_one_loop_decided(project) -> AuditRun:  # type: ignore[no-untyped-def]
    return make_run(project, settings=ONE_LOOP_DECIDED)
