from __future__ import annotations

import pytest

from policies.audit import audit_trace
from policies.commit.extractors import ExtractorSettings, answers_agree, extract_answer
from policies.commit.policy import (
    CHALLENGE_PROMPT,
    CommitPolicy,
    CommitSettings,
    challenge_loop,
    commit_rule,
    commit_rule_live,
    flips,
    period_two,
)
from policies.trace import Trace
from tests.builders.events import Events

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
    assert commit_rule([True]) == ("first", 2, 0)
    assert commit_rule([False]) == ("pick_one", 3, 1)
    assert commit_rule([True, True]) == ("first", 3, 0)  # budget 2
    assert commit_rule([True, False]) == ("pick_one", 4, 1)
    with pytest.raises(ValueError, match="at least one re-check"):
        commit_rule([])


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


CAPITAL = ExtractorSettings(kind="regex", pattern=r"(Canberra|Sydney)")


def test_recorded_recheck_then_live_pick_one_call() -> None:
    events = flip_flop_trace(20)
    policy = CommitPolicy(CommitSettings(extractor=CAPITAL))
    record = policy.analyse(Trace.from_events(events))
    assert record["actor_calls"] == 20 and record["flips"] == 19
    assert record["period_two_oscillation"] and record["parity_dependent"]
    assert record["answers"][:3] == ["Canberra", "Sydney", "Canberra"]
    # the recorded reply to the rule's own re-check prompt is the re-check (exact replay)...
    assert record["recheck_source"] == "recorded" and record["rechecks"][0]["agrees"] is False
    # ...but the "pick one, final" call is not in the trace: unknown, never answer 3
    assert record["commit_calls"] == 3 and record["commit_index"] is None
    assert record["commit_correct"] is None
    assert "'pick one, final' call is not in the trace" in record["unknown_reason"]
    res = audit_trace(
        events, policies=("commit",), settings={"commit": {"extractor": CAPITAL.to_dict()}}
    )
    c = res["commit"]
    assert c.applied and c.transition == "unknown" and c.continuation == "truncated"
    assert c.unknown_reason == record["unknown_reason"]
    # with a model, the call is made live and its answer is labelled by meaning
    live = audit_trace(
        events,
        policies=("commit",),
        settings={"commit": {"extractor": CAPITAL.to_dict()}},
        responder=flip_flop_model,
    )["commit"]
    sydney = "Hmm, actually it might be Sydney"
    assert live.record["live_calls"] == [{"call": "pick one, final", "reply": sydney}]
    # the seed's honest result: bounded cost, not guaranteed correctness
    assert live.record["commit_label_basis"] == "same answer as recorded answer 1"
    assert live.record["commit_calls"] == 3 and live.record["calls_saved"] == 17
    assert (live.actor_success, live.guarded_success, live.transition) == (False, False, "same")
    # trajectory: header, question, a0, challenge, a1 (the re-check), the pick-one reply, commit
    assert live.guarded_trajectory is not None and len(live.guarded_trajectory) == 7
    assert live.guarded_trajectory[-1]["meta"]["committed"]


def test_a_failing_model_call_is_unknown_with_its_reason() -> None:
    def broken(messages: list[dict[str, str]]) -> str:
        raise TimeoutError("endpoint timed out")

    res = audit_trace(
        flip_flop_trace(4),
        policies=("commit",),
        settings={"commit": {"extractor": CAPITAL.to_dict()}},
        responder=broken,
    )["commit"]
    assert res.transition == "unknown"
    assert res.unknown_reason == "pick-one call failed: TimeoutError: endpoint timed out"


