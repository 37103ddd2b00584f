"""Model endpoints are the owners': annotators, viewers and project tokens can neither read nor
set them (403), outsiders do not see them (404), and the key — once saved — appears in no page
or API answer, is stored only encrypted, and is set from the CLI through stdin."""

from __future__ import annotations

import io
import json

import pytest
from django.core.management import CommandError, call_command
from django.urls import reverse

from auditor.llm.endpoints import endpoint_key
from auditor.llm.key_crypto import decrypt
from auditor.models import ModelEndpoint
from traces.models import Membership, ProjectToken

pytestmark = pytest.mark.django_db

KEY = "sk-owner-secret-key-0123456789-WXYZ"
URL = "https://models.example.com/v1"


@pytest.fixture()
def members(project, django_user_model):  # type: ignore[no-untyped-def]
    out = {}
    for name, role in (("annie", "annotator"), ("vera", "viewer")):
        user = django_user_model.objects.create_user(name, password="pw")
        Membership.objects.create(project=project, user=user, role=role)
        out[role] = user
    return out


@pytest.fixture()
def saved(client, alice, project) -> ModelEndpoint:  # type: ignore[no-untyped-def]
    client.force_login(alice)
    api = reverse("auditor:api-model-endpoints", args=[project.name])
    r = client.post(
        api, {"name": "main", "base_url": URL, "model": "m", "key": KEY}, "application/json"
    )
    assert r.status_code == 201, r.content
    body = r.json()
    assert body["key"] == "stored (…WXYZ)" and body["key_set"] is True
    assert KEY not in r.content.decode()
    return ModelEndpoint.objects.get(pk=body["id"])


def test_the_key_is_stored_encrypted_and_never_shown_again(client, alice, project, saved):
    assert KEY not in saved.key_encrypted and decrypt(saved.key_encrypted) == KEY
    assert endpoint_key(saved) == KEY
    client.force_login(alice)
    urls = [
        reverse("auditor:api-model-endpoints", args=[project.pk]),
        reverse("auditor:api-model-endpoint", args=[saved.pk]),
        reverse("auditor:model-endpoints", args=[project.pk]),
        reverse("auditor:model-endpoint", args=[project.pk, saved.pk]),
        reverse("auditor:project", args=[project.pk]),
        reverse("auditor:run-new", args=[project.pk]),
    ]
    for url in urls:
        r = client.get(url)
        text = r.content.decode()
        assert r.status_code == 200, url
        assert KEY not in text and KEY[:-4] not in text and saved.key_encrypted not in text
    edit = client.get(urls[3]).content.decode()
    assert 'name="key"' in edit and 'value=""' in edit  # the key field is always empty
    # Changing other fields keeps the key; a new key replaces it; clear_key removes it.
    r = client.patch(urls[1], {"model": "m2"}, "application/json")
    assert r.status_code == 200 and r.json()["model"] == "m2"
    assert endpoint_key(ModelEndpoint.objects.get()) == KEY
    r = client.patch(urls[1], {"key": "sk-another-key-00000000"}, "application/json")
    assert "sk-another" not in r.content.decode()
    assert endpoint_key(ModelEndpoint.objects.get()) == "sk-another-key-00000000"
    r = client.patch(urls[1], {"clear_key": True}, "application/json")
    assert r.json()["key"] == "none" and endpoint_key(ModelEndpoint.objects.get()) == ""
    assert client.delete(urls[1]).status_code == 204 and not ModelEndpoint.objects.exists()


def test_annotators_viewers_and_tokens_cannot_read_or_set_endpoints(
    client, project, saved, members
):
    api_list = reverse("auditor:api-model-endpoints", args=[project.pk])
    api_one = reverse("auditor:api-model-endpoint", args=[saved.pk])
    page = reverse("auditor:model-endpoints", args=[project.pk])
    edit = reverse("auditor:model-endpoint", args=[project.pk, saved.pk])
    delete = reverse("auditor:model-endpoint-delete", args=[project.pk, saved.pk])
    new = {"name": "evil", "base_url": "https://evil.example.com/v1", "key": "x" * 20}
    for user in members.values():
        client.force_login(user)
        assert client.get(api_list).status_code == 403
        assert client.post(api_list, new, "application/json").status_code == 403
        assert client.get(api_one).status_code == 403
        assert (
            client.patch(api_one, {"base_url": new["base_url"]}, "application/json").status_code
            == 403
        )
        assert client.delete(api_one).status_code == 403
        assert client.get(page).status_code == 403
        assert client.post(page, new).status_code == 403
        assert client.get(edit).status_code == 403
        assert client.post(edit, {"base_url": new["base_url"]}).status_code == 403
        assert client.post(delete).status_code == 403
        project_page = client.get(reverse("auditor:project", args=[project.pk])).content.decode()
        assert "model-endpoints-link" not in project_page and KEY not in project_page
    _t, raw = ProjectToken.issue(project=project, name="agent", scope=ProjectToken.Scope.READ)
    client.logout()
    auth = {"HTTP_AUTHORIZATION": f"Bearer {raw}"}
    assert client.get(api_list, **auth).status_code == 403
    assert client.post(api_list, new, "application/json", **auth).status_code == 403
    ep = ModelEndpoint.objects.get()
    assert (ep.name, ep.base_url, decrypt(ep.key_encrypted)) == ("main", URL, KEY)


