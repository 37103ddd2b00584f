"""Decision records are stored without their repeated settings: each names them by content key,
the run holds every distinct settings dict once, and `full_record` gives the record back as its
policy wrote it — in the key order jsonb gave the whole record, so exports read the same text
(auditor.runs.record_settings, issue 17)."""

from __future__ import annotations

import json

import orjson
import pytest
from django.db import connection, transaction

from auditor.models import AuditResult, AuditRun
from auditor.runs.record_settings import (
    SETTINGS_REF,
    full_record,
    remember_settings,
    settings_key,
    split_settings,
)
from auditor.runs.rereplay import rereplay_trace
from policies.heuristic_judge import HeuristicJudge
from policies.jsonsafe import json_safe
from tests.audit.test_runs import LDB, SYCON, ingest_file, run_inline

pytestmark = pytest.mark.django_db


def _jsonb_text(value: object) -> str:
    with connection.cursor() as cur:
        cur.execute("SELECT %s::jsonb::text", [orjson.dumps(value).decode()])
        return cur.fetchone()[0]


def test_a_run_holds_each_settings_once_and_its_records_read_back_whole(project):
    ingest_file(project, SYCON)
    ingest_file(project, LDB)
    run = run_inline(project, environment="none")
    assert run.status == "done" and run.error_count == 0
    records = list(AuditResult.objects.filter(run=run).values_list("policy", "record"))
    refs = {rec[SETTINGS_REF] for _, rec in records}
    assert not any("settings" in rec for _, rec in records)
    assert set(run.record_settings) == refs
    whole_settings = {
        json.dumps(full_record(rec, run.record_settings)["settings"], sort_keys=True)
        for _, rec in records
    }
    # one entry per distinct settings dict: at least one per policy (VRR's per group)
    assert len(whole_settings) == len(refs) >= len(run.policies)
    for policy, rec in records:
        whole = full_record(rec, run.record_settings)
        assert whole["settings"] == run.record_settings[rec[SETTINGS_REF]]
        assert settings_key(whole["settings"]) == rec[SETTINGS_REF]
        # in the order jsonb holds the whole record's keys: a reader serialises the same text
        assert list(whole) == list(json.loads(_jsonb_text(whole))), policy
    theta = {full_record(r, run.record_settings)["settings"].get("theta") for p, r in records}
    assert 0.5 in theta  # the checklist's default θ, read back through the run's table


def test_records_stored_inline_or_naming_a_missing_key_are_read_as_stored():
    old = {"applied": True, "settings": {"theta": 0.5}}
    assert full_record(old, {}) is old  # a row stored before this form
    stored, key, settings = split_settings({"applied": True, "settings": {"theta": 0.5}})
    assert stored == {"applied": True, SETTINGS_REF: key} and settings == {"theta": 0.5}
    # an unknown key is shown as it is, never filled with guessed settings
    assert full_record(stored, {}) == stored and full_record(stored, None) == stored
    assert full_record(stored, {key: settings}) == {"applied": True, "settings": {"theta": 0.5}}
    for not_a_dict in (None, [], "x", {"settings": None}, {"settings": [1]}):
        assert split_settings(not_a_dict) == (not_a_dict, None, None)


def test_the_same_settings_get_the_same_key_whatever_their_order():
    a = {"theta": 0.5, "schedule": "always_on", "nested": {"b": 1, "a": 2}}
    b = {"nested": {"a": 2, "b": 1}, "schedule": "always_on", "theta": 0.5}
    assert settings_key(a) == settings_key(b) != settings_key({**a, "theta": 0.6})
    # a policy's values (NaN, tuples) are keyed as they are stored: strict JSON
    odd = {"kinds": ("challenge", "pushback"), "alpha": float("nan"), "cap": float("inf")}
    assert settings_key(odd) == settings_key(json_safe(odd))
    assert json_safe(odd) == {"kinds": ["challenge", "pushback"], "alpha": None, "cap": None}


def test_remember_settings_adds_new_keys_once_and_only_with_its_batch(project):
    run = AuditRun.objects.create(project=project, policies=["checklist"])
    remember_settings(run.pk, {"k1": {"theta": 0.5}})
    remember_settings(run.pk, {"k1": {"theta": 0.5}, "k2": {"theta": float("nan")}})
    run.refresh_from_db()
    assert run.record_settings == {"k1": {"theta": 0.5}, "k2": {"theta": None}}  # strict JSON
    with pytest.raises(RuntimeError), transaction.atomic():
        remember_settings(run.pk, {"k3": {"theta": 0.7}})
        raise RuntimeError("the batch failed: its records are not stored, nor their settings")
    run.refresh_from_db()
    assert set(run.record_settings) == {"k1", "k2"}


def test_a_trace_replayed_with_new_settings_names_settings_the_run_holds(project):
    ingest_file(project, LDB)
    run = run_inline(project, policies=["twincheck"], environment="none")
    before = set(run.record_settings)
    AuditRun.objects.filter(pk=run.pk).update(settings={"twincheck": {"min_margin": 3.0}})
    run.refresh_from_db()
    result = AuditResult.objects.filter(run=run).first()
    with transaction.atomic():
        rereplay_trace(run=run, trace_id=result.trace_id, judge=HeuristicJudge())
    result.refresh_from_db()
    run.refresh_from_db()
    assert result.record[SETTINGS_REF] not in before
    assert full_record(result.record, run.record_settings)["settings"]["min_margin"] == 3.0
