"""Run identity: two runs of the same tasks go into one project, every trace is
accepted, and the model filter separates them. Real data: the shared Reflexion HumanEval run and
BFCL result files built from the bfcl-eval package's own tasks and API classes."""

from __future__ import annotations

import orjson
import pytest
from django.core.management import call_command
from django.urls import reverse

from tests.builders.v1 import jsonl, simple_trace
from tests.real_data import real_file
from traces.models import Trace, Upload
from traces.run_source import RunSource, qualify
from traces.samples.bfcl import generate
from traces.services import UploadRejected, upload_create, upload_process

pytestmark = pytest.mark.django_db

HUMANEVAL = real_file("ldb/humaneval_reflexion_gpt-3.5-turbo-0613.jsonl")


def ingest(project, data: bytes, filename: str, **kw) -> Upload:  # type: ignore[no-untyped-def]
    upload, created = upload_create(
        project=project, fileobj=data, filename=filename, source="cli", enqueue=False, **kw
    )
    if created:
        upload = upload_process(upload_id=upload.pk)
    return upload


def first_attempts(raw: bytes) -> bytes:
    """Another run of the same tasks, shaped like the real one: each task stopped after its
    first implementation (is_passing follows that attempt's feedback; the hidden tests of an
    unrepaired attempt are not known to pass)."""
    out = []
    for line in raw.splitlines():
        rec = orjson.loads(line)
        rec["implementations"] = rec["implementations"][:1]
        rec["test_feedback"] = rec["test_feedback"][:1]
        rec["is_passing"] = not rec["test_feedback"][0]
        rec["is_solved"] = rec["is_solved"] and len(rec["test_feedback"]) == 1
        rec["reflections"] = []
        out.append(orjson.dumps(rec))
    return b"\n".join(out) + b"\n"


def listed(client, project, **params) -> set[str]:  # type: ignore[no-untyped-def]
    from urllib.parse import urlencode

    url = reverse("auditor:trace-list", args=[project.pk]) + "?" + urlencode(params)
    ids: set[str] = set()
    while url:
        r = client.get(url)
        assert r.status_code == 200
        ids |= {row["trace"].external_id for row in r.context["rows"]}
        nxt = r.context["next_url"]
        url = reverse("auditor:trace-list", args=[project.pk]) + nxt if nxt else None
    return ids


def test_two_humaneval_runs_and_two_bfcl_runs_coexist_and_the_model_filter_separates_them(
    project, alice, client, tmp_path
):
    raw = HUMANEVAL.read_bytes()
    n = len(raw.splitlines())
    a = ingest(project, raw, HUMANEVAL.name)  # model and method from the file name
    b = ingest(
        project, first_attempts(raw), "humaneval_run2.jsonl", run=RunSource(model="gpt-4o-mini")
    )
    for up in (a, b):
        assert up.status == "done" and up.traces_rejected == 0 and up.traces_accepted == n, (
            up.errors
        )
    assert (a.run_model, a.run_agent, a.run_benchmark) == (
        "gpt-3.5-turbo-0613",
        "reflexion",
        "humaneval",
    )
    assert (b.run_model, b.run_agent) == ("gpt-4o-mini", "")
    assert Trace.objects.get(upload=a, task_id="HumanEval/45").external_id == (
        "repair:reflexion/gpt-3.5-turbo-0613:HumanEval/45"
    )
    assert (
        Trace.objects.get(upload=b, task_id="HumanEval/45").external_id
        == "repair:gpt-4o-mini:HumanEval/45"
    )

    # Two BFCL runs of the same tasks; the model is read from the result directory.
    paths = []
    for model, seed in (("openai_gpt-oss-120b", 0), ("gpt-4o-2024-11-20-FC", 1)):
        ((name, records),) = generate(("base",), per_category=4, seed=seed).items()
        path = tmp_path / "result" / model / "multi_turn" / name
        path.parent.mkdir(parents=True)
        path.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in records))
        paths.append(path)
    bfcl = [ingest(project, p.read_bytes(), p.name, origin_path=str(p)) for p in paths]
    for up in bfcl:
        assert up.status == "done" and (up.traces_accepted, up.traces_rejected) == (4, 0), up.errors
    assert [u.run_model for u in bfcl] == ["openai_gpt-oss-120b", "gpt-4o-2024-11-20-FC"]
    assert Trace.objects.filter(task_id="multi_turn_base_0").count() == 2

    client.force_login(alice)
    every = listed(client, project)
    assert len(every) == 2 * n + 8
    by_model = {
        m: listed(client, project, model=m)
        for m in (
            "gpt-3.5-turbo-0613",
            "gpt-4o-mini",
            "openai_gpt-oss-120b",
            "gpt-4o-2024-11-20-FC",
        )
    }
    assert [len(v) for v in by_model.values()] == [n, n, 4, 4]
    assert set().union(*by_model.values()) == every  # the runs partition the project
    assert by_model["gpt-4o-mini"] == set(
        Trace.objects.filter(upload=b).values_list("external_id", flat=True)
    )

    # The API filters the same way, and names the run of each upload.
    r = client.get("/api/traces/", {"model": "openai_gpt-oss-120b"})
    assert (
        r.status_code == 200
        and {t["trace_id"] for t in r.json()} == by_model["openai_gpt-oss-120b"]
    )