def test_outsiders_see_no_endpoint(client, charlie, project, saved):
    client.force_login(charlie)
    assert client.get(reverse("auditor:api-model-endpoints", args=[project.pk])).status_code == 404
    assert client.get(reverse("auditor:api-model-endpoint", args=[saved.pk])).status_code == 404
    assert client.get(reverse("auditor:model-endpoints", args=[project.pk])).status_code == 404


def test_no_key_source_but_the_operators_list(client, alice, project, settings):
    client.force_login(alice)
    api = reverse("auditor:api-model-endpoints", args=[project.pk])
    base = {"name": "e", "base_url": URL}
    for field, value in (("api_key_env", "DJANGO_SECRET_KEY"), ("api_key_file", "/etc/hostname")):
        r = client.post(api, {**base, field: value}, "application/json")
        assert r.status_code == 400 and f"{field}: not accepted" in r.content.decode()
    r = client.post(api, {**base, "key_env": "DATABASE_URL"}, "application/json")
    assert r.status_code == 400 and "not a variable the operator allows" in r.content.decode()
    r = client.post(api, {**base, "key": "two\nlines-of-key"}, "application/json")
    assert r.status_code == 400 and "one line" in r.content.decode()
    r = client.post(api, {**base, "colour": "red"}, "application/json")
    assert r.status_code == 400 and "colour: not an endpoint field" in r.content.decode()
    r = client.post(api, ["not", "an", "object"], "application/json")
    assert r.status_code == 400
    settings.TA_MODEL_KEY_ENVS = ["TEAM_MODEL_KEY"]
    r = client.post(api, {**base, "key_env": "TEAM_MODEL_KEY"}, "application/json")
    assert r.status_code == 201 and r.json()["key"] == "operator variable TEAM_MODEL_KEY"
    r = client.post(api, {**base}, "application/json")
    assert r.status_code == 400 and "already has an endpoint 'e'" in r.content.decode()
    assert ModelEndpoint.objects.count() == 1


def test_the_cli_reads_the_key_from_stdin_and_never_prints_it(project, monkeypatch):
    out = io.StringIO()
    monkeypatch.setattr("sys.stdin", io.StringIO(KEY + "\n"))
    call_command(
        "model_endpoint",
        "--project",
        project.name,
        "set",
        "cli",
        "--base-url",
        URL,
        "--model",
        "m",
        "--key-stdin",
        stdout=out,
    )
    call_command("model_endpoint", "--project", project.name, "list", stdout=out)
    assert KEY not in out.getvalue() and "stored (…WXYZ)" in out.getvalue()
    assert endpoint_key(ModelEndpoint.objects.get(name="cli")) == KEY
    with pytest.raises(CommandError, match="base_url: .*loopback"):
        call_command(
            "model_endpoint",
            "--project",
            project.name,
            "set",
            "bad",
            "--base-url",
            "http://127.1:5432/",
        )
    call_command("model_endpoint", "--project", project.name, "delete", "cli", stdout=out)
    assert not ModelEndpoint.objects.exists()
    assert json.dumps(list(ModelEndpoint.objects.values())) == "[]"


def test_a_rejected_form_never_sends_the_typed_key_back(client, alice, project):
    client.force_login(alice)
    page = reverse("auditor:model-endpoints", args=[project.pk])
    r = client.post(page, {"name": "x", "base_url": "http://10.0.0.1/v1", "key": KEY})
    text = r.content.decode()
    assert r.status_code == 400 and "10.0.0.1 is a private address" in text
    assert KEY not in text and 'value="x"' in text  # the other fields are kept
    assert not ModelEndpoint.objects.exists()
