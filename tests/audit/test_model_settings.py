"""A run's model settings from the form, the CLI and the service: what is stored (the project's
model endpoint by id and name, its URL and model — never a key nor a source of one), and a
clear error for each bad input."""

from __future__ import annotations

import pytest
from django.core.management import CommandError, call_command
from django.urls import reverse

from auditor.llm.endpoints import endpoint_save
from auditor.llm.settings import model_settings_from
from auditor.models import AuditRun
from auditor.runs.services import AuditRejected, audit_run_create, parse_set_options
from traces.models import Membership

pytestmark = pytest.mark.django_db

URL = "https://models.example.com/v1"
FIELDS = {"endpoint": "qwen"}


@pytest.fixture(autouse=True)
def endpoint(project):  # type: ignore[no-untyped-def]
    """The project's endpoint "qwen" (a public name: it is not resolved when it has none)."""
    return endpoint_save(
        project=project, values={"name": "qwen", "base_url": URL, "model": "Qwen/Qwen3-8B"}
    )


def settings_for(project, fields, extra=None, judge="heuristic"):  # type: ignore[no-untyped-def]
    return model_settings_from(fields, extra, judge=judge, project=project)


def test_no_model_is_an_empty_setting_and_llm_defaults_to_the_verifier_use(project, endpoint):
    assert settings_for(project, {}) == {}
    assert settings_for(project, {"endpoint": " ", "model": ""}) == {}
    s = settings_for(project, {**FIELDS, "max_calls": "50"}, judge="llm")
    assert s["uses"] == ["judge"] and s["max_calls"] == 50 and s["max_tokens"] is None
    assert s["endpoint"]["base_url"] == URL and s["endpoint"]["model"] == "Qwen/Qwen3-8B"
    assert (s["endpoint_id"], s["endpoint_name"]) == (endpoint.pk, "qwen")
    assert s["endpoint"]["temperature"] == 0 and "api_key_env" not in s["endpoint"]
    s = settings_for(project, {**FIELDS, "model": "other", "uses": "twin, recheck"}, {"timeout": 5})
    assert s["uses"] == ["twin", "recheck"] and s["endpoint"]["timeout"] == 5
    assert s["endpoint"]["model"] == "other"
    assert settings_for(project, {"endpoint": str(endpoint.pk), "uses": "twin"})["endpoint_id"]


@pytest.mark.parametrize(
    "fields,extra,message",
    [
        ({**FIELDS, "api_key": "sk-x"}, None, "api_key: not accepted"),
        (FIELDS, {"api_key": "sk-x"}, "api_key: not accepted"),
        ({**FIELDS, "api_key_env": "DJANGO_SECRET_KEY"}, None, "api_key_env: not accepted"),
        (FIELDS, {"api_key_file": "/etc/hostname"}, "api_key_file: not accepted"),
        ({**FIELDS, "base_url": "http://127.0.0.1:9/v1"}, None, "base_url: not accepted"),
        (FIELDS, {"base_url": "http://x/v1"}, "base_url: not accepted"),
        ({"uses": ["judge"]}, None, "endpoint: name one of the project's model endpoints"),
        ({"model": "m"}, None, "endpoint: name one of the project's model endpoints"),
        ({"endpoint": "nope", "uses": "twin"}, None, "endpoint: the project has no model endpoint"),
        ({**FIELDS}, None, "uses: choose what the model is for"),
        ({**FIELDS, "uses": "judge,telepathy"}, None, "unknown model uses: telepathy"),
        ({**FIELDS, "uses": "twin", "max_calls": "lots"}, None, "max_calls: expected a whole"),
        ({**FIELDS, "uses": "twin", "max_tokens": "-3"}, None, "max_tokens: expected a non-neg"),
        ({**FIELDS, "uses": "twin"}, {"timeout": 0}, "timeout: expected seconds"),
        ({**FIELDS, "uses": "twin"}, {"colour": "red"}, "unknown model settings: colour"),
    ],
)
def test_bad_model_settings_say_what_is_wrong(project, fields, extra, message):
    with pytest.raises(ValueError, match=message):
        settings_for(project, fields, extra)