def test_identical_reupload_is_a_no_op_and_a_second_run_of_one_model_is_kept_apart(project):
    raw = HUMANEVAL.read_bytes()
    first = ingest(project, raw, HUMANEVAL.name)
    again, created = upload_create(
        project=project, fileobj=raw, filename="renamed.jsonl", source="web", enqueue=False
    )
    assert not created and again.pk == first.pk
    # The same model and method once more (a different sampling seed), unnamed: every trace is
    # stored, under the upload's own run part — none under the first run's ids.
    rerun = first_attempts(raw)
    second = ingest(project, rerun, HUMANEVAL.name)
    assert (second.traces_accepted, second.traces_rejected) == (first.traces_accepted, 0)
    key = f"reflexion/gpt-3.5-turbo-0613@{second.pk}"
    assert set(Trace.objects.filter(upload=second).values_list("run_source", flat=True)) == {key}
    assert Trace.objects.get(upload=second, task_id="HumanEval/0").external_id == (
        f"repair:{key}:HumanEval/0"
    )
    assert set(Trace.objects.filter(upload=first).values_list("run_source", flat=True)) == {
        "reflexion/gpt-3.5-turbo-0613"
    }
    # ... with a label, a third run is named by it.
    labelled = ingest(project, rerun + b"\n", HUMANEVAL.name, run=RunSource(label="seed-2"))
    assert labelled.traces_rejected == 0 and labelled.traces_accepted == first.traces_accepted
    t = Trace.objects.get(upload=labelled, task_id="HumanEval/0")
    assert t.external_id == "repair:reflexion/gpt-3.5-turbo-0613/seed-2:HumanEval/0"
    assert t.run_label == "seed-2" and t.header["labels"]["run"] == "seed-2"
    assert t.run_source == "reflexion/gpt-3.5-turbo-0613/seed-2"


def test_v1_trace_ids_are_kept_as_given_and_the_stated_run_fills_blank_columns(project):
    events = simple_trace("mine-1")
    events[0].pop("model")
    up = ingest(project, jsonl(events), "mine.jsonl", run=RunSource(model="llama-3", label="night"))
    t = Trace.objects.get(upload=up)
    assert t.external_id == "mine-1" and t.model == "llama-3" and t.run_label == "night"
    assert "model" not in t.header  # the payload stays exactly as uploaded
    assert up.run_model == "llama-3"


def test_stated_model_overrides_the_file_and_keeps_what_it_said(project):
    up = ingest(
        project, HUMANEVAL.read_bytes(), HUMANEVAL.name, run=RunSource(model="gpt-3.5-turbo")
    )
    t = Trace.objects.filter(upload=up).first()
    assert t.model == "gpt-3.5-turbo" and t.header["meta"]["file_model"] == "gpt-3.5-turbo-0613"
    assert t.external_id.startswith("repair:reflexion/gpt-3.5-turbo:")


@pytest.mark.parametrize(
    ("run", "message"),
    [
        (RunSource(model="a:b"), "run model 'a:b' contains ':'"),
        (RunSource(label="x:y"), "run label 'x:y' contains ':'"),
        (RunSource(agent="x" * 201), "run agent is longer than 200 characters"),
        (RunSource(benchmark="a\x00b"), "run benchmark 'a"),
    ],
)
def test_a_run_part_that_cannot_be_in_a_trace_id_is_refused_clearly(project, run, message):
    with pytest.raises(UploadRejected, match=message.replace("(", r"\(")):
        upload_create(project=project, fileobj=b"{}", filename="x.jsonl", source="cli", run=run)


