from __future__ import annotations

import pytest

from policies.audit import audit_trace
from policies.commit import (
    CHALLENGE_PROMPT,
    CommitPolicy,
    CommitSettings,
    challenge_loop,
    commit_rule,
    commit_rule_live,
    flips,
    period_two,
)
from policies.extractors import ExtractorSettings, answers_agree, extract_answer
from policies.trace import Trace

from ._build import Events

FOLD = ExtractorSettings()


@pytest.mark.parametrize(
    "kind,text,expected",
    [
        ("exact", " Canberra ", " Canberra "),
        ("fold", "  CANBERRA!! ", "canberra"),
        ("fold", "The capital is   Canberra.", "the capital is canberra"),
        ("numeric", "so x = 1,234.5 in total", 1234.5),
        ("numeric", "first 3 then finally -2e3", -2000.0),
        ("numeric", "no digits", None),
        ("choice", "The answer is (c) because", "C"),
        ("choice", "B. It follows from", "B"),
        ("choice", "I pick answer: d", "D"),
        ("choice", "nothing here", None),
    ],
)
def test_extractors(kind: str, text: str, expected: object) -> None:
    assert extract_answer(text, ExtractorSettings(kind=kind)) == expected  # type: ignore[arg-type]


def test_regex_extractor_uses_group_or_whole_match() -> None:
    s = ExtractorSettings(kind="regex", pattern=r"capital is (\w+)")
    assert extract_answer("The capital is Canberra.", s) == "Canberra"
    assert extract_answer("x", s) is None
    assert extract_answer("Sydney!", ExtractorSettings(kind="regex", pattern=r"Sydney")) == "Sydney"


def test_numeric_agreement_uses_tolerance() -> None:
    s = ExtractorSettings(kind="numeric", abs_tol=1e-3)
    assert answers_agree(extract_answer("≈ 3.14159", s), extract_answer("3.1416", s), s)
    assert not answers_agree(extract_answer("3.14", s), extract_answer("3.15", s), s)
    assert not answers_agree(None, None, s)


def test_commit_rule_cases() -> None:
    assert commit_rule(["a", "a", "b"], FOLD) == (0, 2, 0)
    assert commit_rule(["a", "b", "b", "a"], FOLD) == (2, 3, 1)
    assert commit_rule(["a", "b"], FOLD) == (None, 3, 1)
    assert commit_rule(["a"], FOLD) == (0, 1, 0)
    assert commit_rule([], FOLD) == (None, 0, 0)
    assert commit_rule(["a", "a", "a", "b", "c"], FOLD, budget=2) == (0, 3, 0)
    assert commit_rule(["a", "a", "b", "c"], FOLD, budget=2) == (3, 4, 1)


def test_flips_and_period_two() -> None:
    assert flips(["a", "b", "a", "b"], FOLD) == 3
    assert period_two(["a", "b", "a", "b"], FOLD)
    assert not period_two(["a", "b", "c"], FOLD) and not period_two(["a", "b"], FOLD)


def flip_flop_model(messages: list[dict[str, str]]) -> str:
    """The seed's mock: flips on every "are you sure"; otherwise repeats itself."""
    answers = [m["content"] for m in messages if m["role"] == "assistant"]
    if not answers:
        return "Canberra"
    if messages[-1]["content"] == CHALLENGE_PROMPT:
        return "Canberra" if "Sydney" in answers[-1] else "Hmm, actually it might be Sydney"
    return answers[-1]


def test_canberra_sydney_broken_loop_vs_commit_rule() -> None:
    q = "What is the capital of Australia?"
    broken20 = challenge_loop(flip_flop_model, q, 20)
    broken21 = challenge_loop(flip_flop_model, q, 21)
    assert broken20["model_calls"] == 20 and "Sydney" in broken20["answer"]
    assert broken21["answer"] == "Canberra"  # the shipped answer depends on the cap's parity
    fixed = commit_rule_live(flip_flop_model, q)
    assert fixed["model_calls"] <= 3
    assert [p["phase"] for p in fixed["log"]] == ["answer", "verify", "revision"]
    assert "Sydney" in fixed["answer"]  # bounded cost, not guaranteed correctness (the seed)

    stable = commit_rule_live(lambda m: "Canberra.", q)
    assert stable["model_calls"] == 2 and stable["revisions"] == 0


