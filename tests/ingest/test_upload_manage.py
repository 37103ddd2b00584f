"""Run identity and changing stored uploads: runs of the same benchmark land apart without
being named, the same bytes under another run or format are a new upload, and an upload can
be renamed (its traces follow), processed again and deleted — by the project's owners, from
the page, the API and `manage.py upload`. Real data: the shared SYCON-Bench files."""

from __future__ import annotations

import os

import orjson
import pytest
from django.core.management import call_command
from django.test import Client

from auditor.annotation.models import AnnotationItem, Verdict
from auditor.annotation.services import queue_create
from auditor.models import AuditResult, AuditRun
from auditor.runs.services import audit_run_create, audit_run_start
from tests.conftest import REPO
from traces.models import Event, Membership, Project, ProjectToken, Trace, Upload
from traces.run_source import RunSource, default_key, requalify
from traces.services import upload_create, upload_process
from traces.upload_manage import upload_delete, upload_rename, upload_reprocess

pytestmark = pytest.mark.django_db

SYCON = REPO.parent / "shared" / "data" / "sycon-bench"
CLAUDE = SYCON / "false_presuppositions_claude_prompt0.jsonl"
GPT4O = SYCON / "false_presuppositions_gpt-4o_prompt0.jsonl"


def records(path, start: int = 0, stop: int = 20, *, model: bool = True) -> bytes:  # type: ignore[no-untyped-def]
    out = []
    for line in path.read_bytes().splitlines()[start:stop]:
        rec = orjson.loads(line)
        rec["id"] = rec["id"].replace(rec["model_dir"], "m")  # ids that name no model
        if not model:
            rec.pop("model_dir")
        out.append(orjson.dumps(rec))
    return b"\n".join(out) + b"\n"


def ingest(project, data: bytes, filename: str, **kw) -> tuple[Upload, bool]:  # type: ignore[no-untyped-def]
    upload, created = upload_create(
        project=project, fileobj=data, filename=filename, source="cli", enqueue=False, **kw
    )
    if created:
        upload = upload_process(upload_id=upload.pk)
    return upload, created


def sources(upload: Upload) -> set[str]:
    return set(Trace.objects.filter(upload=upload).values_list("run_source", flat=True))


def test_two_models_of_one_benchmark_land_as_separate_runs_without_a_name(project):
    a, _ = ingest(project, records(CLAUDE), CLAUDE.name)
    b, _ = ingest(project, records(GPT4O), GPT4O.name)
    assert (a.traces_accepted, a.traces_rejected, b.traces_accepted, b.traces_rejected) == (
        20,
        0,
        20,
        0,
    )
    assert sources(a) == {"claude"} and sources(b) == {"gpt-4o"}
    assert (a.run_model, b.run_model) == ("claude", "gpt-4o")


def test_files_that_name_no_model_get_their_own_run_never_another_runs(project):
    a, _ = ingest(project, records(CLAUDE, model=False), "run.jsonl")
    b, _ = ingest(project, records(GPT4O, model=False), "run.jsonl")
    assert a.traces_rejected == b.traces_rejected == 0
    assert sources(a) == {f"run@{a.pk}"} and sources(b) == {f"run@{b.pk}"}
    t = Trace.objects.get(upload=b, task_id="sycon_fp_m_p0_1")
    assert t.external_id == f"pushback:run@{b.pk}:sycon_fp_m_p0_1"


def test_a_second_run_of_the_same_model_is_never_mixed_into_the_first(project):
    """Records 10–29 of a model after records 0–19 of the same model: 10 tasks overlap. Every
    trace of the second run is stored under the second run's own run part."""
    first, _ = ingest(project, records(CLAUDE, 0, 20), "a.jsonl")
    second, _ = ingest(project, records(CLAUDE, 10, 30), "b.jsonl")
    assert (second.traces_accepted, second.traces_rejected) == (20, 0)
    assert sources(first) == {"claude"} and sources(second) == {f"claude@{second.pk}"}
    assert Trace.objects.filter(run_source="claude").count() == 20
    # Files of one run holding other tasks keep the plain run part.
    third, _ = ingest(project, records(CLAUDE, 40, 50), "c.jsonl")
    assert sources(third) == {"claude"}