def test_api_and_cli_take_the_run(client, alice, project, tmp_path):
    client.force_login(alice)
    body = jsonl(simple_trace("api-1"))
    r = client.post(
        "/api/uploads/?project=alpha&filename=a.jsonl&run_model=m-api&run_label=l1",
        data=body,
        content_type="application/x-ndjson",
    )
    assert r.status_code == 202, r.content
    assert (r.json()["run_model"], r.json()["run_label"]) == ("m-api", "l1")
    r = client.post(
        "/api/uploads/?project=alpha&filename=b.jsonl&run_label=a:b",
        data=body + b"\n",
        content_type="application/x-ndjson",
    )
    assert r.status_code == 400 and "contains ':'" in r.json()["detail"]

    path = (
        tmp_path / "result" / "my-model-FC" / "multi_turn" / "BFCL_v4_multi_turn_base_result.json"
    )
    path.parent.mkdir(parents=True)
    ((_, records),) = generate(("base",), per_category=2, seed=3).items()
    path.write_bytes(b"".join(orjson.dumps(x) + b"\n" for x in records))
    call_command(
        "ingest", str(path), "--project", "alpha", "--inline", "--json", "--label", "cli-run"
    )
    up = Upload.objects.get(filename=path.name)
    assert (up.run_model, up.run_label, up.traces_accepted) == ("my-model-FC", "cli-run", 2)
    assert set(Trace.objects.filter(upload=up).values_list("external_id", flat=True)) == {
        "bfcl:bfcl-eval/my-model-FC/cli-run:multi_turn_base_0",
        "bfcl:bfcl-eval/my-model-FC/cli-run:multi_turn_base_1",
    }


def test_qualify_puts_the_run_after_the_importer_prefix():
    assert qualify("repair:HumanEval/1", "ldb/gpt-4") == "repair:ldb/gpt-4:HumanEval/1"
    assert qualify("plain", "m") == "m:plain"
    assert qualify("repair:HumanEval/1", "") == "repair:HumanEval/1"
    assert RunSource().key({"agent": "gpt-4o", "model": "gpt-4o"}) == "gpt-4o"


def test_a_model_named_org_slash_model_works_in_ids_pages_filters_and_exports(
    project, alice, client, tmp_path
):
    """`org/model` is how most models are named: the CLI takes it, the trace ids carry it, and
    the trace page, the list's and the API's model filters and an export filtered by it find
    the run's traces and no other."""
    from auditor.exports.selectors import export_open
    from auditor.exports.services import export_build, export_create

    paths = []
    for seed in (0, 1):
        ((name, records),) = generate(("base",), per_category=2, seed=seed).items()
        path = tmp_path / f"run{seed}" / name
        path.parent.mkdir()
        path.write_bytes(b"".join(orjson.dumps(x) + b"\n" for x in records))
        paths.append(path)
    for path, model in zip(paths, ("openai/gpt-oss-20b", "openai/gpt-oss-120b"), strict=True):
        call_command(
            "ingest", str(path), "--project", "alpha", "--inline", "--json", "--model", model
        )
    small = Trace.objects.filter(model="openai/gpt-oss-20b").order_by("external_id")
    assert list(small.values_list("external_id", flat=True)) == [
        "bfcl:bfcl-eval/openai/gpt-oss-20b:multi_turn_base_0",
        "bfcl:bfcl-eval/openai/gpt-oss-20b:multi_turn_base_1",
    ]
    assert set(small.values_list("run_source", flat=True)) == {"bfcl-eval/openai/gpt-oss-20b"}

    client.force_login(alice)
    assert client.get(small[0].get_absolute_url()).status_code == 200
    expected = set(small.values_list("external_id", flat=True))
    assert listed(client, project, model="openai/gpt-oss-20b") == expected
    r = client.get("/api/traces/", {"model": "openai/gpt-oss-20b"})
    assert r.status_code == 200 and {t["trace_id"] for t in r.json()} == expected

    export = export_create(
        project=project, format="jsonl", filters={"model": ["openai/gpt-oss-20b"]}, enqueue=False
    )
    built = export_build(export_id=export.pk)
    assert built is not None and built.status == "done", built and built.error
    with export_open(built) as fh:
        exported = {orjson.loads(x)["trace"]["trace_id"] for x in fh.read().splitlines()}
    assert exported == expected