def test_another_projects_endpoint_is_unknown(project, django_user_model):
    from traces.models import Project

    other = Project.objects.create(name="beta")
    endpoint_save(project=other, values={"name": "theirs", "base_url": URL, "model": "m"})
    with pytest.raises(ValueError, match="the project has no model endpoint 'theirs'"):
        settings_for(project, {"endpoint": "theirs", "uses": "twin"})


def test_judges_and_their_model(project):
    s = settings_for(project, FIELDS, judge="llm")
    run = audit_run_create(project=project, judge="openai", model_settings=s, enqueue=False)
    assert run.judge == "llm" and run.model_settings == s  # openai: the llm judge's old name
    with pytest.raises(AuditRejected, match="judge llm: configure a model"):
        audit_run_create(project=project, judge="llm", enqueue=False)
    with pytest.raises(AuditRejected, match="model use 'judge' is the llm judge's verifier"):
        audit_run_create(project=project, judge="heuristic", model_settings=s, enqueue=False)
    with pytest.raises(AuditRejected, match="unknown judge 'oracle'"):
        audit_run_create(project=project, judge="oracle", enqueue=False)
    for judge in ("heuristic", "human", "recorded"):
        assert audit_run_create(project=project, judge=judge, enqueue=False).judge == judge


def test_set_model_fields_are_endpoint_options():
    per_policy, options = parse_set_options(["model.timeout=20", "model.offline=true"])
    assert per_policy == {} and options == {"model.timeout": 20, "model.offline": True}


def test_the_form_stores_model_settings_and_shows_errors(client, alice, project, endpoint):
    client.force_login(alice)
    url = reverse("auditor:run-new", args=[project.pk])
    page = client.get(url).content.decode()
    assert 'name="model_endpoint"' in page and 'value="recheck"' in page
    assert 'value="qwen"' in page
    for field in ("model_api_key", "model_base_url", "model_api_key_env"):
        assert f'name="{field}"' not in page  # no URL, no key, no key source
    resp = client.post(
        url,
        {
            "policies": ["twincheck"],
            "judge": "llm",
            "model_endpoint": "qwen",
            "model_max_calls": "100",
            "model_max_tokens": "20000",
            "model_uses": ["judge", "twin"],
        },
    )
    assert resp.status_code == 302
    run = AuditRun.objects.get()
    assert run.judge == "llm" and run.model_settings["uses"] == ["judge", "twin"]
    assert run.model_settings["endpoint_id"] == endpoint.pk
    assert run.model_settings["endpoint"]["base_url"] == URL
    assert (run.model_settings["max_calls"], run.model_settings["max_tokens"]) == (100, 20000)
    resp = client.post(
        url,
        {
            "judge": "llm",
            "model_endpoint": "qwen",
            "model_api_key_env": "DJANGO_SECRET_KEY",
            "label": "kept",
        },
    )
    assert resp.status_code == 400
    body = resp.content.decode()
    assert "model settings: api_key_env: not accepted" in body
    assert 'value="kept"' in body  # the form keeps what was typed
    assert AuditRun.objects.count() == 1


def test_only_owners_use_a_model_endpoint_annotators_audit_without(
    client, project, endpoint, django_user_model
):
    annie = django_user_model.objects.create_user("annie", password="pw")
    Membership.objects.create(project=project, user=annie, role=Membership.Role.ANNOTATOR)
    client.force_login(annie)
    url = reverse("auditor:run-new", args=[project.pk])
    page = client.get(url).content.decode()
    assert 'name="model_endpoint"' not in page and "qwen" not in page
    resp = client.post(url, {"judge": "llm", "model_endpoint": "qwen", "model_uses": ["judge"]})
    assert resp.status_code == 403
    assert client.post(url, {"policies": ["twincheck"]}).status_code == 302  # no model: fine
    api = reverse("auditor:api-runs")
    body = {"project": project.name, "judge": "llm", "model": {"endpoint": "qwen"}}
    assert client.post(api, body, content_type="application/json").status_code == 403
    assert AuditRun.objects.filter(model_settings={}).count() == 1
    assert AuditRun.objects.count() == 1


