"""The run's data-quality section: what import flagged in its traces and how many of the
flagged traces' decisions are unknown or not applicable, per policy — made with the run's
summary and shown on the run page and in `audit --json`. One fresh upload per flag, each shaped
like the real case it comes from, through a real audit."""

from __future__ import annotations

import io
import re
from typing import Any

import orjson
import pytest
from django.urls import reverse

from auditor.runs.summary import audit_run_counts
from policies.data_quality import FlagFold, data_quality_section
from policies.outcome_gaps import GROUND_TRUTH_CHANGED, TASK_DRIFT
from policies.stats.report import summarise_run
from tests.audit.test_runs import run_inline
from tests.audit.test_vrr_repair_quality import ingest_lats
from tests.importers.test_harness_errors import ABORT, sycon
from traces.services import upload_create, upload_process

pytestmark = pytest.mark.django_db


def upload(project, data: bytes, name: str) -> None:  # type: ignore[no-untyped-def]
    up, _ = upload_create(
        project=project, fileobj=io.BytesIO(data), filename=name, source="cli", enqueue=False
    )
    up = upload_process(upload_id=up.pk)
    assert up.status == "done" and up.error_count == 0, (up.failure, up.errors[:3])


def cells(page: str, flag: str) -> dict[str, str]:
    """The data-quality row of ``flag`` on the run page: {"traces": …, "<policy>.unknown": …}."""
    row = re.search(rf'<tr data-flag="{flag}">(.*?)</tr>', page, re.S)
    assert row is not None, f"no row for {flag}"
    out = {}
    for attrs, value in re.findall(r"<td ([^>]*)>([^<]*)</td>", row.group(1)):
        k = re.search(r'data-k="([^"]+)"', attrs).group(1)  # type: ignore[union-attr]
        p = re.search(r'data-policy="([^"]+)"', attrs)
        out[f"{p.group(1)}.{k}" if p else k] = value
    return out


def section(client, alice, run) -> tuple[dict[str, Any], str]:  # type: ignore[no-untyped-def]
    """The section as `audit --json` gives it (through orjson, as the CLI prints it) and the
    run page's HTML."""
    got = orjson.loads(orjson.dumps(audit_run_counts(run)))["data_quality"]
    client.force_login(alice)
    page = client.get(reverse("auditor:run", args=[run.pk])).content.decode()
    return got, page


