"""The run page's per-model rows on two models named `org/model`, one with not-applicable
traces and an unknown outcome: the actor's success is over all the model's traces (as the
benchmark scores it), the guarded success beside the actor's over the same traces; the interval
and the worst/best case each shown once, in words; names wrap between their words; and the
difference between the models is the difference-in-differences of success on the tasks both
ran (`policies.stats.did`)."""

from __future__ import annotations

import re

import pytest

from auditor.models import AuditResult, AuditRun
from auditor.runs.per_model_display import name_parts
from auditor.runs.summary import audit_run_summary
from traces.models import Trace, Upload

pytestmark = pytest.mark.django_db

SMALL, LARGE = "openai/gpt-oss-20b", "openai/gpt-oss-120b"
CATEGORY = "multi_turn_miss_param"
# (actor, guarded, transition) per task t0…t5
ROWS = {
    SMALL: [
        (True, None, "not_applicable"),
        (False, None, "not_applicable"),
        (True, True, "same"),
        (False, False, "same"),
        (False, True, "rescue"),
        (False, None, "unknown"),
    ],
    LARGE: [
        (True, True, "same"),
        (True, False, "harm"),
        (True, True, "same"),
        (False, True, "rescue"),
        (False, False, "same"),
        (True, True, "same"),
    ],
}


@pytest.fixture
def run(project):  # type: ignore[no-untyped-def]
    up = Upload.objects.create(
        project=project, filename="r.json", size=1, content_hash="r", source="cli",
        status=Upload.Status.DONE,
    )  # fmt: skip
    run = AuditRun.objects.create(
        project=project, policies=["commit"], status=AuditRun.Status.DONE,
        traces_total=12, traces_done=12,
    )  # fmt: skip
    for model, rows in ROWS.items():
        for i, (a, g, tr) in enumerate(rows):
            t = Trace.objects.create(
                project=project, upload=up, external_id=f"bfcl:{model}:t{i}", model=model,
                benchmark="bfcl", task_id=f"t{i}", category=CATEGORY, run_source=model,
            )  # fmt: skip
            AuditResult.objects.create(
                run=run, trace=t, policy="commit", applied=tr != "not_applicable",
                actor_success=a, guarded_success=g, transition=tr,
                continuation="exact" if tr == "not_applicable" else "replaced",
                record={"not_applicable": "no decision point"} if tr == "not_applicable" else {},
            )  # fmt: skip
    run.summary = audit_run_summary(run)
    run.save(update_fields=["summary"])
    return run


def _row(html: str, model: str) -> str:
    body = html.split(f'<tbody class="model" data-model="{model}">', 1)[1]
    return body.split('<tr class="pm-category">', 1)[0]


def _cells(row: str) -> list[str]:
    return [
        re.sub(r"<[^>]+>", "", c).strip() for c in re.findall(r"<td[^>]*>(.*?)</td>", row, re.S)
    ]


def test_actor_success_is_over_all_the_models_traces_and_says_so(run, client, alice):
    client.force_login(alice)
    html = client.get(run.get_absolute_url()).content.decode()
    assert "of all the traces" in html
    assert "same traces: applicable, both outcomes known" in html
    small = _cells(_row(html, SMALL))
    # n, actor over all six (the two not-applicable ones included), guarded beside actor over
    # the three applicable traces with both outcomes known
    assert small[0] == "6"
    assert small[1] == "2 of 6 (33.3\u00a0%)"
    assert small[2] == "guarded 2 · actor 1 of 3"
    # the run's own panel: the actor over all twelve traces beside the known-of-known counts
    assert 'data-k="actor-all">actor 6 of 12 (50.0\u00a0%) <span' in html
    large = _cells(_row(html, LARGE))
    assert large[1] == "4 of 6 (66.7\u00a0%)" and large[2] == "guarded 4 · actor 4 of 6"


def test_the_interval_and_the_worst_best_case_are_each_shown_once(run, client, alice):
    client.force_login(alice)
    html = client.get(run.get_absolute_url()).content.decode()
    small = _cells(_row(html, SMALL))[4]
    # one unknown: the interval covering it, then Δ's worst and best case; nothing twice
    assert small.count("interval") == 1 and small.count("[") == 2
    assert "unknowns included" in small and "worst to best case" in small
    large = _cells(_row(html, LARGE))[4]
    # no unknowns: the interval alone (the bounds would be Δ itself)
    assert large.count("[") == 1 and "worst" not in large
    assert re.fullmatch(r"95&nbsp;% interval \[-?\d\.\d{3}, -?\d\.\d{3}\]", large), large


def test_names_wrap_between_words_not_inside_them(run, client, alice):
    assert name_parts(CATEGORY) == ["multi_", "turn_", "miss_", "param"]
    assert name_parts(SMALL) == ["openai/", "gpt-", "oss-", "20b"]
    client.force_login(alice)
    html = client.get(run.get_absolute_url()).content.decode()
    assert "multi_<wbr>turn_<wbr>miss_<wbr>param<wbr>" in html
    assert '<div class="table-scroll">' in html


def test_models_differ_by_the_difference_in_differences_of_success(run, client, alice):
    [d] = run.summary["commit"]["model_differences"]
    a, b = d["a"], d["b"]
    assert {a, b} == {SMALL, LARGE}
    sign = 1 if a == SMALL else -1
    # common tasks where both are applicable: t2…t5 (t0, t1 not applicable for the small one)
    assert (d["n_tasks"], d["n_known"], d["n_unknown"]) == (4, 3, 1)
    assert {d["n_only_a"], d["n_only_b"]} == {0, 2}
    # per task (guarded − actor)_small − (guarded − actor)_large: t2 0, t3 −1, t4 +1, t5 in [0, 1]
    assert d["did_known"] == 0.0
    assert sorted(sign * x for x in d["bounds"]) == [0.0, 0.25]
    client.force_login(alice)
    html = client.get(run.get_absolute_url()).content.decode()
    assert "Difference-in-differences of success" in html
    assert "Outcomes are compared, not transitions" in html
    assert "(guarded − actor)<sub>A</sub> − (guarded − actor)<sub>B</sub>" in html


def test_the_cli_prints_the_same_per_model_lines(run):
    """`audit`'s text output: a line per model and one per two models, with the same sets."""
    from auditor.runs.stats_display import did_text, model_text
    from auditor.runs.summary import audit_run_counts

    c = audit_run_counts(run)["policies"]["commit"]
    small = model_text(c["per_model"][SMALL])
    assert small.startswith("n 6; actor 2 of 6 (33.3\u00a0%) of all traces; ")
    assert "guarded 2 vs actor 1 of the same 3 (applicable, both known)" in small
    assert "rescue 1 harm 0 unknown 1 n/a 2" in small
    [d] = c["model_differences"]
    line = did_text(d)
    assert line.startswith(f"DiD {d['a']} − {d['b']}: (guarded − actor) difference +0.000 on 4")
    assert "1 unknown" in line
