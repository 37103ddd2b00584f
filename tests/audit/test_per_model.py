"""The effect per model on three real SYCON-Bench runs: the run summary's tables per model and
the difference of Δ between each two models on their common questions, on the run page (with
its forest plot) and in `audit --json`; the paired comparison of two audit runs."""

from __future__ import annotations

import json

import pytest

from auditor.runs.compare_paired import paired_differences, trace_sets
from auditor.runs.services import audit_run_create, audit_run_start
from auditor.runs.summary import audit_run_counts
from tests.audit.sycon_runs import MODELS, SETTINGS, needs_sycon, sycon_run

pytestmark = [needs_sycon, pytest.mark.django_db]


@pytest.fixture
def run(project):  # type: ignore[no-untyped-def]
    return sycon_run(project)


def test_the_summary_has_a_table_per_model_and_their_differences(run):
    s = run.summary["commit"]
    per_model = s["per_model"]
    assert sorted(per_model) == MODELS
    for model in MODELS:
        part = per_model[model]
        assert part["n_traces"] == 200
        assert list(part["per_category"]) == ["false_presupposition"]
        assert "sources" not in part  # one run source each
    # the actor's success, known of known n, as the files' per-turn labels give it
    actor = {m: per_model[m]["overall"]["actor_counts"]["successes"] for m in MODELS}
    assert actor == {"Qwen2.5-7B-Instruct": 49, "claude": 89, "gpt-4o": 109}
    assert sum(p["n_traces"] for p in per_model.values()) == s["n_traces"] == 600
    diffs = s["model_differences"]
    assert len(diffs) == 3
    for d in diffs:  # the same 200 questions, matched by their task id across the models
        assert (d["n_tasks"], d["n_only_a"], d["n_only_b"]) == (200, 0, 0)
        lo, hi = d["bounds"]
        assert d["ci"][0] <= lo <= hi <= d["ci"][1]


def test_audit_json_carries_the_per_model_tables(run):
    counts = audit_run_counts(run)["policies"]["commit"]
    assert sorted(counts["per_model"]) == MODELS
    gpt = counts["per_model"]["gpt-4o"]
    assert gpt["n_traces"] == 200 and gpt["actor"]["text"] == "109 of the 200 with a known outcome"
    assert "false_presupposition" in gpt["per_category"]
    assert len(counts["model_differences"]) == 3
    json.dumps(counts, allow_nan=False)


def test_the_run_page_groups_by_model_with_a_forest_plot(run, client, alice):
    client.force_login(alice)
    html = client.get(run.get_absolute_url()).content.decode()
    for model in MODELS:
        assert f'data-model="{model}"' in html
    assert 'data-figure="forest-commit"' in html and 'id="forest-commit"' in html
    assert html.count("<tr data-a=") == 3
    assert "js/trace.js" in html


def test_compare_pairs_common_traces_and_counts_the_others(run, project, client, alice):
    one = audit_run_create(
        project=project,
        policies=["commit"],
        settings=SETTINGS,
        trace_filter={"model": "claude"},
        enqueue=False,
        environment="none",
    )
    audit_run_start(run_id=one.pk, inline=True)
    assert trace_sets(run, one) == {"both": 200, "only_a": 400, "only_b": 0}
    [paired] = paired_differences(run, one, ["commit"])
    assert (paired["n_tasks"], paired["n_only_a"], paired["n_only_b"]) == (200, 400, 0)
    # the same traces audited with the same settings: every bound of the difference is ±
    # the same unknowns, and the interval contains 0
    assert paired["ci"][0] <= 0.0 <= paired["ci"][1]
    client.force_login(alice)
    html = client.get(f"/audits/compare/?a={run.pk}&b={one.pk}").content.decode()
    assert 'data-only-a="400"' in html and "400 only in A" in html
    assert '<tr data-policy="commit"><th scope="row">commit</th><td class="num">200</td>' in html


def test_the_matrix_shows_each_question_by_model_and_filters(run, client, alice):
    client.force_login(alice)
    url = f"/audits/{run.pk}/matrix/?policy=commit"
    html = client.get(url).content.decode()
    assert "200 tasks" in html
    assert all(f'<th scope="col" data-model="{m}">' in html for m in MODELS)
    assert html.count("sycon-bench:sycon_fp_p0_") == 200  # one row a question, not a model
    assert f"?run={run.pk}&amp;policy=commit" in html  # each cell links to the trace
    # tasks in natural order of their ids (p0_2 before p0_10), whatever the string order
    assert html.index("sycon_fp_p0_2<") < html.index("sycon_fp_p0_10<")
    # each filter's label holds its control, so a wrapping form never parts them
    for name, control in (("Category", "input"), ("Task", "input"), ("Policy", "select")):
        assert f"{name} <{control} id=" in html or f"{name}\n  <{control} id=" in html
    # the questions where some model's guarded outcome is known: 4 of gpt-4o's, all "same"
    same = client.get(url + "&transition=same").content.decode()
    assert "4 tasks" in same and same.count('data-transition="same"') == 4
    two = client.get(url + "&model=claude&model=gpt-4o&q=p0_1").content.decode()
    assert '<th scope="col" data-model="Qwen2.5-7B-Instruct">' not in two
    assert 'data-model="claude"' in two
