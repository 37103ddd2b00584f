"""Export pages, API and CLI: who may see what (owner Alice, teammate Bob, outsider Charlie, a
project token), 202/200/404/409, htmx polling and the stable download URL."""

from __future__ import annotations

import hashlib
import json

import pytest
from django.core.management import CommandError, call_command
from django.urls import reverse

from auditor.exports.services import export_build, export_create
from auditor.models import Export
from traces.models import Project, ProjectToken

pytestmark = [pytest.mark.django_db, pytest.mark.urls("tests.export.urls")]


def body(response) -> bytes:  # type: ignore[no-untyped-def]
    return b"".join(response.streaming_content)


@pytest.fixture
def built(audited, alice):  # type: ignore[no-untyped-def]
    project, _run = audited
    export = export_create(project=project, format="csv", user=alice, enqueue=False)
    return export_build(export_id=export.pk)


def test_owner_asks_for_an_export_on_the_page_and_downloads_it(client, alice, audited):
    project, run = audited
    client.force_login(alice)
    page = client.get(reverse("exports:list", args=[project.pk]))
    assert page.status_code == 200 and b'name="format"' in page.content
    assert f'value="{run.pk}"'.encode() in page.content
    r = client.post(
        reverse("exports:list", args=[project.pk]),
        {"format": "parquet", "policy": ["checklist"], "transition": ["rescue", "harm"]},
    )
    export = Export.objects.get()
    assert r.status_code == 302 and r["Location"] == export.get_absolute_url()
    assert export.filters == {
        "runs": [run.pk],
        "policy": ["checklist"],
        "transition": ["harm", "rescue"],
    }
    assert export.created_by == alice and export.status == "pending"
    # While it builds, the page polls itself (htmx) and offers no download yet.
    pending = client.get(export.get_absolute_url())
    assert b'hx-trigger="every 1s"' in pending.content and b'id="download"' not in pending.content
    assert client.get(export.download_url).status_code == 409
    export_build(export_id=export.pk)
    export.refresh_from_db()
    fragment = client.get(export.get_absolute_url(), headers={"HX-Request": "true"})
    assert fragment.status_code == 200 and b"<html" not in fragment.content
    assert b"hx-trigger" not in fragment.content and b'id="download"' in fragment.content
    assert export.manifest["content_hash"].encode() in fragment.content
    download = client.get(export.download_url)
    assert download.status_code == 200
    data = body(download)
    assert hashlib.sha256(data).hexdigest() == export.manifest["content_hash"]
    assert download["ETag"] == f'"{export.manifest["content_hash"]}"'
    assert f"{project.name}-export-{export.pk}.parquet" in download["Content-Disposition"]
    listing = client.get(reverse("exports:list", args=[project.pk]))
    assert export.download_url.encode() in listing.content


def test_page_form_rejects_a_bad_format(client, alice, audited):
    project, _run = audited
    client.force_login(alice)
    r = client.post(reverse("exports:list", args=[project.pk]), {"format": "xlsx"})
    assert r.status_code == 400 and b"unknown format" in r.content
    assert not Export.objects.exists()


def test_teammate_sees_and_downloads(client, bob, built):
    client.force_login(bob)
    assert client.get(reverse("exports:list", args=[built.project.pk])).status_code == 200
    assert client.get(built.get_absolute_url()).status_code == 200
    assert client.get(built.download_url).status_code == 200


def test_outsider_cannot_export(client, charlie, built):
    """Charlie should have no access to Alice's stuff: 404 everywhere, so ids cannot be probed."""
    client.force_login(charlie)
    project = built.project
    assert client.get(reverse("exports:list", args=[project.pk])).status_code == 404
    assert (
        client.post(reverse("exports:list", args=[project.pk]), {"format": "csv"}).status_code
        == 404
    )
    assert client.get(built.get_absolute_url()).status_code == 404
    assert client.get(built.download_url).status_code == 404
    assert client.get(reverse("exports:api-detail", args=[built.pk])).status_code == 404
    assert client.get(reverse("exports:api-download", args=[built.pk])).status_code == 404
    r = client.post(
        reverse("exports:api-list"),
        {"project": project.name, "format": "csv"},
        content_type="application/json",
    )
    assert r.status_code == 404
    assert client.get(reverse("exports:api-list")).json() == []
    assert Export.objects.count() == 1


def test_anonymous_is_sent_to_log_in(client, built):
    r = client.get(built.get_absolute_url())
    assert r.status_code == 302 and "/accounts/login/" in r["Location"]
    assert client.get(reverse("exports:api-detail", args=[built.pk])).status_code in (401, 403)