def test_identical_file_in_the_same_run_is_a_no_op_another_run_or_format_is_processed(project):
    data = records(CLAUDE)
    first, created = ingest(project, data, CLAUDE.name)
    assert created
    again, created = ingest(project, data, "renamed.jsonl")
    assert not created and again.pk == first.pk
    labelled, created = ingest(project, data, CLAUDE.name, run=RunSource(label="seed-2"))
    assert created and labelled.traces_accepted == 20 and sources(labelled) == {"claude/seed-2"}
    same_label, created = ingest(project, data, CLAUDE.name, run=RunSource(label="seed-2"))
    assert not created and same_label.pk == labelled.pk
    other_format, created = ingest(project, data, CLAUDE.name, fmt="pushback")
    assert created and other_format.pk not in (first.pk, labelled.pk)
    assert Upload.objects.filter(project=project).count() == 3


def test_the_default_run_name_is_the_file_name_and_upload_number():
    assert default_key("false_presuppositions_claude_prompt0.jsonl", 7) == (
        "false_presuppositions_claude_prompt0@7"
    )
    assert default_key("dir/x y:z.jsonl.gz", 3) == "x-y-z@3"
    assert requalify("pushback:claude:t1", "claude", "claude/run-b") == "pushback:claude/run-b:t1"
    assert requalify("pushback:t1", "", "a@2") == "pushback:a@2:t1"


@pytest.fixture
def audited(project, alice):  # type: ignore[no-untyped-def]
    """Two runs of the SYCON file, audited, with an annotation queue on the audit."""
    a, _ = ingest(project, records(CLAUDE, 0, 5), CLAUDE.name)
    b, _ = ingest(project, records(GPT4O, 0, 5), GPT4O.name)
    run = audit_run_create(project=project, environment="none", enqueue=False)
    audit_run_start(run_id=run.pk, inline=True)
    queue = queue_create(run=AuditRun.objects.get(pk=run.pk), name="q", user=alice)
    for upload in (a, b):  # one annotated item on each run
        result = AuditResult.objects.filter(trace__upload=upload).first()
        item = AnnotationItem.objects.create(queue=queue, result=result, kind="outcome")
        Verdict.objects.create(item=item, annotator=alice, label="success")
    return a, b


def test_rename_moves_the_traces_to_the_new_run_and_keeps_their_results(audited, project):
    a, b = audited
    pks = set(Trace.objects.filter(upload=a).values_list("pk", flat=True))
    results = AuditResult.objects.filter(trace__upload=a).count()
    assert results
    renamed = upload_rename(upload=a, run=RunSource(model="claude-3-5-sonnet", label="night"))
    assert (renamed.run_model, renamed.run_label) == ("claude-3-5-sonnet", "night")
    traces = Trace.objects.filter(upload=a)
    assert set(traces.values_list("pk", flat=True)) == pks
    assert set(traces.values_list("run_source", flat=True)) == {"claude/claude-3-5-sonnet/night"}
    t = traces.get(task_id="sycon_fp_m_p0_1")
    assert t.external_id == "pushback:claude/claude-3-5-sonnet/night:sycon_fp_m_p0_1"
    assert (t.model, t.agent, t.run_label) == ("claude-3-5-sonnet", "claude", "night")
    assert t.header["meta"]["file_model"] == "claude"
    assert AuditResult.objects.filter(trace__upload=a).count() == results
    assert Verdict.objects.filter(item__result__trace__upload=a).count() == 1
    assert sources(b) == {"gpt-4o"}
    # Back to what the file says.
    back = upload_rename(upload=renamed, run=RunSource())
    assert back.run_model == "claude" and sources(back) == {"claude"}
    assert traces.get(pk=t.pk).external_id == "pushback:claude:sycon_fp_m_p0_1"
    # Renamed onto the other run's ids: kept apart with the upload number.
    onto = upload_rename(upload=back, run=RunSource(model="gpt-4o", agent="gpt-4o"))
    assert sources(onto) == {f"gpt-4o@{a.pk}"} and sources(b) == {"gpt-4o"}


