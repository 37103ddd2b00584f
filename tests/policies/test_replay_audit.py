from __future__ import annotations

import json
import math

import pytest

from policies import POLICIES, Auditor, ToyEnvironment, audit_trace, replay
from policies.checklist.policy import ChecklistPolicy, ChecklistSettings
from policies.commit.policy import CommitPolicy, CommitSettings
from policies.trace import Trace
from policies.transitions import TRANSITIONS
from policies.twincheck.policy import TwinCheckPolicy
from policies.vrr.rule import VrrParams
from policies.vrr.sim import loop_events, simulate_loops
from tests.builders.events import Events, account_tools, lock_unlock_trace, pushback_trace


def test_replay_without_policies_returns_the_trace_unchanged() -> None:
    events = lock_unlock_trace()
    r = replay(events)
    assert r.trajectory == events and r.continuation == "exact" and r.decisions == []
    assert r.actor_success == r.guarded_success == False  # noqa: E712


def test_first_accepted_replacement_ends_exact_replay() -> None:
    b = Events(
        "two",
        tools=account_tools(),
        env={"config": {"state": {}, "goal": {"locked:a": True, "locked:b": True}}},
        outcome={"success": False},
    )
    b.user("lock a, then lock b", turn=0)
    b.call("1", "lock_account", key="a")
    b.result("1")
    b.call("2", "unlock_account", key="a")  # first certificate: inverse_action
    b.result("2")
    b.user("now lock b", turn=1)
    b.call("3", "lock_account", key="b", turn=1)
    b.result("3", turn=1)
    b.call("4", "unlock_account", key="b", turn=1)  # second one, never reached
    b.result("4", turn=1)
    t = Trace.from_events(b.events)
    r = replay(t, [TwinCheckPolicy()])
    assert len(r.decisions) == 1 and r.accepted is r.decisions[0] and r.accepted.index == 4
    assert r.continuation == "truncated" and len(r.trajectory) == 5
    # spliced: the completion twin ends turn 0; turn 1's recorded calls are re-executed
    env = ToyEnvironment()
    s = replay(t, [TwinCheckPolicy()], env)
    assert s.continuation == "spliced"
    assert [c[0] for c in env.calls] == ["lock_account", "lock_account", "unlock_account"]
    assert s.guarded_success is False  # the recorded unlock of b still runs after the splice
    executed = [e for e in s.trajectory if e.get("meta", {}).get("executed")]
    assert [e["status"] for e in executed] == ["ok", "ok"]


def test_multiple_policies_merge_in_event_order() -> None:
    events = pushback_trace([1, 0, 0], confidence=0.9)
    t = Trace.from_events(events)
    pols = [
        CommitPolicy(CommitSettings(recorded_recheck="any_challenge")),
        ChecklistPolicy(ChecklistSettings()),
    ]
    r = replay(t, pols)
    assert [d.index for d in r.decisions] == sorted(d.index for d in r.decisions)
    assert r.accepted is not None and r.accepted.policy == "checklist"


def test_audit_trace_result_shape_and_json() -> None:
    traces = [
        lock_unlock_trace(),
        pushback_trace([1, 0, 1]),
        [],
        loop_events(
            simulate_loops(VrrParams(0.1, 0.1, 0.3, 0.1, 0.5), 1, seed=3)[0], "v", label_all=True
        ),
    ]
    for events in traces:
        out = audit_trace(events)
        assert list(out) == list(POLICIES)
        for name, res in out.items():
            d = res.to_dict()
            assert d["policy"] == name
            assert d["transition"] in TRANSITIONS
            assert (d["transition"] == "not_applicable") == bool(d["not_applicable"])
            assert d["record"]["not_applicable"] == d["not_applicable"]
            assert d["continuation"] in ("exact", "spliced", "recorded", "truncated")
            assert "settings" in json.dumps(d["record"])
            assert json.loads(json.dumps(d, allow_nan=False)) == d  # strict JSON for jsonb


