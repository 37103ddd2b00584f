"""Every audit setting's type and range, checked by one schema (policies.settings_schema) at the
three entry points: the API and the browser form answer 400 naming the field, `manage.py audit`
fails with the field in its message; no run is created."""

from __future__ import annotations

import json

import orjson
import pytest
from django.core.management import CommandError, call_command
from django.urls import reverse
from rest_framework.test import APIClient

from auditor.runs.models import AuditRun
from policies.settings_schema import SettingsInvalid, validate_settings

pytestmark = pytest.mark.django_db

# (settings, the field the refusal names)
BAD = [
    ({"vrr": {"delta": 2**63}}, "vrr.delta"),
    ({"vrr": {"delta": 2**64 + 1}}, "vrr.delta"),
    ({"commit": {"budget": 9_223_372_036_854_775_808}}, "commit.budget"),
    ({"commit": {"budget": -1}}, "commit.budget"),
    ({"twincheck": {"context_events": -5}}, "twincheck.context_events"),
    ({"twincheck": {"min_confidence": 1.5}}, "twincheck.min_confidence"),
    ({"twincheck": {"min_confidence": "high"}}, "twincheck.min_confidence"),
    ({"twincheck": {"verify": "yes"}}, "twincheck.verify"),
    ({"twincheck": {"certificates": "inverse_action"}}, "twincheck.certificates"),
    ({"twincheck": {"certificates": ["telepathy"]}}, "twincheck.certificates"),
    ({"twincheck": {"inverse_table": "nope"}}, "twincheck.inverse_table"),
    ({"checklist": {"schedule": "sometimes"}}, "checklist.schedule"),
    ({"checklist": {"evidence_pattern": "(unclosed"}}, "checklist.evidence_pattern"),
    ({"checklist": {"min_overlap": 2.5}}, "checklist.min_overlap"),
    ({"vrr": {"delta": True}}, "vrr.delta"),
    ({"vrr": {"params": [0.1]}}, "vrr.params"),
    ({"vrr": {"params": {"rho0": 7}}}, "vrr.params.rho0"),
    ({"vrr": {"samples": {"rho0": 0.1}}}, "vrr.samples"),
    ({"vrr": {"mode": 3}}, "vrr.mode"),
    ({"vrr": {"colour": "red"}}, "vrr.colour"),
    ({"vrr": 5}, "vrr"),
    ({"commit": {"extractor": "regex"}}, "commit.extractor"),
    ({"commit": {"extractor": {"rel_tol": -0.1}}}, "commit.extractor.rel_tol"),
    ({"telepathy": {}}, "settings.telepathy"),
]


@pytest.mark.parametrize("values,field", BAD)
def test_the_schema_names_the_field(values, field):
    with pytest.raises(SettingsInvalid) as err:
        validate_settings(values)
    assert err.value.field == field


@pytest.mark.parametrize("value", [float("nan"), float("inf"), -float("inf")])
def test_non_finite_numbers_are_refused(value):
    with pytest.raises(SettingsInvalid, match="finite"):
        validate_settings({"vrr": {"tau": value}})


def test_good_settings_pass_as_plain_json():
    good = {
        "twincheck": {"min_confidence": 0.8, "certificates": ["inverse_action"], "verify": False},
        "vrr": {
            "delta": 3,
            "params": {"rho0": 0.1, "rho1": None, "alpha": 0.2, "beta": 0.1, "prior": 0.5},
        },
        "commit": {"budget": 2, "challenge_kinds": ["challenge"], "extractor": {"kind": "numeric"}},
        "checklist": {"schedule": "on_demand", "theta": 1},
    }
    out = validate_settings(good)
    assert out["vrr"]["delta"] == 3 and out["checklist"]["theta"] == 1.0
    assert orjson.loads(orjson.dumps(out)) == out


def _api(alice) -> APIClient:  # type: ignore[no-untyped-def]
    c = APIClient()
    c.force_authenticate(alice)
    return c


@pytest.mark.parametrize("values,field", BAD)
def test_api_answers_400_naming_the_field(alice, project, values, field):
    r = _api(alice).post("/api/audits/", {"project": "alpha", "settings": values}, format="json")
    assert r.status_code == 400, r.content
    assert field in r.content.decode()
    assert not AuditRun.objects.exists()


@pytest.mark.parametrize(
    "body,field",
    [
        ({"project": "alpha", "model": "gpt"}, "model"),
        ({"project": "alpha", "model": 5}, "model"),
        ({"project": "alpha", "model": ["x"]}, "model"),
        ({"project": "alpha", "settings": "vrr"}, "settings"),
        ({"project": "alpha", "settings": {"vrr": ["delta"]}}, "vrr"),
        ({"project": "alpha", "policies": "vrr"}, "policies"),
    ],
)
def test_api_wrong_shapes_are_400(alice, project, body, field):
    r = _api(alice).post("/api/audits/", body, format="json")
    assert r.status_code == 400, r.content
    assert field in r.content.decode()


@pytest.mark.parametrize("values,field", BAD[:6] + BAD[-4:])
def test_form_answers_400_naming_the_field(client, alice, project, values, field):
    client.force_login(alice)
    r = client.post(
        reverse("auditor:run-new", args=[project.pk]),
        {"policies": ["vrr", "commit"], "settings": json.dumps(values)},
    )
    assert r.status_code == 400
    assert field in r.content.decode()
    assert not AuditRun.objects.exists()


@pytest.mark.parametrize("raw", ["[1, 2]", "{not json", '{"vrr": {"tau": NaN}}'])
def test_form_settings_that_are_not_an_object_are_400(client, alice, project, raw):
    client.force_login(alice)
    r = client.post(reverse("auditor:run-new", args=[project.pk]), {"settings": raw})
    assert r.status_code == 400
    assert "settings" in r.content.decode()


def test_form_good_settings_start_a_run(client, alice, project):
    client.force_login(alice)
    r = client.post(
        reverse("auditor:run-new", args=[project.pk]),
        {"policies": ["vrr"], "settings": '{"vrr": {"delta": 2}}'},
    )
    assert r.status_code == 302
    assert AuditRun.objects.get().settings == {"vrr": {"delta": 2}}


@pytest.mark.parametrize(
    "pair,field",
    [
        ("vrr.delta=9223372036854775808", "vrr.delta"),
        ("commit.budget=-1", "commit.budget"),
        ("twincheck.verify=maybe", "twincheck.verify"),
        ("vrr.tau=1e999", "vrr.tau"),
        ("checklist.schedule=3", "checklist.schedule"),
        ("vrr.colour=red", "vrr.colour"),
    ],
)
def test_cli_fails_naming_the_field(project, pair, field):
    with pytest.raises(CommandError, match=field.replace(".", r"\.")):
        call_command("audit", "--project", "alpha", "--set", pair, "--inline")
    assert not AuditRun.objects.exists()