def test_api_create_202_status_200_download(client, alice, audited):
    project, run = audited
    client.force_login(alice)
    r = client.post(
        reverse("exports:api-list"),
        {"project": project.name, "format": "jsonl", "filters": {"benchmark": ["hand"]}},
        content_type="application/json",
    )
    assert r.status_code == 202, r.content
    data = r.json()
    assert r["Location"] == data["status_url"] and data["status"] == "pending"
    assert data["download_url"] is None
    assert data["filters"] == {"runs": [run.pk], "benchmark": ["hand"]}
    status = client.get(data["status_url"])
    assert status.status_code == 200 and status.json()["status"] == "pending"
    assert client.get(reverse("exports:api-download", args=[data["id"]])).status_code == 409
    export_build(export_id=data["id"])
    done = client.get(data["status_url"]).json()
    assert done["status"] == "done" and done["rows"] == 3
    assert done["manifest"]["counts"]["traces"] == 3
    download = client.get(done["download_url"])
    assert download.status_code == 200
    data = body(download)
    assert hashlib.sha256(data).hexdigest() == done["manifest"]["content_hash"]
    lines = [json.loads(x) for x in data.splitlines()]
    assert sorted(x["trace"]["trace_id"] for x in lines) == ["hand-0", "hand-1", "hand-2"]


def test_api_rejects_bad_filters_with_400(client, alice, audited):
    project, _run = audited
    client.force_login(alice)
    r = client.post(
        reverse("exports:api-list"),
        {"project": project.name, "format": "csv", "filters": {"policy": ["nope"]}},
        content_type="application/json",
    )
    assert r.status_code == 400 and "nope" in r.content.decode()
    r = client.post(
        reverse("exports:api-list"),
        {"project": project.name, "format": "xlsx"},
        content_type="application/json",
    )
    assert r.status_code == 400


def test_project_token_reads_its_projects_exports_only(client, token, built):
    auth = {"Authorization": f"Bearer {token}"}
    assert (
        client.get(reverse("exports:api-detail", args=[built.pk]), headers=auth).status_code == 200
    )
    download = client.get(reverse("exports:api-download", args=[built.pk]), headers=auth)
    assert download.status_code == 200
    assert hashlib.sha256(body(download)).hexdigest() == built.manifest["content_hash"]
    assert [e["id"] for e in client.get(reverse("exports:api-list"), headers=auth).json()] == [
        built.pk
    ]
    r = client.post(
        reverse("exports:api-list"),
        {"project": built.project.name, "format": "csv"},
        content_type="application/json",
        headers=auth,
    )
    assert r.status_code == 403
    other = Project.objects.create(name="other")
    _t, foreign = ProjectToken.issue(project=other, name="x", scope="read")
    bad = {"Authorization": f"Bearer {foreign}"}
    assert (
        client.get(reverse("exports:api-detail", args=[built.pk]), headers=bad).status_code == 404
    )
    assert (
        client.get(reverse("exports:api-download", args=[built.pk]), headers=bad).status_code == 404
    )


def test_cli_exports_inline_to_a_path_and_prints_the_manifest(audited, tmp_path, capsys):
    project, run = audited
    out = tmp_path / "snap.parquet"
    call_command(
        "export",
        "--project",
        project.name,
        "--format",
        "parquet",
        "--out",
        str(out),
        "--run",
        str(run.pk),
        "--policy",
        "commit",
        "--json",
    )
    manifest = json.loads(capsys.readouterr().out)
    assert manifest["content_hash"] == hashlib.sha256(out.read_bytes()).hexdigest()
    assert manifest["filters"] == {"runs": [run.pk], "policy": ["commit"]}
    import pyarrow.parquet as pq

    table = pq.read_table(out)
    assert table.num_rows == manifest["counts"]["rows"] > 0
    assert set(table.column("policy").to_pylist()) == {"commit"}


def test_cli_prints_the_stored_path_and_rejects_bad_input(audited, capsys):
    project, _run = audited
    call_command("export", "--project", project.name, "--format", "csv")
    out = capsys.readouterr().out.strip().splitlines()
    assert out[0].startswith("export #") and out[-1].endswith(".csv")
    with pytest.raises(CommandError, match="no project"):
        call_command("export", "--project", "nope", "--format", "csv")
    with pytest.raises(CommandError, match="no audit runs"):
        call_command("export", "--project", project.name, "--format", "csv", "--run", "999999")


@pytest.mark.parametrize(
    "payload",
    [
        {"project": "alpha", "format": "csv", "filters": {"runs": [2**70]}},
        {"project": "alpha", "format": "csv", "filters": {"runs": [0]}},
        {"project": "alpha", "format": "csv", "filters": {"model": ["a\x00b"]}},
        {"project": "alpha", "format": "csv", "filters": "everything"},
        {"project": "alpha", "format": "csv", "filters": {"policy": "checklist"}},
        {"project": "\u00b2", "format": "csv"},
        {"project": "9" * 40, "format": "csv"},
        {"project": "alpha\x00", "format": "csv"},
        {"format": "csv"},
        [],
    ],
)
def test_api_answers_odd_input_without_server_errors(client, alice, audited, payload):
    client.force_login(alice)
    r = client.post(reverse("exports:api-list"), payload, content_type="application/json")
    assert r.status_code in (400, 404), r.content


def test_page_and_list_answer_odd_input_without_server_errors(client, alice, audited):
    project, _run = audited
    client.force_login(alice)
    r = client.post(
        reverse("exports:list", args=[project.pk]),
        {"format": "csv", "runs": ["99999999999999999999999"], "model": "x\x00"},
    )
    assert r.status_code == 400
    # NUL in a query string: a 400 naming the parameter (auditor.middleware.InputHygiene)
    r = client.get(reverse("exports:api-list"), {"project": "a\x00"})
    assert r.status_code == 400 and "project" in r.json()["detail"]