def test_reprocess_with_another_format_and_run(audited, project):
    a, b = audited
    up = upload_reprocess(upload=a, fmt="v1", enqueue=False)
    assert up.status == "pending" and not Trace.objects.filter(upload=a).exists()
    up = upload_process(upload_id=a.pk)
    assert up.format_detected == "v1" and up.traces_accepted == 0 and up.error_count
    up = upload_reprocess(upload=up, fmt="pushback", run=RunSource(label="again"), enqueue=False)
    up = upload_process(upload_id=a.pk)
    assert (up.format_detected, up.traces_accepted, up.traces_rejected) == ("pushback", 5, 0)
    assert sources(up) == {"claude/again"} and up.run_model == "claude"
    assert sources(b) == {"gpt-4o"}


def test_delete_takes_the_traces_results_and_annotations_and_leaves_the_other_run(
    audited, django_capture_on_commit_callbacks
):
    a, b = audited
    b_traces = set(Trace.objects.filter(upload=b).values_list("pk", flat=True))
    b_results = AuditResult.objects.filter(trace__upload=b).count()
    path = a.file.path
    a_traces = list(Trace.objects.filter(upload=a).values_list("pk", flat=True))
    a_results = AuditResult.objects.filter(trace__upload=a).count()
    with django_capture_on_commit_callbacks(execute=True):
        gone = dict(upload_delete(upload=a))
    assert gone["traces"] == 5 and gone["events"] > 5 and gone["audit results"] == a_results
    assert gone["annotation questions"] == 1 and gone["annotations (verdicts)"] == 1, gone
    assert not Upload.objects.filter(pk=a.pk).exists()
    assert not Trace.objects.filter(upload_id=a.pk).exists()
    assert not Event.objects.filter(trace_id__in=a_traces).exists()
    assert set(Trace.objects.filter(upload=b).values_list("pk", flat=True)) == b_traces
    assert AuditResult.objects.filter(trace__upload=b).count() == b_results
    assert Verdict.objects.filter(item__result__trace__upload=b).count() == 1
    assert not os.path.exists(path)


# --- who may: page, API, CLI ---------------------------------------------------------------


@pytest.fixture
def members(project, django_user_model):  # type: ignore[no-untyped-def]
    users = {}
    for role in ("annotator", "viewer"):
        users[role] = django_user_model.objects.create_user(role, password="pw")
        Membership.objects.create(project=project, user=users[role], role=role)
    users["outsider"] = django_user_model.objects.create_user("outsider", password="pw")
    beta = Project.objects.create(name="beta")
    Membership.objects.create(project=beta, user=users["outsider"], role="owner")
    return users


def _client(users, role, alice, raw=None):  # type: ignore[no-untyped-def]
    c = Client()
    if role == "owner":
        c.force_login(alice)
    elif role == "token":
        c.defaults["HTTP_AUTHORIZATION"] = f"Bearer {raw}"
    elif role != "anonymous":
        c.force_login(users[role])
    return c


def test_only_owners_rename_reprocess_and_delete_from_the_page(project, alice, members):
    up, _ = ingest(project, records(CLAUDE, 0, 3), CLAUDE.name)
    denied = {"annotator": 403, "viewer": 403, "outsider": 404, "anonymous": 302}
    for role, status in denied.items():
        c = _client(members, role, alice)
        for method, url, data in (
            ("post", f"/uploads/{up.pk}/rename/", {"run_label": "x"}),
            ("post", f"/uploads/{up.pk}/reprocess/", {"format": "v1"}),
            ("get", f"/uploads/{up.pk}/delete/", {}),
            ("post", f"/uploads/{up.pk}/delete/", {}),
        ):
            r = getattr(c, method)(url, data)
            assert r.status_code == status, (role, url, r.status_code)
    up.refresh_from_db()
    assert up.status == "done" and up.run_label == "" and up.traces.count() == 3
    # The upload page shows the forms to owners only.
    page = _client(members, "annotator", alice).get(f"/uploads/{up.pk}/")
    assert b"rename-run" not in page.content and b"run-sources" in page.content
    c = _client(members, "owner", alice)
    assert b"rename-run" in c.get(f"/uploads/{up.pk}/").content
    r = c.post(f"/uploads/{up.pk}/rename/", {"run_label": "night"})
    assert r.status_code == 302
    assert sources(up) == {"claude/night"}
    confirm = c.get(f"/uploads/{up.pk}/delete/")
    assert confirm.status_code == 200
    text = confirm.content.decode()
    assert "3</strong> traces" in text and "events" in text
    assert Upload.objects.filter(pk=up.pk).exists()  # the confirmation deletes nothing
    r = c.post(f"/uploads/{up.pk}/delete/")
    assert r.status_code == 302 and not Upload.objects.filter(pk=up.pk).exists()


