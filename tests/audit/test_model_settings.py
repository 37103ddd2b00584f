"""A run's model settings from the form, the CLI and the service: what is stored (the key's
environment variable name, never a key), and a clear error for each bad input."""

from __future__ import annotations

import pytest
from django.core.management import CommandError, call_command
from django.urls import reverse

from auditor.llm.settings import model_settings_from
from auditor.models import AuditRun
from auditor.runs.services import AuditRejected, audit_run_create, parse_set_options

pytestmark = pytest.mark.django_db

FIELDS = {"base_url": "http://127.0.0.1:8000/v1", "model": "Qwen/Qwen3-8B"}


def test_no_model_is_an_empty_setting_and_llm_defaults_to_the_verifier_use():
    assert model_settings_from({}) == {}
    assert model_settings_from({"base_url": " ", "model": ""}) == {}
    s = model_settings_from({**FIELDS, "api_key_env": "MY_KEY", "max_calls": "50"}, judge="llm")
    assert s["uses"] == ["judge"] and s["max_calls"] == 50 and s["max_tokens"] is None
    assert s["endpoint"]["api_key_env"] == "MY_KEY" and s["endpoint"]["temperature"] == 0
    s = model_settings_from({**FIELDS, "uses": "twin, recheck"}, {"timeout": 5})
    assert s["uses"] == ["twin", "recheck"] and s["endpoint"]["timeout"] == 5


@pytest.mark.parametrize(
    "fields,extra,message",
    [
        ({**FIELDS, "api_key": "sk-x"}, None, "api_key: the key itself is never a setting"),
        (FIELDS, {"api_key": "sk-x"}, "api_key: the key itself is never a setting"),
        ({"uses": ["judge"]}, None, "need a model endpoint"),
        (
            {**FIELDS, "base_url": "https://u:sk-pw@api.example/v1", "uses": "twin"},
            None,
            "base_url: credentials in the URL would be stored",
        ),
        ({**FIELDS}, None, "uses: choose what the model is for"),
        ({**FIELDS, "uses": "judge,telepathy"}, None, "unknown model uses: telepathy"),
        ({**FIELDS, "base_url": "localhost", "uses": "twin"}, None, "base_url: expected an http"),
        ({**FIELDS, "uses": "twin", "max_calls": "lots"}, None, "max_calls: expected a whole"),
        ({**FIELDS, "uses": "twin", "max_tokens": "-3"}, None, "max_tokens: expected a non-neg"),
        ({**FIELDS, "uses": "twin", "api_key_env": "NOT A NAME"}, None, "api_key_env: expected"),
        ({**FIELDS, "uses": "twin"}, {"timeout": 0}, "timeout: expected seconds"),
        ({**FIELDS, "uses": "twin"}, {"colour": "red"}, "unknown model settings: colour"),
    ],
)
def test_bad_model_settings_say_what_is_wrong(fields, extra, message):
    with pytest.raises(ValueError, match=message):
        model_settings_from(fields, extra)


def test_judges_and_their_model(project):
    s = model_settings_from(FIELDS, judge="llm")
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


def test_the_form_stores_model_settings_and_shows_errors(client, alice, project):
    client.force_login(alice)
    url = reverse("auditor:run-new", args=[project.pk])
    page = client.get(url).content.decode()
    assert 'name="model_base_url"' in page and 'value="recheck"' in page
    assert 'name="model_api_key"' not in page  # there is no field for the key itself
    resp = client.post(
        url,
        {
            "policies": ["twincheck"],
            "judge": "llm",
            "model_base_url": FIELDS["base_url"],
            "model_model": FIELDS["model"],
            "model_api_key_env": "TEAM_KEY",
            "model_max_calls": "100",
            "model_max_tokens": "20000",
            "model_uses": ["judge", "twin"],
        },
    )
    assert resp.status_code == 302
    run = AuditRun.objects.get()
    assert run.judge == "llm" and run.model_settings["uses"] == ["judge", "twin"]
    assert run.model_settings["endpoint"]["api_key_env"] == "TEAM_KEY"
    assert (run.model_settings["max_calls"], run.model_settings["max_tokens"]) == (100, 20000)
    resp = client.post(
        url, {"judge": "llm", "model_base_url": "ftp://x", "model_model": "m", "label": "kept"}
    )
    assert resp.status_code == 400
    body = resp.content.decode()
    assert "model settings: base_url: expected an http(s) URL" in body
    assert 'value="kept"' in body and 'value="ftp://x"' in body  # the form keeps what was typed
    assert AuditRun.objects.count() == 1


def test_the_cli_refuses_a_key_and_creates_no_run(project):
    with pytest.raises(CommandError, match="api_key: the key itself is never a setting"):
        call_command(
            "audit",
            "--project",
            project.name,
            "--set",
            "judge=llm",
            "--model-base-url",
            FIELDS["base_url"],
            "--model",
            "m",
            "--set",
            "model.api_key=sk-live-secret",
            "--inline",
        )
    with pytest.raises(CommandError, match="judge llm: configure a model"):
        call_command("audit", "--project", project.name, "--set", "judge=llm", "--inline")
    assert not AuditRun.objects.exists()


def test_the_api_starts_a_model_run_and_refuses_bad_settings(client, alice, charlie, project):
    client.force_login(alice)
    url = reverse("auditor:api-runs")
    body = {
        "project": project.name,
        "policies": ["twincheck"],
        "judge": "llm",
        "model": {
            **FIELDS,
            "api_key_env": "TEAM_KEY",
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

    bad = {**body, "model": {**body["model"], "api_key": "sk-live-secret"}}
    r = client.post(url, bad, content_type="application/json")
    assert r.status_code == 400 and "the key itself is never a setting" in r.content.decode()
    assert "sk-live-secret" not in r.content.decode()
    bad = {**body, "model": {**body["model"], "base_url": "nope"}}
    r = client.post(url, bad, content_type="application/json")
    assert r.status_code == 400 and "base_url: expected an http(s) URL" in r.content.decode()
    r = client.post(url, {**body, "judge": "oracle"}, content_type="application/json")
    assert r.status_code == 400
    assert AuditRun.objects.count() == 1

    client.force_login(charlie)  # not a member: the project does not exist for him
    assert client.post(url, body, content_type="application/json").status_code == 404
    assert client.get(data["status_url"]).status_code == 404


def test_comparing_runs_shows_their_model_settings(project):
    from auditor.runs.selectors import settings_diff

    base = model_settings_from(FIELDS, judge="llm")
    a = audit_run_create(project=project, judge="llm", model_settings=base, enqueue=False)
    other = model_settings_from({**FIELDS, "model": "gpt-oss-120b", "uses": "judge,live"})
    b = audit_run_create(project=project, judge="llm", model_settings=other, enqueue=False)
    changed = {d["key"]: (d["a"], d["b"]) for d in settings_diff(a, b) if d["changed"]}
    assert changed == {
        "model.model": ("Qwen/Qwen3-8B", "gpt-oss-120b"),
        "model.uses": ("judge", "judge, live"),
    }
    plain = audit_run_create(project=project, enqueue=False)
    changed = {d["key"] for d in settings_diff(plain, a) if d["changed"]}
    assert {"judge", "model.base_url", "model.uses"} <= changed
