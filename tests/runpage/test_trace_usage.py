"""The run page and `audit --json`: per model, the total and mean duration, tokens and cost of
the run's traces where they record them, and "—" with the count of traces without them where
not. On real τ²-bench traces (grok-3, every simulation timed and costed) beside v1 traces of
another model that record little or nothing."""

from __future__ import annotations

import io
import json
import re

import pytest
from django.core.management import call_command

from auditor.runs.services import audit_run_create, audit_run_start
from auditor.runs.trace_usage import trace_usage_per_model
from tests.builders.v1 import header, jsonl
from tests.real_data import data_root
from traces.models import Trace
from traces.services import upload_create, upload_process

pytestmark = pytest.mark.django_db

TAU2 = data_root() / "tau2-bench" / "airline_grok-3.json"


def _ingest(project, data: bytes, name: str) -> None:  # type: ignore[no-untyped-def]
    upload, _ = upload_create(
        project=project, fileobj=io.BytesIO(data), filename=name, source="cli", enqueue=False
    )
    assert upload_process(upload_id=upload.pk).status == "done"


@pytest.fixture
def run(project):  # type: ignore[no-untyped-def]
    _ingest(project, TAU2.read_bytes(), TAU2.name)
    events = []
    for tid in ("v-1", "v-2", "v-3"):
        events.append(header(tid, model="m-1"))
        msg = {"trace_id": tid, "type": "message", "role": "assistant", "content": "done"}
        if tid == "v-1":  # one of the three records tokens and a duration, none a cost
            msg.update(duration_ms=2500, usage={"input_tokens": 40, "output_tokens": 10})
        events.append(msg)
    _ingest(project, jsonl(events), "v1.jsonl")
    run = audit_run_create(project=project, policies=["commit"], enqueue=False, environment="none")
    audit_run_start(run_id=run.pk, inline=True)
    run.refresh_from_db()
    assert run.status == "done"
    return run


def test_sums_per_model_over_the_traces_that_record_them(run):
    rows = {r["model"]: r for r in trace_usage_per_model(run)}
    assert set(rows) == {"xai/grok-3", "m-1"}
    grok = rows["xai/grok-3"]
    traces = Trace.objects.filter(project=run.project, model="xai/grok-3")
    n = traces.count()
    assert grok["traces"] == n > 0
    cost = sum(t.cost_usd for t in traces)
    assert grok["cost_usd"]["total"] == pytest.approx(cost)
    assert grok["cost_usd"]["mean"] == pytest.approx(cost / n)
    assert grok["cost_usd"]["missing"] == 0 and grok["duration_ms"]["known"] == n
    assert grok["total_tokens"]["total"] == sum(t.total_tokens for t in traces)
    m1 = rows["m-1"]
    assert m1["traces"] == 3
    assert m1["duration_ms"] == {"total": 2500, "mean": 2500, "known": 1, "missing": 2}
    assert m1["total_tokens"] == {"total": 50, "mean": 50, "known": 1, "missing": 2}
    assert m1["cost_usd"] == {"total": None, "mean": None, "known": 0, "missing": 3}


def test_the_run_page_shows_totals_means_and_what_is_missing(client, alice, run):
    client.force_login(alice)
    html = client.get(run.get_absolute_url()).content.decode()
    section = re.search(r'<section class="card trace-usage".*?</section>', html, re.S)
    assert section, "no usage section"
    m1 = re.search(r'<tr data-model="m-1">(.*?)</tr>', section.group(0), re.S).group(1)
    assert re.search(r'data-k="cost_usd-total">—\s*<span[^>]*>\(3 without\)', m1)
    assert 'data-k="duration_ms-total">2.5 s' in m1 and "(2 without)" in m1
    assert 'data-k="total_tokens-mean">50<' in m1
    grok = re.search(r'<tr data-model="xai/grok-3">(.*?)</tr>', section.group(0), re.S).group(1)
    assert "without" not in grok and 'data-k="cost_usd-total">$' in grok


def test_audit_json_carries_the_same(project, run, capsys):
    call_command(
        "audit", "--project", project.name, "--policies", "commit", "--inline", "--json",
        "--set", "environment=none",
    )  # fmt: skip
    out = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert out["trace_usage"] == json.loads(json.dumps(trace_usage_per_model(run)))
    rows = {r["model"]: r for r in out["trace_usage"]}
    assert rows["m-1"]["cost_usd"]["missing"] == 3