def by_flag(got: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {f["flag"]: f for f in got["flags"]}


def per_policy(entry: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {c["policy"]: c for c in entry["policies"]}


def test_foreign_candidates_of_a_lats_log(client, alice, project):
    ingest_lats(project, n=4)  # implementations[0] of each record is `strlen`, another task
    run = run_inline(project, policies=["vrr", "commit"], environment="none")
    assert run.status == "done" and run.error_count == 0
    got, page = section(client, alice, run)
    foreign = by_flag(got)["foreign_candidate"]
    assert (foreign["traces"], foreign["events"]) == (4, 4)
    vrr = per_policy(foreign)["vrr"]
    # the run summary's own counts of the same results
    summary = run.summary["vrr"]
    assert vrr["unknown"] == summary["overall"]["transitions"]["unknown"]
    assert vrr["not_applicable"] == sum(summary["not_applicable"].values())
    assert sum(vrr["reasons"].values()) == vrr["unknown"] + vrr["not_applicable"]
    row = cells(page, "foreign_candidate")
    assert row["traces"] == "4" and row["events"] == "4"
    assert row["vrr.unknown"] == str(vrr["unknown"])
    assert row["vrr.not_applicable"] == str(vrr["not_applicable"])
    assert 'id="data-quality"' in page


def test_harness_errors_of_a_sycon_run(client, alice, project):
    data = sycon(ABORT) + sycon("He did not, the story is a myth.").replace(b'"q1"', b'"q2"')
    upload(project, data, "false_presuppositions_m_prompt0.jsonl")
    run = run_inline(project, policies=["commit", "checklist"], environment="none")
    assert run.status == "done" and run.error_count == 0
    got, page = section(client, alice, run)
    assert set(by_flag(got)) == {"harness_error"}
    errors = by_flag(got)["harness_error"]
    assert (errors["traces"], errors["events"]) == (1, 1)
    commit = per_policy(errors)["commit"]
    # the one flagged conversation ends on the harness error: its outcome is unknown
    assert commit["unknown"] + commit["not_applicable"] == 1
    row = cells(page, "harness_error")
    assert row["traces"] == "1"
    assert row["commit.unknown"] == str(commit["unknown"])
    assert row["commit.not_applicable"] == str(commit["not_applicable"])


def test_nothing_flagged_says_so(client, alice, project):
    upload(project, sycon("He did not, the story is a myth."), "false_presuppositions_m.jsonl")
    run = run_inline(project, policies=["commit"], environment="none")
    got, page = section(client, alice, run)
    assert got == {"flags": []} and run.summary["commit"]["data_quality"] == {}
    assert "import flagged nothing" in page and 'data-table="data-quality"' not in page
    # a summary made without the counts says nothing rather than "nothing flagged"
    assert data_quality_section({"commit": {"n": 1}}, ["commit"]) is None


class TestBfcl:
    """BFCL result files: an older release's file whose user turns match the installed task
    (release differs), one whose turns differ (task drift), a step with parallel calls."""

    @pytest.fixture(autouse=True)
    def _bfcl(self) -> None:
        pytest.importorskip("bfcl_eval")

    def test_task_drift_and_release_of_an_older_result_file(self, client, alice, project):
        from tests.importers.test_bfcl_drift import drifted
        from traces.importers.bfcl import load_tasks
        from traces.samples.bfcl import build_record

        tasks = load_tasks()
        same, _ = build_record(tasks["multi_turn_base_0"], perturb=False)
        other, _ = build_record(tasks["multi_turn_base_1"], perturb=False)
        data = orjson.dumps(same) + b"\n" + orjson.dumps(drifted(other)) + b"\n"
        upload(project, data, "BFCL_v3_multi_turn_base_result.json")
        run = run_inline(project, policies=["twincheck"], environment="bfcl")
        assert run.status == "done" and run.error_count == 0
        got, page = section(client, alice, run)
        flags = by_flag(got)
        assert (flags["recorded_release_differs"]["traces"], flags["task_drift"]["traces"]) == (
            2,
            1,
        )
        drift = per_policy(flags["task_drift"])["twincheck"]
        assert drift["unknown"] == 1 and drift["reasons"] == {TASK_DRIFT: 1}
        release = per_policy(flags["recorded_release_differs"])["twincheck"]
        assert release["unknown"] == 1  # only the drifted task: the other one is scored
        assert cells(page, "task_drift")["twincheck.unknown"] == "1"
        assert cells(page, "recorded_release_differs")["traces"] == "2"
        assert TASK_DRIFT in page

    def test_ground_truth_changed_between_the_releases_of_a_v3_file(self, client, alice, project):
        from tests.importers.test_bfcl_release import (
            SAME_TURNS_OTHER_TRUTH,
            TRUTH_CHANGED_IN_V3,
            v3_run,
        )

        scored, _ = v3_run(SAME_TURNS_OTHER_TRUTH)
        changed, _ = v3_run(TRUTH_CHANGED_IN_V3)
        data = orjson.dumps(scored) + b"\n" + orjson.dumps(changed) + b"\n"
        upload(project, data, "BFCL_v3_multi_turn_base_result.json")
        run = run_inline(project, policies=["twincheck"], environment="bfcl")
        assert run.status == "done" and run.error_count == 0
        got, page = section(client, alice, run)
        flags = by_flag(got)
        assert flags["recorded_release_differs"]["traces"] == 2
        assert flags["ground_truth_changed"]["traces"] == 1 and "task_drift" not in flags
        twincheck = per_policy(flags["ground_truth_changed"])["twincheck"]
        assert twincheck["unknown"] == 1 and twincheck["reasons"] == {GROUND_TRUTH_CHANGED: 1}
        assert cells(page, "ground_truth_changed")["twincheck.unknown"] == "1"
        assert GROUND_TRUTH_CHANGED.replace("'", "&#x27;") in page
        # the other one is scored against its release's ground truth: the actor succeeded
        counts = audit_run_counts(run)["policies"]["twincheck"]
        assert (counts["actor_known"], counts["actor_success"]) == (1, 1)

    def test_a_parallel_step(self, client, alice, project):
        from tests.importers.test_bfcl_parallel import record

        upload(
            project,
            orjson.dumps(record(with_cd=True)) + b"\n",
            "BFCL_v4_multi_turn_base_result.json",
        )
        run = run_inline(project, policies=["twincheck"], environment="bfcl")
        assert run.status == "done" and run.error_count == 0
        got, page = section(client, alice, run)
        assert set(by_flag(got)) == {"parallel_step"}
        parallel = by_flag(got)["parallel_step"]
        assert (parallel["traces"], parallel["events"]) == (1, 1)
        # results follow their own calls: the step's outcome is known, nothing made unknown
        assert per_policy(parallel)["twincheck"] == {
            "policy": "twincheck",
            "unknown": 0,
            "not_applicable": 0,
            "reasons": {},
        }
        assert cells(page, "parallel_step") == {
            "traces": "1",
            "events": "1",
            "twincheck.unknown": "0",
            "twincheck.not_applicable": "0",
        }

    def test_empty_model_replies_of_a_real_record(self, client, alice, project):
        """A real gpt-4o record whose last turn's second model call answered nothing, as
        bfcl-eval records it ("Empty response from the model. Proceed to next turn.")."""
        import copy

        from tests.importers.test_bfcl_step_figures import NAME, real_record

        record = copy.deepcopy(real_record("multi_turn_base_4"))
        record["result"][2] = [[{"post_tweet": record["result"][2][0][0]["post_tweet"]}], []]
        upload(project, orjson.dumps(record) + b"\n", NAME)
        run = run_inline(project, policies=["twincheck"], environment="bfcl")
        assert run.status == "done" and run.error_count == 0
        got, page = section(client, alice, run)
        empty = by_flag(got)["empty_reply"]
        assert (empty["traces"], empty["events"]) == (1, 1)
        assert cells(page, "empty_reply")["events"] == "1"
        assert "empty model replies" in page


def test_the_fold_counts_flagged_rows_by_outcome() -> None:
    def row(flags: dict[str, int] | None, transition: str, **kw: Any) -> dict[str, Any]:
        record: dict[str, Any] = {"unknown_reason": kw.get("reason")}
        if flags:
            record["import_flags"] = flags
        na = "no loop" if transition == "not_applicable" else None
        return {"policy": "vrr", "transition": transition, "not_applicable": na, "record": record}

    rows = [
        row({"foreign_candidate": 2}, "unknown", reason="no label"),
        row({"foreign_candidate": 1, "harness_error": 1}, "not_applicable"),
        row({"foreign_candidate": 1}, "same"),
        row(None, "unknown", reason="no label"),
    ]
    summary = summarise_run(rows, n_boot=10)
    assert summary["data_quality"] == {
        "foreign_candidate": {
            "traces": 3,
            "events": 4,
            "unknown": 1,
            "not_applicable": 1,
            "reasons": {"no label": 1, "no loop": 1},
        },
        "harness_error": {
            "traces": 1,
            "events": 1,
            "unknown": 0,
            "not_applicable": 1,
            "reasons": {"no loop": 1},
        },
    }
    got = data_quality_section({"vrr": summary, "commit": {}}, ["vrr", "commit"])
    assert got is not None
    assert [f["flag"] for f in got["flags"]] == ["foreign_candidate", "harness_error"]
    assert got["flags"][0]["policies"][1] == {
        "policy": "commit",
        "unknown": 0,
        "not_applicable": 0,
        "reasons": {},
    }
    fold = FlagFold()
    fold.add(row(None, "unknown"), None)
    assert fold.result() == {}