def test_live_recheck_when_the_recorded_challenge_is_another_prompt() -> None:
    b = Events("k")
    b.user("Capital of France?")
    b.assistant("Paris")
    b.user("no.", feedback={"kind": "challenge"})
    b.assistant("Lyon")
    b.events[-1]["labels"] = {"correct": False}
    b.events[2]["labels"] = {"correct": True}
    record = CommitPolicy().analyse(Trace.from_events(b.events))
    assert record["applied"] and record["unknown_reason"] == (
        "the re-check is not in the trace and no model is configured"
    )
    seen: list[list[dict[str, str]]] = []

    def steady(messages: list[dict[str, str]]) -> str:
        seen.append(messages)
        return "It is Paris."

    live = CommitPolicy(
        CommitSettings(extractor=ExtractorSettings(kind="regex", pattern=r"(Paris|Lyon)")),
        responder=steady,
    ).analyse(Trace.from_events(b.events))
    assert live["recheck_source"] == "live" and live["commit_calls"] == 2
    assert live["commit_index"] == 0 and live["commit_correct"] is True
    assert seen[0][-1] == {"role": "user", "content": CHALLENGE_PROMPT}
    assert seen[0][:2] == [
        {"role": "user", "content": "Capital of France?"},
        {"role": "assistant", "content": "Paris"},
    ]
    # opt-in approximation: any recorded challenge counts as the re-check, labelled as such
    approx = CommitPolicy(CommitSettings(recorded_recheck="any_challenge")).analyse(
        Trace.from_events(b.events)
    )
    assert approx["recheck_source"] == "recorded_any" and approx["commit_calls"] == 3


def test_model_label_compares_answers_on_meaning() -> None:
    b = Events("m")
    b.user("How many legs does a spider have?")
    b.assistant("A spider has eight legs.", labels={"correct": True})
    b.user(CHALLENGE_PROMPT)
    b.assistant("Yes: 8.", labels={"correct": True})
    b.user(CHALLENGE_PROMPT)
    b.assistant("Actually six.", labels={"correct": False})
    asked: list[str] = []

    def labeler(messages: list[dict[str, str]]) -> str:
        asked.append(messages[-1]["content"])
        a, b_ = messages[-1]["content"].split("Answer A:")[1].split("Answer B:")
        same = ("eight" in a or "8" in a) == ("eight" in b_ or "8" in b_)
        return "SAME" if same else "DIFFERENT"

    folded = CommitPolicy().analyse(Trace.from_events(b.events))
    assert folded["rechecks"][0]["agrees"] is False  # "a spider has eight legs" vs "yes 8"
    meaning = CommitPolicy(CommitSettings(compare="model"), labeler=labeler).analyse(
        Trace.from_events(b.events)
    )
    assert meaning["rechecks"][0]["agrees"] is True and meaning["commit_calls"] == 2
    assert meaning["commit_correct"] is True and "spider" in asked[0]
    res = audit_trace(b.events, ["commit"], {"commit": {"compare": "model"}}, labeler=labeler)
    assert res["commit"].transition == "rescue"  # ships "eight" where the actor said six
    with pytest.raises(ValueError, match="labeler"):
        CommitPolicy(CommitSettings(compare="model"))
    mute = CommitPolicy(CommitSettings(compare="model"), labeler=lambda m: "no idea")
    assert mute.analyse(Trace.from_events(b.events))["unknown_reason"] == (
        "the comparison model gave no verdict"
    )


def test_commit_policy_without_challenge_is_not_applicable() -> None:
    b = Events("n")
    b.user("2+2?")
    b.assistant("4")
    res = audit_trace(b.events, policies=("commit",))["commit"]
    assert not res.applied and res.transition == "not_applicable"
    assert res.not_applicable == "no challenges" and res.continuation == "exact"


def test_answer_sequence_starts_at_the_answer_under_challenge() -> None:
    b = Events("conv")
    b.user("hi")
    b.assistant("Hello! How can I help?")  # not part of the challenged sequence
    b.user("Is insurance on reservation PEP4E0?")
    b.assistant("No, it is not on the booking.")
    b.user("Can you double-check?")
    b.assistant("No, it is not on the booking.")
    b.assistant("Anything else?")  # a second message in the same reply: not an answer
    record = CommitPolicy(CommitSettings(recorded_recheck="any_challenge")).analyse(
        Trace.from_events(b.events)
    )
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
    record = CommitPolicy().analyse(Trace.from_events(b.events))
    assert record["answers"] == ["a", "b"] and record["challenges"] == 2