def test_the_cli_refuses_a_key_and_creates_no_run(project):
    with pytest.raises(CommandError, match="api_key: not accepted"):
        call_command(
            "audit",
            "--project",
            project.name,
            "--set",
            "judge=llm",
            "--model-endpoint",
            "qwen",
            "--set",
            "model.api_key=sk-live-secret",
            "--inline",
        )
    for option, value in (("--model-base-url", "http://x/v1"), ("--api-key-env", "DATABASE_URL")):
        with pytest.raises(CommandError, match="not accepted"):
            call_command(
                "audit", "--project", project.name, "--set", "judge=llm", option, value, "--inline"
            )
    with pytest.raises(CommandError, match="api_key_file: not accepted"):
        call_command(
            "audit",
            "--project",
            project.name,
            "--set",
            "judge=llm",
            "--model-endpoint",
            "qwen",
            "--set",
            "model.api_key_file=/etc/hostname",
            "--inline",
        )
    with pytest.raises(CommandError, match="judge llm: configure a model"):
        call_command("audit", "--project", project.name, "--set", "judge=llm", "--inline")
    assert not AuditRun.objects.exists()


def test_the_api_starts_a_model_run_and_refuses_bad_settings(client, alice, charlie, project):
    """Each field of the old design is a 400 naming it and saying what to use instead."""
    client.force_login(alice)
    url = reverse("auditor:api-runs")
    body = {
        "project": project.name,
        "policies": ["twincheck"],
        "judge": "llm",
        "model": {
            **FIELDS,
            "max_calls": 10,
            "uses": ["judge", "twin"],
            "options": {"timeout": 15},
        },
    }
    r = client.post(url, body, content_type="application/json")
    assert r.status_code == 202, r.content
    data = r.json()
    assert r["Location"] == data["status_url"] and data["status"] == "pending"
    run = AuditRun.objects.get(pk=data["run"])
    assert run.judge == "llm" and run.model_settings["endpoint"]["timeout"] == 15
    assert run.model_settings["max_calls"] == 10 and data["model_settings"] == run.model_settings
    assert client.get(data["status_url"]).json()["run"] == run.pk

    for field, value in (
        ("api_key", "sk-live-secret"),
        ("api_key_env", "DJANGO_SECRET_KEY"),
        ("api_key_file", "/etc/hostname"),
        ("base_url", "http://127.0.0.1:5432/"),
    ):
        bad = {**body, "model": {**body["model"], field: value}}
        r = client.post(url, bad, content_type="application/json")
        text = r.content.decode()
        assert r.status_code == 400 and f"{field}: not accepted" in text, text
        assert "endpoint" in text and value not in text
    bad = {**body, "model": {**body["model"], "options": {"api_key_file": "/etc/hostname"}}}
    r = client.post(url, bad, content_type="application/json")
    assert r.status_code == 400 and "api_key_file: not accepted" in r.content.decode()
    r = client.post(url, {**body, "judge": "oracle"}, content_type="application/json")
    assert r.status_code == 400
    assert AuditRun.objects.count() == 1

    client.force_login(charlie)  # not a member: the project does not exist for him
    assert client.post(url, body, content_type="application/json").status_code == 404
    assert client.get(data["status_url"]).status_code == 404


def test_comparing_runs_shows_their_model_settings(project):
    from auditor.runs.selectors import settings_diff

    base = settings_for(project, FIELDS, judge="llm")
    a = audit_run_create(project=project, judge="llm", model_settings=base, enqueue=False)
    other = settings_for(project, {**FIELDS, "model": "gpt-oss-120b", "uses": "judge,live"})
    b = audit_run_create(project=project, judge="llm", model_settings=other, enqueue=False)
    changed = {d["key"]: (d["a"], d["b"]) for d in settings_diff(a, b) if d["changed"]}
    assert changed == {
        "model.model": ("Qwen/Qwen3-8B", "gpt-oss-120b"),
        "model.uses": ("judge", "judge, live"),
    }
    plain = audit_run_create(project=project, enqueue=False)
    changed = {d["key"] for d in settings_diff(plain, a) if d["changed"]}
    assert {"judge", "model.base_url", "model.uses", "model.endpoint_name"} <= changed
