"""The tasks × models matrix at 4,000 tasks × 4 models: 200 tasks a page in natural order, the
filters over all tasks, the cells read for the page's tasks only, fast; and a legend naming
each colour."""

from __future__ import annotations

import time

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from auditor.models import AuditResult, AuditRun
from auditor.runs.task_matrix import PAGE_TASKS
from traces.models import Trace, Upload

pytestmark = pytest.mark.django_db

TASKS = 4000
MODELS = ["org/m-0", "org/m-1", "org/m-2", "org/m-3"]
TRANSITIONS = ["same", "rescue", "harm", "unknown", "not_applicable"]
OUTCOMES = {
    "same": (True, True),
    "rescue": (False, True),
    "harm": (True, False),
    "unknown": (False, None),
    "not_applicable": (True, None),
}


def transition(task: int, model: int) -> str:
    # every 7th task: the models disagree; else all "same"
    return TRANSITIONS[(task + model) % 5] if task % 7 == 0 else "same"


@pytest.fixture
def run(project):  # type: ignore[no-untyped-def]
    up = Upload.objects.create(
        project=project, filename="m.json", size=1, content_hash="m", source="cli",
        status=Upload.Status.DONE,
    )  # fmt: skip
    traces = Trace.objects.bulk_create(
        Trace(
            project=project,
            upload=up,
            external_id=f"b:{m}:task_{i}",
            model=m,
            benchmark="b",
            task_id=f"task_{i}",
            category=f"cat_{i % 3}",
            run_source=m,
        )  # fmt: skip
        for i in range(TASKS)
        for m in MODELS
    )
    run = AuditRun.objects.create(
        project=project, policies=["commit"], status=AuditRun.Status.DONE,
        traces_total=len(traces), traces_done=len(traces),
    )  # fmt: skip
    results = []
    for t in traces:
        i, m = int(t.task_id.split("_")[1]), MODELS.index(t.model)
        tr = transition(i, m)
        a, g = OUTCOMES[tr]
        results.append(
            AuditResult(
                run=run,
                trace=t,
                policy="commit",
                applied=tr != "not_applicable",
                actor_success=a,
                guarded_success=g,
                transition=tr,
                continuation="replaced",
                record={},
            )  # fmt: skip
        )
    AuditResult.objects.bulk_create(results, batch_size=4000)
    return run


def test_pages_of_200_tasks_read_only_their_cells_and_stay_fast(run, client, alice):
    client.force_login(alice)
    url = f"/audits/{run.pk}/matrix/?policy=commit"
    client.get(url)  # warm: the first request loads templates
    # CPU time of this process (the page's Python side, which grows with the run): wall time
    # on a shared machine measures the other processes as much as the page
    start = time.process_time()
    with CaptureQueriesContext(connection) as ctx:
        r = client.get(url + "&page=3")
    took = time.process_time() - start
    assert r.status_code == 200
    m = r.context["matrix"]
    assert (m["n_tasks"], m["pages"], m["page"]) == (TASKS, TASKS // PAGE_TASKS, 3)
    # natural order: page 3 is task_400 … task_599
    assert [row["task"] for row in m["rows"]] == [f"b:task_{i}" for i in range(400, 600)]
    assert all(len([c for c in row["cells"] if c]) == 4 for row in m["rows"])
    # the cells' query names the page's 200 tasks, not the run's 4,000
    [cells_sql] = [q["sql"] for q in ctx.captured_queries if "actor_success" in q["sql"]]
    assert cells_sql.count("'task_") == PAGE_TASKS
    assert took < 1.5, took  # 16,000 results: ~0.3 s on an idle machine
    html = r.content.decode()
    assert "page 3 of 20, 200 tasks a page" in html and 'rel="next"' in html

    # the filters run over every task, then page
    differ = client.get(url + "&differs=1").context["matrix"]
    assert differ["n_tasks"] == len(range(0, TASKS, 7))
    harm = client.get(url + "&transition=harm&model=org/m-0").context["matrix"]
    assert harm["models"] == ["org/m-0"]
    assert harm["n_tasks"] == len([i for i in range(TASKS) if transition(i, 0) == "harm"])
    cat = client.get(url + "&category=cat_1&q=task_1").context["matrix"]
    assert cat["rows"] and all(r["category"] == "cat_1" for r in cat["rows"])


def test_the_legend_names_every_colour(run, client, alice):
    client.force_login(alice)
    html = client.get(f"/audits/{run.pk}/matrix/?policy=commit").content.decode()
    legend = html.split('<ul class="mx-legend"', 1)[1].split("</ul>", 1)[0]
    for t in TRANSITIONS:
        assert f'class="tr tr-{t}"' in legend
    for word in ("rescue", "harm", "same", "unknown", "not applicable", "no trace"):
        assert word in legend