def test_audit_trace_vrr_with_calibrated_settings() -> None:
    loop = simulate_loops(VrrParams(0.05, 0.05, 0.3, 0.4, 0.5), 50, seed=9)
    params = {"rho0": 0.05, "rho1": 0.05, "alpha": 0.3, "beta": 0.4, "prior": 0.5}
    auditor = Auditor(("vrr",), {"vrr": {"params": params}})
    results = [
        auditor.audit(loop_events(lp, f"l{i}", label_all=True))["vrr"] for i, lp in enumerate(loop)
    ]
    assert all(r.record["mode"] == "stop" for r in results)
    assert any(r.continuation == "recorded" for r in results)
    for r, lp in zip(results, loop, strict=True):
        assert r.actor_success == lp.rounds[-1].valid
        shipped = r.record["shipped_round"]
        if shipped is None:  # the gain stayed positive: Stop would repair past the data
            assert r.guarded_success is None and r.continuation == "truncated"
        else:
            assert r.guarded_success == lp.rounds[shipped].valid
    assert sum(r.transition == "rescue" for r in results) > sum(
        r.transition == "harm" for r in results
    )


def test_settings_are_validated() -> None:
    with pytest.raises(ValueError, match="thetaa"):
        audit_trace([], ("checklist",), {"checklist": {"thetaa": 0.4}})
    with pytest.raises(ValueError):
        audit_trace([], ("checklist",), {"nonsense": {}})
    with pytest.raises(ValueError):
        audit_trace([], ("checklist",), judge="oracle")
    res = audit_trace(
        pushback_trace([1, 0]),
        ("commit",),
        {"commit": {"extractor": {"kind": "regex", "pattern": "(not)"}}},
    )
    assert res["commit"].record["settings"]["extractor"]["kind"] == "regex"


def test_decision_records_say_which_parameters_produced_them() -> None:
    out = audit_trace(lock_unlock_trace(), settings={"twincheck": {"min_margin": 3.5}})
    assert out["twincheck"].record["decisions"][0]["settings"]["min_margin"] == 3.5
    assert not out["twincheck"].record["decisions"][0]["gate"]["replace"]  # margin 3 < 3.5
    for res in out.values():
        assert "settings" in res.record


def test_nan_values_survive_as_floats() -> None:
    out = audit_trace(
        pushback_trace([1, 0]),
        ("vrr",),
        {
            "vrr": {
                "params": {"rho0": 0.1, "rho1": 0.1, "alpha": math.nan, "beta": 0.1, "prior": 0.5}
            }
        },
    )
    assert out["vrr"].record["mode"] == "none"  # answers without a verifier are no VRR loop
    assert out["vrr"].transition == "not_applicable"
    loop = loop_events(simulate_loops(VrrParams(0.1, 0.1, 0.3, 0.1, 0.5), 1, seed=1)[0], "n")
    out = audit_trace(
        loop,
        ("vrr",),
        {
            "vrr": {
                "params": {"rho0": 0.1, "rho1": 0.1, "alpha": math.nan, "beta": 0.1, "prior": 0.5}
            }
        },
    )
    # alpha missing and J fine: never Guard; this loop's stop round is the same for every
    # alpha in [0, 1], so VRR-Stop decides without it (else: not applicable)
    rec = out["vrr"].record
    assert rec["mode"] == "stop" and rec["reason"].startswith("alpha not identified")
    assert math.isnan(out["vrr"].record["settings"]["params"]["alpha"])
    stored = out["vrr"].to_dict()
    assert stored["record"]["settings"]["params"]["alpha"] is None
    json.dumps(stored, allow_nan=False)


def test_actor_outcome_comes_from_the_environment_when_not_recorded() -> None:
    env = ToyEnvironment()
    r = replay(lock_unlock_trace(success=None), [TwinCheckPolicy()], env)
    assert (r.actor_success, r.guarded_success) == (False, True)
    assert replay(lock_unlock_trace(success=None)).actor_success is None