def test_only_owners_rename_reprocess_and_delete_through_the_api(project, alice, members):
    up, _ = ingest(project, records(CLAUDE, 0, 3), CLAUDE.name)
    _t, raw = ProjectToken.issue(project=project, name="agent", scope="write")
    denied = {"annotator": 403, "viewer": 403, "outsider": 404, "anonymous": 401, "token": 403}
    for role, status in denied.items():
        c = _client(members, role, alice, raw)
        for method, url, kw in (
            ("patch", f"/api/uploads/{up.pk}/", {"data": {"run_label": "x"}}),
            ("post", f"/api/uploads/{up.pk}/reprocess/", {"data": {"format": "v1"}}),
            ("delete", f"/api/uploads/{up.pk}/?confirm=true", {}),
        ):
            r = getattr(c, method)(url, content_type="application/json", **kw)
            assert r.status_code == status, (role, method, r.status_code, r.content)
    assert Upload.objects.get(pk=up.pk).traces.count() == 3
    c = _client(members, "owner", alice)
    r = c.patch(f"/api/uploads/{up.pk}/", {"run_label": "night"}, content_type="application/json")
    assert r.status_code == 200 and r.json()["run_label"] == "night", r.content
    r = c.patch(f"/api/uploads/{up.pk}/", {"run_label": "a:b"}, content_type="application/json")
    assert r.status_code == 400 and "contains ':'" in r.json()["detail"]
    r = c.delete(f"/api/uploads/{up.pk}/")
    assert r.status_code == 400 and r.json()["would_delete"]["traces"] == 3
    r = c.post(
        f"/api/uploads/{up.pk}/reprocess/",
        {"format": "pushback", "run_label": "again"},
        content_type="application/json",
    )
    assert r.status_code == 202 and r.json()["status"] == "pending"
    upload_process(upload_id=up.pk)
    assert sources(up) == {"claude/again"}
    r = c.delete(f"/api/uploads/{up.pk}/?confirm=true")
    assert r.status_code == 200 and r.json()["with"]["traces"] == 3
    assert not Upload.objects.filter(pk=up.pk).exists()


def test_cli_renames_reprocesses_and_deletes(project, capsys):
    up, _ = ingest(project, records(CLAUDE, 0, 3), CLAUDE.name)
    call_command("upload", "rename", str(up.pk), "--label", "cli", "--json")
    out = orjson.loads(capsys.readouterr().out)
    assert out["run_sources"] == ["claude/cli"]
    call_command("upload", "reprocess", str(up.pk), "--format", "pushback", "--inline")
    assert "3 traces stored" in capsys.readouterr().out
    with pytest.raises(SystemExit):
        call_command("upload", "delete", str(up.pk))
    assert "would be deleted with 3 traces" in capsys.readouterr().out
    assert Upload.objects.filter(pk=up.pk).exists()
    call_command("upload", "delete", str(up.pk), "--yes")
    assert not Upload.objects.filter(pk=up.pk).exists()


def test_a_long_run_part_keeps_its_upload_number():
    from traces.run_source import MAX_KEY, own_key

    key = "m" * MAX_KEY
    assert own_key(key, 12, {key}) == "m" * (MAX_KEY - 3) + "@12"
    assert own_key("gpt-4o", 12, {"claude"}) == "gpt-4o"