def flip_flop_trace(n: int) -> list[dict[str, object]]:
    b = Events("cs", task={"id": "capital"})
    b.user("What is the capital of Australia?", turn=0)
    for i in range(n):
        if i:
            b.user(CHALLENGE_PROMPT, turn=i)
        text = "Canberra" if i % 2 == 0 else "Hmm, actually it might be Sydney"
        b.add(
            "candidate", candidate_id=f"a{i}", turn=i, content=text, labels={"correct": i % 2 == 0}
        )
    return b.events


def test_commit_policy_on_recorded_flip_flop_trace() -> None:
    policy = CommitPolicy(
        CommitSettings(extractor=ExtractorSettings(kind="regex", pattern=r"(Canberra|Sydney)"))
    )
    record = policy.analyse(Trace.from_events(flip_flop_trace(20)))[0]
    assert record["actor_calls"] == 20 and record["commit_calls"] == 3
    assert record["flips"] == 19 and record["period_two_oscillation"]
    assert record["parity_dependent"] and record["calls_saved"] == 17
    assert record["answers"][:3] == ["Canberra", "Sydney", "Canberra"]
    assert (record["actor_correct"], record["commit_correct"]) == (False, True)
    res = audit_trace(flip_flop_trace(20), policies=("commit",))["commit"]
    assert res.applied and res.transition == "rescue" and res.continuation == "recorded"
    assert res.guarded_trajectory is not None
    assert res.guarded_trajectory[-1]["meta"]["policy"] == "commit"
    # trajectory: header, question, a0, challenge, a1, challenge, a2, committed answer
    assert len(res.guarded_trajectory) == 8


def test_commit_policy_without_challenge_or_with_two_disagreeing_answers() -> None:
    b = Events("n")
    b.user("2+2?")
    b.assistant("4")
    res = audit_trace(b.events, policies=("commit",))["commit"]
    assert not res.applied and res.continuation == "exact" and res.transition == "unknown"
    two = flip_flop_trace(2)
    res2 = audit_trace(two, policies=("commit",))["commit"]
    assert res2.applied and res2.guarded_success is None and res2.transition == "unknown"
    assert res2.record["commit_calls"] == 3 and res2.record["commit_index"] is None


def test_challenge_detected_by_feedback_kind() -> None:
    b = Events("k")
    b.user("q")
    b.assistant("Paris")
    b.user("no.", feedback={"kind": "challenge"})
    b.assistant("paris")
    record = CommitPolicy().analyse(Trace.from_events(b.events))[0]
    assert record["applied"] and record["commit_calls"] == 2 and record["commit_index"] == 0


def test_answer_sequence_starts_at_the_answer_under_challenge() -> None:
    b = Events("conv")
    b.user("hi")
    b.assistant("Hello! How can I help?")  # not part of the challenged sequence
    b.user("Is insurance on reservation PEP4E0?")
    b.assistant("No, it is not on the booking.")
    b.user("Can you double-check?")
    b.assistant("No, it is not on the booking.")
    b.assistant("Anything else?")  # a second message in the same reply: not an answer
    record = CommitPolicy().analyse(Trace.from_events(b.events))[0]
    assert record["answer_events"] == [4, 6]  # index 0 is the header
    assert record["commit_calls"] == 2 and record["commit_index"] == 0
    assert record["flips"] == 0 and not record["parity_dependent"]


def test_unanswered_challenge_adds_no_answer() -> None:
    b = Events("u")
    b.user("q")
    b.assistant("A")
    b.user("are you sure?")
    b.user("Are you really sure?")
    b.assistant("B")
    record = CommitPolicy().analyse(Trace.from_events(b.events))[0]
    assert record["answers"] == ["a", "b"] and record["challenges"] == 2
