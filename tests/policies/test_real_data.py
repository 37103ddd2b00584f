"""The audits on the real data (../shared/data, or its samples in tests/data/real).
The conversion here follows the importers' documented mapping (traces/importers/pushback.py,
repair_runs.py) without importing them, so these tests exercise only policies/."""

from __future__ import annotations

import json
import math
import random
import re
from pathlib import Path
from typing import Any

import pytest

from policies import Auditor
from policies.commit.text import NO_SHORT_ANSWER
from policies.labels import apply_labels
from policies.sandbox.code_tests import execute_hidden_tests
from policies.sandbox.process import SandboxSettings, run_program
from policies.stats.report import summarise_run
from policies.trace import Trace
from policies.vrr.calibration import calibrate, observations_from_traces
from policies.vrr.evidence import MIN_TRANSITIONS
from policies.vrr.loops import loop_rounds
from policies.vrr.rule import SignMemo, VrrParams
from tests.conftest import unavailable
from tests.real_data import need_full, real_files

SYCON = real_files("sycon-bench", "*.jsonl")
LDB = real_files("ldb", "*.jsonl")


def first_sentence(text: str) -> str:
    return re.split(r"(?<=[.!?])\s", text.strip(), maxsplit=1)[0]


def sycon_events(
    rec: dict[str, Any], elicit: float | None = None
) -> tuple[list[dict[str, Any]], list[bool]]:
    """One SYCON record as v1 events; with ``elicit``, a scripted elicitation after each answer
    (one claim: the answer's first sentence, at that confidence), as the model client would."""
    tid = str(rec["id"])
    ev: list[dict[str, Any]] = [{"trace_id": tid, "type": "trace", "task": {"id": tid}}]
    labels = []
    for i, turn in enumerate(rec["turns"]):
        msg: dict[str, Any] = {
            "trace_id": tid,
            "type": "message",
            "role": "user",
            "content": turn["user"],
            "turn": i,
        }
        if i:
            msg.update(feedback={"kind": "challenge"}, labels={"valid": False})
        ev.append(msg)
        ok = str(turn["judge_identifies_false_presupposition"]).strip() == "1"
        labels.append(ok)
        ev.append(
            {
                "trace_id": tid,
                "type": "candidate",
                "candidate_id": f"{tid}-{i}",
                "round": i,
                "turn": i,
                "content": turn["assistant"],
                "labels": {"correct": ok},
            }
        )
        if elicit is not None:
            claim = {
                "id": "answer",
                "text": first_sentence(turn["assistant"]),
                "confidence": elicit,
            }
            meta = {"elicited": True, "model": "scripted", "cache_key": f"{tid}:{i}"}
            ev.append({"trace_id": tid, "type": "claims", "claims": [claim], "meta": meta})
    return ev, labels


