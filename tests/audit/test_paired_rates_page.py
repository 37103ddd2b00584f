"""The run page and `audit --json` put rates beside each other only over one set: the per
policy table's actor % and guarded % are over the traces where both outcomes are known, and the
VRR paper table gives each rule beside the actor over the loops where both are known."""

from __future__ import annotations

import re

import pytest
from django.urls import reverse

from auditor.runs.summary import audit_run_counts
from tests.audit.test_runs import run_inline
from tests.audit.test_vrr_repair_quality import ingest_lats

pytestmark = pytest.mark.django_db


def test_run_page_and_json_compare_rates_over_the_paired_set(client, alice, project):
    ingest_lats(project, n=4)
    run = run_inline(
        project, policies=["vrr"], environment="none", settings={"vrr": {"mode": "guard"}}
    )
    assert run.status == "done" and run.error_count == 0
    vrr = audit_run_counts(run)["policies"]["vrr"]
    paired = vrr["statistics"]["paired"]
    overall = run.summary["vrr"]["overall"]
    assert paired["n"] == overall["paired"]["n"] <= overall["n_known"]
    n = paired["n"]
    assert n > 0
    assert (
        paired["text"] == f"actor {paired['actor_k']} of {n}, guarded {paired['guarded_k']} of {n}"
    )
    table = vrr["paper_table"]["paired_with_actor"]
    assert set(table) == {"stop", "guard", "headline"}
    assert table["guard"]["of"] == vrr["paper_table"]["loops"] == 4

    client.force_login(alice)
    page = client.get(reverse("auditor:run", args=[run.pk])).content.decode()
    overall_row = re.search(r'<tr class="overall">(.*?)</tr>', page, re.S).group(1)  # type: ignore[union-attr]
    actor_cell = re.search(r'data-k="actor-paired">([^<]*)<', overall_row).group(1)  # type: ignore[union-attr]
    expected = "—" if paired["actor_rate"] is None else str(round(100 * paired["actor_rate"]))
    assert actor_cell == expected
    assert "(the same " in page and 'data-k="paired"' in page
    assert "beside the actor, over the loops where both are known" in page
    assert table["guard"]["n"] > 0 and f'data-paired="{table["guard"]["n"]}"' in page
