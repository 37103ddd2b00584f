"""Property tests (hypothesis) for the policies' invariants (STYLE: "for every policy
invariant")."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from policies.checklist.policy import ChecklistPolicy
from policies.heuristic_judge import HeuristicJudge
from policies.judges import PairRequest, Proposal, Verdict
from policies.replay import replay
from policies.trace import Trace
from policies.twincheck.policy import TwinCheckSettings, switch_gate
from policies.vrr.rule import belief_predict, belief_update
from tests.builders.events import lock_unlock_trace

unit = st.floats(min_value=0.0, max_value=1.0, allow_nan=False)
GATE = TwinCheckSettings()


@given(
    prior=unit,
    rho0=unit,
    rho1=unit,
    alpha=unit,
    beta=unit,
    votes=st.integers(0, 200),
    data=st.data(),
)
def test_belief_stays_in_unit_interval(
    prior: float,
    rho0: float,
    rho1: float,
    alpha: float,
    beta: float,
    votes: int,
    data: st.DataObject,
) -> None:
    accepts = data.draw(st.integers(0, votes))
    b = belief_update(prior, accepts, votes, rho0, rho1)
    assert 0.0 <= b <= 1.0
    assert 0.0 <= belief_predict(b, alpha, beta) <= 1.0 + 1e-12


verdicts = st.builds(
    Verdict,
    prefer=st.sampled_from(["A", "B", None]),
    fatal_a=st.booleans(),
    fatal_b=st.booleans(),
    score_a=st.integers(0, 4).map(float),
    score_b=st.integers(0, 4).map(float),
    confidence=st.sampled_from([0.0, 0.5, 0.69, 0.7, 0.71, 0.9, 1.0]),
    judge=st.just("h"),
    error=st.sampled_from([None, None, None, "timeout"]),
)


def relabel(v: Verdict) -> Verdict:
    """The same verdict with the labels A and B swapped."""
    swap = {"A": "B", "B": "A", None: None}
    return Verdict(
        swap[v.prefer], v.fatal_b, v.fatal_a, v.score_b, v.score_a, v.confidence, v.judge, v.error
    )


@given(actor_first=verdicts, twin_first=verdicts)
def test_gate_never_replaces_when_the_orientations_disagree(
    actor_first: Verdict, twin_first: Verdict
) -> None:
    # twin is B in the actor-first order and A in the twin-first order
    prefers = (actor_first.prefer == "B", twin_first.prefer == "A")
    if prefers[0] != prefers[1]:
        assert not switch_gate(actor_first, twin_first, GATE).replace


@given(actor_first=verdicts, twin_first=verdicts)
def test_relabelling_a_and_b_never_changes_the_gate(
    actor_first: Verdict, twin_first: Verdict
) -> None:
    # relabelled, the twin-first judgment reads as an actor-first one and vice versa
    original = switch_gate(actor_first, twin_first, GATE).replace
    assert switch_gate(relabel(twin_first), relabel(actor_first), GATE).replace == original


names = st.sampled_from(["lock_account", "unlock_account", "get_account", "set_payment"])
args = st.dictionaries(
    st.sampled_from(["key", "value"]),
    st.sampled_from(["acc_1", "acc_2", "card_8107", 3]),
    max_size=2,
)
proposals = st.one_of(
    st.builds(Proposal, kind=st.just("call"), name=names, arguments=args),
    st.builds(Proposal, kind=st.sampled_from(["completion", "delete", "ask_user"])),
)


@given(a=proposals, b=proposals, cut=st.sampled_from([2, 4, 6]))
@settings(max_examples=80)
def test_heuristic_judge_scores_each_candidate_on_its_own(
    a: Proposal, b: Proposal, cut: int
) -> None:
    """Relabelling A and B swaps the scores and fatal flags and keeps the confidence; the
    preference follows the candidates, except on a tie, where the documented position prior
    prefers A in both orders (so the counterbalanced gate rejects the pair)."""
    from policies.facts import TraceFacts

    t = Trace.from_events(lock_unlock_trace())
    f = TraceFacts()
    for e in t.events[:cut]:
        f.observe(e)
    j = HeuristicJudge()
    v = j.judge(PairRequest("p", "actor_first", a, b, "", t, f))
    w = j.judge(PairRequest("p", "twin_first", b, a, "", t, f))
    assert (v.score_a, v.score_b, v.fatal_a, v.fatal_b) == (
        w.score_b,
        w.score_a,
        w.fatal_b,
        w.fatal_a,
    )
    assert (v.abstained, v.confidence) == (w.abstained, w.confidence)
    if v.abstained:
        assert v.prefer is None and w.prefer is None
    elif v.score_a == v.score_b:
        assert v.prefer == w.prefer == "A" and v.confidence == 0.5
        assert not switch_gate(v, w, GATE).replace
    else:
        assert relabel(v).prefer == w.prefer


words = st.sampled_from(
    [
        "parser",
        "unicode",
        "cache",
        "retry",
        "timeout",
        "schema",
        "index",
        "login",
        "export",
        "report",
    ]
)
claim_texts = st.lists(words, min_size=2, max_size=4).map(" ".join)


@given(
    texts=st.lists(claim_texts, min_size=1, max_size=4),
    confs=st.lists(
        st.sampled_from([0.1, 0.49, 0.5, 0.51, 0.85, 0.9, 0.99]), min_size=4, max_size=4
    ),
    feedback=st.lists(words, min_size=1, max_size=5).map(" ".join),
    explicit=st.booleans(),
    extra_conf=st.sampled_from([0.05, 0.5, 0.95]),
)
def test_adding_an_unrelated_claim_never_changes_decisions_on_the_others(
    texts: list[str], confs: list[float], feedback: str, explicit: bool, extra_conf: float
) -> None:
    claims = [{"id": f"c{i}", "text": t, "confidence": confs[i]} for i, t in enumerate(texts)]
    unrelated = {"id": "zz", "text": "quarterly zebra budget spreadsheet", "confidence": extra_conf}

    def run(cs: list[dict[str, Any]]) -> dict[str, Any]:
        ev = [
            {
                "trace_id": "p",
                "type": "candidate",
                "candidate_id": "v1",
                "content": "x",
                "labels": {"valid": True},
            },
            {"trace_id": "p", "type": "claims", "claims": cs},
            {
                "trace_id": "p",
                "type": "message",
                "role": "user",
                "content": feedback,
                "feedback": {"kind": "challenge", "targets": ["c0"] if explicit else []},
                "labels": {"valid": False},
            },
            {
                "trace_id": "p",
                "type": "candidate",
                "candidate_id": "v2",
                "content": "y",
                "labels": {"valid": False},
            },
        ]
        out: dict[str, Any] = ChecklistPolicy().analyse(Trace.from_events(ev))
        return out["feedback_events"][0]

    before, after = run(claims), run(claims + [unrelated])
    assert "zz" not in after["targeted"]
    assert after["claim_actions"] == before["claim_actions"]
    assert after["action"] == before["action"]


json_scalars = st.one_of(st.none(), st.booleans(), st.integers(-5, 5), st.text(max_size=5))
event_types = st.sampled_from(
    [
        "trace",
        "message",
        "tool_call",
        "tool_result",
        "claims",
        "candidate",
        "verification",
        "check",
        "judgment",
        "weird",
    ]
)
events = st.lists(
    st.fixed_dictionaries(
        {"trace_id": st.just("h"), "type": event_types},
        optional={
            "role": st.sampled_from(["user", "assistant"]),
            "content": json_scalars,
            "name": json_scalars,
            "arguments": st.dictionaries(st.text(max_size=3), json_scalars, max_size=2),
            "status": st.sampled_from(["ok", "error"]),
            "accepts": json_scalars,
            "votes": json_scalars,
            "claims": st.lists(json_scalars, max_size=2),
            "feedback": st.just({"kind": "challenge"}),
            "labels": st.just({"valid": True}),
            "round": json_scalars,
        },
    ),
    max_size=12,
)


@given(evs=events)
@settings(max_examples=80)
def test_replay_with_no_policy_returns_the_trace_unchanged(evs: list[dict[str, Any]]) -> None:
    r = replay(evs)
    assert r.trajectory == evs and all(a is b for a, b in zip(r.trajectory, evs, strict=True))
    assert r.continuation == "exact" and r.guarded_success == r.actor_success


@given(evs=events)
@settings(max_examples=80)
def test_audit_never_crashes_on_arbitrary_v1_shaped_input(evs: list[dict[str, Any]]) -> None:
    import json

    from policies.audit import audit_trace

    for res in audit_trace(evs).values():
        json.dumps(res.to_dict(), allow_nan=False)
