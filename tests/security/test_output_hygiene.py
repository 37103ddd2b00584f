"""Files and headers going out: CSV cells, download names, file names cleaned at upload, the
Permissions-Policy header."""

from __future__ import annotations

import csv
import io

import pytest
from rest_framework.test import APIClient

from common.hygiene import clean_filename, csv_safe
from tests.builders.v1 import jsonl, simple_trace
from traces.models import Upload
from traces.services import upload_create, upload_process

pytestmark = pytest.mark.django_db


def test_csv_safe_neutralises_formula_starts_only():
    for bad in ["=1+1", "+1", "-1", "@x", "\tx", "\rx"]:
        assert csv_safe(bad) == "'" + bad
    assert csv_safe("plain") == "plain"
    assert csv_safe(-1) == -1 and csv_safe(2.5) == 2.5 and csv_safe(None) is None


def test_clean_filename_drops_paths_controls_quotes_and_bidi():
    assert clean_filename("../../etc/passwd") == "passwd"
    assert clean_filename("C:\\x\\run.jsonl") == "run.jsonl"
    assert clean_filename('a"\r\nSet-Cookie: x=1.jsonl') == "aSet-Cookie: x=1.jsonl"
    assert clean_filename("evil\u202egpj.jsonl") == "evilgpj.jsonl"
    assert clean_filename("") == "upload.jsonl" and clean_filename("..") == "upload.jsonl"
    long = clean_filename("a" * 300 + ".jsonl")
    assert len(long) == 255 and long.endswith(".jsonl")


def _bad_upload(project, filename: str) -> Upload:  # type: ignore[no-untyped-def]
    bad = (
        jsonl(simple_trace("ok"))
        + b'{"trace_id": "=HYPERLINK(\\"http://evil\\")", "type": "message", "role": 7}\n'
    )
    up, _ = upload_create(
        project=project, fileobj=bad, filename=filename, source="cli", enqueue=False
    )
    return upload_process(upload_id=up.pk)


def test_error_report_csv_neutralises_formulas(client, alice, project):
    up = _bad_upload(project, "r.jsonl")
    assert up.errors, "the test needs an error row"
    client.force_login(alice)
    r = client.get(f"/uploads/{up.pk}/errors/?format=csv")
    assert r.status_code == 200
    rows = list(csv.reader(io.StringIO(r.content.decode(), newline="")))
    cells = [c for row in rows[1:] for c in row]
    assert any(c.startswith("'=HYPERLINK") for c in cells), rows
    assert not any(c.startswith(("=", "+", "@")) for c in cells)


@pytest.mark.parametrize("fmt", ["csv", "json"])
def test_crlf_and_quote_in_a_stored_filename_do_not_500_or_forge_the_name(
    client, alice, project, fmt
):
    up = _bad_upload(project, "x.jsonl")
    # A name stored before names were cleaned at upload.
    Upload.objects.filter(pk=up.pk).update(filename='evil"\r\nX-Injected: 1\r\n.exe";.jsonl')
    client.force_login(alice)
    r = client.get(f"/uploads/{up.pk}/errors/?format={fmt}")
    assert r.status_code == 200
    cd = r["Content-Disposition"]
    assert "\r" not in cd and "\n" not in cd and "X-Injected" not in r.headers
    assert cd.startswith("attachment;") and '.exe"' not in cd


def test_filename_is_cleaned_at_upload_through_the_api(token):
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Bearer {token}")
    r = api.post(
        "/api/uploads/?filename=" + "..%2Fa%22b%0D%0Ac.jsonl",
        data=jsonl(simple_trace("n")),
        content_type="application/x-ndjson",
    )
    assert r.status_code == 202, r.content
    assert Upload.objects.get(pk=r.json()["id"]).filename == "abc.jsonl"


def test_permissions_policy_header(client):
    r = client.get("/accounts/login/")
    pp = r["Permissions-Policy"]
    assert "camera=()" in pp and "microphone=()" in pp and "geolocation=()" in pp


def test_anonymous_upload_body_is_refused_unread(client, project):
    """The body is a stream that fails when read: the refusal must come first."""

    class Unreadable:
        def read(self, *a):  # type: ignore[no-untyped-def]
            raise AssertionError("the body was read")

        readline = read

    r = client.generic(
        "POST",
        f"/projects/{project.pk}/upload/",
        b"",
        content_type="multipart/form-data; boundary=xyz",
        CONTENT_LENGTH=str(300 * 1024 * 1024),
        **{"wsgi.input": Unreadable()},
    )
    assert r.status_code == 302 and "/accounts/login/" in r["Location"]
    r = client.generic(
        "POST",
        "/api/uploads/",
        b"",
        content_type="application/x-ndjson",
        CONTENT_LENGTH=str(300 * 1024 * 1024),
        **{"wsgi.input": Unreadable()},
    )
    assert r.status_code == 401
