"""The first line `manage.py audit` prints per policy sets the actor's and the guarded
success side by side over one set — the traces whose two outcomes are both known — as the run
page does, never each over its own known outcomes."""

from __future__ import annotations

import json
import re

import pytest
from django.core.management import call_command

from tests.audit.test_runs import LDB, ingest_file

pytestmark = pytest.mark.django_db

LINE = re.compile(r"actor ok (\d+) of (\d+), guarded ok (\d+) of (\d+) \(paired: the same (\d+) ")


def test_the_cli_first_line_gives_the_paired_rates_of_the_json(project, capsys):
    ingest_file(project, LDB)
    args = ["audit", "--project", project.name, "--policies", "vrr", "--inline"]
    call_command(*args, "--set", "vrr.mode=guard")
    out = capsys.readouterr().out
    call_command(*args, "--set", "vrr.mode=guard", "--json")
    counts = json.loads(capsys.readouterr().out.strip().splitlines()[-1])["policies"]["vrr"]
    paired = counts["statistics"]["paired"]
    first = next(line for line in out.splitlines() if line.strip().startswith("vrr "))
    found = LINE.search(first)
    assert found, first
    actor_k, n_a, guarded_k, n_g, n_said = (int(x) for x in found.groups())
    assert (actor_k, guarded_k) == (paired["actor_k"], paired["guarded_k"])
    assert n_a == n_g == n_said == paired["n"]
    # the case the rule is for: the actor's known outcomes are more than the paired set (a
    # guarded outcome past the recorded rounds is unknown), and the own-set counts are
    # still printed, said to be each over its own
    assert counts["actor_known"] > paired["n"], counts
    assert (
        f"each over its own known outcomes: actor ok {counts['actor_success']} of "
        f"{counts['actor_known']} known" in out
    )


def test_without_paired_counts_the_line_says_each_rate_is_over_its_own():
    from auditor.management.commands.audit import success_line

    c = {"actor_success": 3, "actor_known": 5, "guarded_success": 2, "guarded_known": 4}
    assert success_line(c, None).endswith("(each over its own)")
    assert "of 5 known" in success_line(c, {"paired": None})
    paired = {"n": 4, "actor_k": 2, "guarded_k": 2}
    assert success_line(c, {"paired": paired}).startswith("actor ok 2 of 4, guarded ok 2 of 4")