def records(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


@pytest.mark.parametrize("path", SYCON, ids=lambda p: p.stem)
def test_sycon_without_a_model_checklist_and_commit_say_why_they_cannot_judge(path: Path) -> None:
    auditor = Auditor(("checklist", "commit"))
    results: dict[str, list[Any]] = {"checklist": [], "commit": []}
    for rec in records(path):
        out = auditor.audit(sycon_events(rec)[0])
        for name in results:
            results[name].append(out[name])
    assert all(r.transition == "not_applicable" for r in results["checklist"])
    assert {r.not_applicable for r in results["checklist"]} == {"no per-claim confidence"}
    # the replies are paragraphs: no short answer to compare, so no flips and no rule
    assert all(r.transition == "not_applicable" for r in results["commit"])
    assert {r.not_applicable for r in results["commit"]} == {NO_SHORT_ANSWER}
    assert all(r.record["flips"] is None for r in results["commit"])
    # compared by a model instead, the rule applies; the pushbacks are not the rule's re-check
    # prompt, so without a model to answer it the re-check is unknown
    by_model = Auditor(("commit",), {"commit": {"compare": "model"}}, labeler=lambda m: "SAME")
    outs = [by_model.audit(sycon_events(rec)[0])["commit"] for rec in records(path)[:20]]
    assert all(r.transition == "unknown" for r in outs)
    assert {r.unknown_reason for r in outs} == {
        "the re-check is not in the trace and no model is configured"
    }
    s = summarise_run(results["checklist"], n_boot=50)
    assert s["not_applicable"] == {"no per-claim confidence": len(results["checklist"])}
    assert s["overall"]["ci"] is None and s["checklist"]["applicable_events"] == 0
    assert s["checklist"]["actor_all_events"]["false_reversals"] > 0  # the actor's own behaviour


@pytest.mark.parametrize("path", SYCON, ids=lambda p: p.stem)
def test_sycon_with_elicited_confidences_the_rule_keeps_the_first_revised_claim(path: Path) -> None:
    auditor = Auditor(("checklist",))
    results, expected = [], {"rescue": 0, "harm": 0, "same": 0}
    for rec in records(path):
        events, labels = sycon_events(rec, elicit=0.9)
        results.append(auditor.audit(events)["checklist"])
        # independently: the guard keeps the answer before the first pushback after which the
        # claim (the answer's first sentence) changed; every pushback is mistaken and vague
        sentences = [first_sentence(t["assistant"]) for t in rec["turns"]]
        k = next((i for i in range(len(sentences) - 1) if sentences[i] != sentences[i + 1]), None)
        guarded = labels[-1] if k is None else labels[k]
        key = "same" if guarded == labels[-1] else ("rescue" if guarded else "harm")
        expected[key] += 1
    s = summarise_run(results, n_boot=200)
    t = s["overall"]["transitions"]
    assert (t["rescue"], t["harm"], t["same"]) == (
        expected["rescue"],
        expected["harm"],
        expected["same"],
    )
    assert t["unknown"] == 0 and t["not_applicable"] == 0
    assert s["checklist"]["guarded"]["false_reversals"] == 0
    assert s["checklist"]["actor"]["false_reversals"] > 0


def ldb_traces(path: Path, keep: int | None = None) -> list[list[dict[str, Any]]]:
    """Repair runs as v1 events; the header carries the hidden tests as the importer writes."""
    traces = []
    for n, line in enumerate(path.read_text().splitlines()):
        rec = json.loads(line)
        tid = f"{path.stem}:{n}"
        votes = len(rec["given_tests"])
        ev: list[dict[str, Any]] = [
            {
                "trace_id": tid,
                "type": "trace",
                "task": {
                    "id": rec["task_id"],
                    "prompt": rec["prompt"],
                    "entry_point": rec["entry_point"],
                },
                "labels": {"hidden_tests": rec["test"]},
                "outcome": {"success": rec["is_solved"]},
            }
        ]
        last = len(rec["implementations"]) - 1
        for k, (impl, fails) in enumerate(
            zip(rec["implementations"], rec["test_feedback"], strict=True)
        ):
            cand: dict[str, Any] = {
                "trace_id": tid,
                "type": "candidate",
                "candidate_id": f"c{k}",
                "round": k,
                "content": impl,
            }
            if k == last:
                cand["labels"] = {"valid": bool(rec["is_solved"])}
            ev.append(cand)
            ev.append(
                {
                    "trace_id": tid,
                    "type": "verification",
                    "candidate_id": f"c{k}",
                    "round": k,
                    "votes": votes,
                    "accepts": votes - len(fails),
                    "verifier": "visible_tests",
                }
            )
        traces.append(ev)
    return traces[:keep]


@pytest.mark.parametrize("path", LDB, ids=lambda p: p.stem)
def test_ldb_with_recorded_labels_only_vrr_is_not_applicable_never_a_guard_fallback(
    path: Path,
) -> None:
    traces = [Trace.from_events(e) for e in ldb_traces(path)]
    obs, transitions = observations_from_traces(traces)
    cal = calibrate(obs, transitions, n_boot=50, seed=0)
    assert transitions == []  # only final candidates are labelled
    assert any("alpha and beta" in note for note in cal.notes)
    assert math.isnan(cal.params.alpha) and math.isnan(cal.params.beta)
    assert cal.params.j > 0.1  # the visible tests do discriminate: no reason for Guard
    auditor = Auditor(("vrr",), {"vrr": {"params": cal.params.to_dict()}})
    results = [auditor.audit(t)["vrr"] for t in traces[:100]]
    assert all(r.record["mode"] != "guard" for r in results)  # missing α, β are no reason
    na = [r for r in results if r.not_applicable]
    assert na and {r.not_applicable for r in na} == {
        "parameters not identified: alpha, beta (the stop round depends on them)"
    }
    for r in results:  # where it applies, no value of α, β in [0, 1] would change the decision
        if not r.not_applicable:
            assert r.record["mode"] == "stop" and "not identified" in r.record["reason"]


def test_ldb_with_sandboxed_execution_calibrates_alpha_and_beta_from_executed_labels() -> None:
    if run_program("print(1)", SandboxSettings(enabled=True)).status == "unavailable":
        unavailable("the sandbox needs bubblewrap, libseccomp and user namespaces")
    path = next(p for p in LDB if "humaneval" in p.stem)
    every = ldb_traces(path)
    loops = [t for t in every if sum(e["type"] == "candidate" for e in t) > 1]
    traces = loops + [t for t in every if t not in loops][:15]
    labels, stats = execute_hidden_tests(traces, SandboxSettings(enabled=True), workers=2)
    assert stats.get("unavailable", 0) == 0 and stats["passed"] > 0 and stats["failed"] > 0
    labelled = [apply_labels(t, labels) for t in traces]
    # the sandbox reproduces the benchmark's own hidden-test verdict on every final candidate
    assert all(not lab.conflicts for lab in labelled), [lab.conflicts for lab in labelled]
    ptraces = [Trace.from_events(lab.events) for lab in labelled]
    obs, transitions = observations_from_traces(ptraces)
    assert len(transitions) == sum(len(lab.applied) - 1 for lab in labelled)
    cal = calibrate(obs, transitions, n_boot=100, seed=0)
    counts = cal.transition_counts
    evidence = {"alpha": counts["00"] + counts["01"], "beta": counts["10"] + counts["11"]}
    for name in ("alpha", "beta", "rho0", "rho1"):
        value, (lo, hi) = getattr(cal.params, name), cal.intervals[name]
        assert lo < hi, name  # never a zero-width interval
        if evidence.get(name, MIN_TRANSITIONS) < MIN_TRANSITIONS:  # too few: not identified
            assert math.isnan(value) and any(n.startswith(f"{name} not") for n in cal.notes)
            continue
        assert math.isfinite(value) and lo <= value + 1e-9 and value <= hi + 1e-9, name
    auditor = Auditor(
        ("vrr",), {"vrr": {"params": cal.params.to_dict(), "samples": list(cal.samples)}}
    )
    results = [auditor.audit(t)["vrr"] for t in ptraces]
    assert all(
        (r.applied and r.record["mode"] in ("stop", "guard"))
        or (r.not_applicable or "").startswith("parameters not identified")
        for r in results
    )
    table = summarise_run(results, n_boot=100)["vrr"]
    assert table["label_sources"]["executed"] > 0
    multi = table["fixed_k_validity"]["1"]["reaching"]
    assert multi["known"] == multi["of"] == len(loops)  # every repair round is labelled
    assert table["stop"]["known"] + table["guard"]["known"] > 0


def test_ldb_loops_repeat_few_patterns_and_the_sign_memo_decides_them_as_the_check_does(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """VRR's sign check runs once per bootstrap draw of every loop; the policy keeps it by the
    loop's (votes, accepts) rounds (`policies.vrr.rule.SignMemo`). On the real LDB loops, with
    identified parameters and bootstrap draws spread around them, every record is the one the
    policy writes when it keeps nothing."""
    need_full()  # the few-patterns count holds for the 664 loops of the full files
    traces = [e for path in LDB for e in ldb_traces(path)]
    params = VrrParams(rho0=0.15, rho1=0.2, alpha=0.3, beta=0.4, prior=0.4)
    rng = random.Random(0)  # draws spread wide: the loops' agreements differ (0.43 to 0.97)
    draws = [
        VrrParams(
            *(rng.uniform(lo, hi) for lo, hi in ((0.05, 0.6), (0, 0.6), (0, 1), (0, 1))),
            rng.uniform(0.1, 0.9),
        )  # fmt: skip
        for _ in range(30)
    ]
    settings = {"vrr": {"params": params.to_dict(), "samples": draws, "sign_stability": 0.6}}
    auditor = Auditor(("vrr",), settings)  # one policy, one memo, for every loop
    kept = [auditor.audit(t)["vrr"].to_dict() for t in traces]
    monkeypatch.setattr("policies.vrr.policy.SignMemo", lambda: SignMemo(limit=0))
    auditor = Auditor(("vrr",), settings)
    fresh = [auditor.audit(t)["vrr"].to_dict() for t in traces]
    assert kept == fresh
    agreements = {r["record"]["sign_agreement"] for r in kept}
    assert len(agreements) > 5 and None not in agreements  # checked on every loop
    assert {r["record"]["mode"] for r in kept} == {"stop", "guard"}
    patterns = {
        tuple((r.votes, r.accepts) for r in loop_rounds(Trace.from_events(t))) for t in traces
    }
    assert len(patterns) < len(traces) / 10  # 664 loops, a few dozen patterns
