"""TwinCheck's certificates, each precondition pinned by a positive and a negative case on
fresh test traces (TwinCheck App. Figs. 4–6; false patterns seen in real BFCL runs)."""

from __future__ import annotations

from typing import Any

import pytest

from policies.certificates import (
    CertContext,
    Hit,
    Twin,
    identifier_kind,
    inverse_action,
    inverse_name,
    repeat_after_error,
    unique_stale_argument,
)
from policies.facts import TraceFacts
from policies.tool_profile import build_profile
from policies.trace import ToolCall, Trace
from tests.builders.events import Events, account_tools, lock_unlock_trace

from ._twin_traces import FILES, MESSAGES, SOCIAL, TRADING, VEHICLE, bfcl, brake_release, stale_card


def at_last_call(events: list[dict[str, Any]], **ctx: Any) -> tuple[ToolCall, CertContext]:
    t = Trace.from_events(events)
    call = [e for e in t.events if isinstance(e, ToolCall)][-1]
    f = TraceFacts()
    for e in t.events[: call.index]:
        f.observe(e)
    return call, CertContext(t, f, build_profile(t), **ctx)


def run(cert: Any, b: Events | list[dict[str, Any]], **ctx: Any) -> Hit | None:
    events = b.events if isinstance(b, Events) else b
    call, c = at_last_call(events, **ctx)
    hit: Hit | None = cert(call, c)
    return hit


# --- inverse_action -------------------------------------------------------------------------


def test_lexical_inverse_names() -> None:
    assert inverse_name("unlock_account") == "lock_account"
    assert inverse_name("lock_account") == "unlock_account"
    assert inverse_name("removeItem") == "addItem"
    assert inverse_name("get_account") is None


def test_fig4_lexical_pair_with_completion_twin() -> None:
    hit = run(inverse_action, lock_unlock_trace()[:-2])
    assert hit is not None and hit.twin == Twin("completion", text=hit.twin.text)
    assert hit.details["table"] == "lexical" and hit.details["inverts"] == 2
    assert "completion" in hit.twin_reason


def test_unasked_brake_release_after_pressing_is_caught() -> None:
    hit = run(inverse_action, brake_release())
    assert hit is not None
    assert hit.details["pair"] == "brake pedal press/release"
    assert hit.details["target"] == "argument-less target"
    assert hit.details["table"] == "bfcl" and hit.twin is not None
    assert hit.twin.kind == "completion"  # the turn started the engine; its failure resolved


@pytest.mark.parametrize(
    "request_text",
    [
        "Start the engine, then release the brake pedal.",
        "Start the engine and undo whatever you pressed.",
        "Start the engine; once it runs, releasing the brake is fine.",
    ],
)
def test_requested_release_is_no_certificate(request_text: str) -> None:
    assert run(inverse_action, brake_release(request_text)) is None


def test_flag_valued_inverse_on_overlapping_doors() -> None:
    b = bfcl("doors", VEHICLE)
    b.user("Make sure the car is secured before we go.")
    b.call("c1", "lockDoors", unlock=False, door=["driver", "passenger"])
    b.result("c1", content='{"lockStatus": "locked", "remainingUnlockedDoors": 0}')
    b.call("c2", "lockDoors", unlock=True, door=["passenger"])
    hit = run(inverse_action, b)
    assert hit is not None and hit.details["pair"] == "doors lock/unlock"
    assert hit.details["target"] == "door = door"
    b2 = bfcl("doors2", VEHICLE)  # different doors: a different target
    b2.user("Make sure the car is secured before we go.")
    b2.call("c1", "lockDoors", unlock=False, door=["driver"])
    b2.result("c1", content="{}")
    b2.call("c2", "lockDoors", unlock=True, door=["passenger"])
    assert run(inverse_action, b2) is None


def test_renamed_target_argument_follow_unfollow() -> None:
    b = bfcl("follow", SOCIAL)
    b.user("Follow charlie for me.")
    b.call("c1", "follow_user", username_to_follow="charlie")
    b.result("c1", content='{"follow_status": true}')
    b.call("c2", "unfollow_user", username_to_unfollow="charlie")
    hit = run(inverse_action, b)
    assert hit is not None and hit.details["target"] == "username_to_follow = username_to_unfollow"
    b.events[-1]["arguments"] = {"username_to_unfollow": "bob"}
    assert run(inverse_action, b) is None


def test_target_created_by_the_first_call_place_and_cancel_order() -> None:
    b = bfcl("order", TRADING)
    b.user("Buy 10 shares of NVDA.")
    b.call("c1", "place_order", symbol="NVDA", amount=10)
    b.result("c1", content='{"order_id": 12446, "status": "Pending"}')
    b.call("c2", "cancel_order", order_id=12446)
    hit = run(inverse_action, b)
    assert hit is not None and hit.details["target"] == "order_id = result['order_id']"
    b.events[-1]["arguments"] = {"order_id": 99}
    assert run(inverse_action, b) is None


def test_no_certificate_without_an_earlier_success_in_the_turn() -> None:
    b = brake_release()
    b.events[5]["status"] = "error"  # the press failed: nothing to invert
    assert run(inverse_action, b) is None
    b2 = brake_release()
    b2.events.insert(
        7,
        {"trace_id": "brake", "type": "message", "role": "user", "content": "Thanks.", "seq": 6.5},
    )
    for i, e in enumerate(b2.events):
        e["seq"] = i
    assert run(inverse_action, b2) is None  # the press was in an earlier turn
    assert run(inverse_action, b2, inverse_scope="trace") is not None


def test_target_made_up_by_the_actor_is_a_correction_not_a_reversal() -> None:
    # real BFCL base_39: touch 'js' (a typo), rm 'js', then touch 'script.js'
    b = bfcl("typo", FILES)
    b.user("Create 'index.html' and 'script.js' in this folder.")
    b.call("c1", "touch", file_name="js")
    b.result("c1", content="None")
    b.call("c2", "rm", file_name="js")
    assert run(inverse_action, b) is None
    b.events[1]["content"] = "Create 'js' in this folder."  # now the user named the target
    assert run(inverse_action, b) is not None


def test_target_used_in_between_is_a_move_not_a_reversal() -> None:
    # real BFCL miss_func_12: touch f, cp f Documents, rm f
    b = bfcl("move", FILES)
    b.user("Create 'summary.txt' in the 'Documents' directory.")
    b.call("c1", "touch", file_name="summary.txt")
    b.result("c1", content="None")
    b.call("c2", "cp", source="summary.txt", destination="Documents")
    b.result("c2", content='{"result": "\'summary.txt\' copied"}')
    b.call("c3", "rm", file_name="summary.txt")
    assert run(inverse_action, b) is None


def test_changing_directory_in_between_breaks_the_target() -> None:
    b = bfcl("cd", FILES)
    b.user("Create 'summary.txt' in the current directory.")
    b.call("c1", "touch", file_name="summary.txt")
    b.result("c1", content="None")
    b.call("c2", "cd", folder="..")
    b.result("c2", content="{}")
    b.call("c3", "rm", file_name="summary.txt")
    assert run(inverse_action, b) is None


def test_deletion_twin_when_a_failure_of_the_turn_is_unresolved() -> None:
    b = Events("z", tools=account_tools())
    b.user("lock acc_1 and set payment for acc_9")
    b.call("c1", "lock_account", key="acc_1")
    b.result("c1", content="ok")
    b.call("c2", "set_payment", key="acc_9", value="card")
    b.result("c2", status="error", content="acc_9 unknown")
    b.call("c3", "unlock_account", key="acc_1")
    hit = run(inverse_action, b)
    assert hit is not None and hit.twin == Twin("delete") and "unresolved" in hit.twin_reason


# --- repeat_after_error ---------------------------------------------------------------------


def repeat_trace(between: str = "") -> Events:
    b = Events("r", tools=account_tools())
    b.user("Change the payment of acc_7 to card_1")
    b.call("c1", "set_payment", key="acc_7", value="card_1")
    b.result("c1", status="error", content="payment method not found")
    if between == "success":
        b.call("c2", "get_account", key="acc_7")
        b.result("c2", content={"key": "acc_7", "payment": "card_0"})
    elif between == "user":
        b.assistant("That failed. Shall I retry?")
        b.user("Yes, try again.")
    b.call("c3", "set_payment", key="acc_7", value="card_1")
    return b


def test_fig5_identical_call_after_error_gets_a_grounded_read() -> None:
    hit = run(repeat_after_error, repeat_trace())
    assert hit is not None and hit.twin == Twin("call", "get_account", {"key": "acc_7"})
    assert hit.details["failed_call"] == 2 and hit.details["error"] == "payment method not found"
    assert hit.details["candidates"][0]["features"]["shared_arguments"] == 1.0
    assert "most relevant" in hit.twin_reason


def test_a_user_message_in_between_does_not_matter() -> None:
    # τ-bench agents retry the identical failing call after each user nudge
    assert run(repeat_after_error, repeat_trace("user")) is not None


def test_a_success_in_between_or_different_arguments_is_no_certificate() -> None:
    assert run(repeat_after_error, repeat_trace("success")) is None
    b = repeat_trace()
    b.events[-1]["arguments"] = {"key": "acc_7", "value": "card_2"}
    assert run(repeat_after_error, b) is None


def test_twin_ranking_fills_an_enumerated_argument_from_the_error_text() -> None:
    b = bfcl("engine", VEHICLE)
    b.user("Start the engine.")
    b.call("c1", "startEngine", ignitionMode="START")
    b.result(
        "c1",
        status="error",
        content='{"error": "Brake pedal needs to be pressed when starting the engine."}',
    )
    b.call("c2", "startEngine", ignitionMode="START")
    hit = run(repeat_after_error, b)
    assert hit is not None and hit.twin == Twin(
        "call", "displayCarStatus", {"option": "brakePedal"}
    )
    ranked = [c["tool"] for c in hit.details["candidates"]]
    assert ranked[0] == "displayCarStatus" and "check_tire_pressure" in ranked
    assert hit.details["candidates"][0]["features"]["error_overlap"] >= 2


def test_tools_not_offered_at_this_turn_are_never_twins() -> None:
    b = bfcl(
        "hidden",
        VEHICLE,
        excluded_function=["displayCarStatus"],
        missed_function={"1": ["check_tire_pressure"]},
    )
    b.user("Start the engine.")
    b.call("c1", "startEngine", ignitionMode="START")
    b.result("c1", status="error", content='{"error": "Brake pedal needs to be pressed."}')
    b.call("c2", "startEngine", ignitionMode="START")
    hit = run(repeat_after_error, b)
    assert hit is not None and hit.twin is not None
    ranked = {c["tool"] for c in hit.details["candidates"]}
    assert not ranked & {"displayCarStatus", "check_tire_pressure"}


def test_failing_read_gets_another_read_never_itself() -> None:
    b = bfcl("read", VEHICLE)
    b.user("How are my tyres?")
    b.call("c1", "check_tire_pressure")
    b.result("c1", status="error", content='{"error": 404}')
    b.call("c2", "check_tire_pressure")
    hit = run(repeat_after_error, b)
    assert hit is not None and hit.twin is not None and hit.twin.name != "check_tire_pressure"


def test_ask_user_twin_when_no_read_can_be_grounded() -> None:
    b = Events("ask", tools=account_tools()[:2] + [account_tools()[3]])  # no read-only tool
    b.user("Change the payment of acc_7 to card_1")
    b.call("c1", "set_payment", key="acc_7", value="card_1")
    b.result("c1", status="error", content="payment method not found")
    b.call("c2", "set_payment", key="acc_7", value="card_1")
    hit = run(repeat_after_error, b)
    assert hit is not None and hit.twin is not None and hit.twin.kind == "ask_user"
    assert "no read-only tool" in hit.twin_reason


# --- unique_stale_argument ------------------------------------------------------------------


def test_fig6_stale_card_replaced_by_the_requested_one() -> None:
    hit = run(unique_stale_argument, stale_card())
    assert hit is not None and hit.twin is not None
    assert hit.twin.arguments == {"order_id": "#W123", "payment_method_id": "card_8107"}
    assert hit.details["argument"] == "payment_method_id" and hit.details["stale"] == "card_4332"


@pytest.mark.parametrize(
    "request_text",
    [
        "Use the card ending in 4332, please.",  # the request still names the actor's value
        "Use card 8107 or card 4332.",  # not a unique different value
        "Pay with my usual card.",  # no value named
        "Use the card ending in 9999.",  # names no value the trace makes concrete
    ],
)
def test_stale_argument_needs_a_unique_different_concrete_request(request_text: str) -> None:
    assert run(unique_stale_argument, stale_card(request_text)) is None


def test_value_produced_after_the_request_is_fresh_not_stale() -> None:
    # real false pattern 1 (BFCL base_14): add_contact returns USR005 in the same turn
    b = bfcl("fresh", MESSAGES)
    b.user("Who is in the workspace?")
    b.call("c0", "get_user_id", user="Ann")
    b.result("c0", content='{"user_id": "USR005"}')
    b.user("Logging in as USR001. Message my colleague John Levy, add him as new contact, 'Hi'.")
    b.call("c1", "message_login", user_id="USR001")
    b.result(
        "c1", content='{"login_status": true, "message": "User \'USR001\' logged in successfully."}'
    )
    b.call("c2", "add_contact", user_name="John Levy")
    b.result("c2", content='{"added_status": true, "user_id": "USR005"}')
    b.call("c3", "send_message", receiver_id="USR005", message="Hi")
    assert run(unique_stale_argument, b) is None


def test_the_users_own_login_id_is_not_the_requested_receiver() -> None:
    # real false pattern 2 (BFCL base_41): the user gave their own id, a tool echoed it
    b = bfcl("self", MESSAGES)
    b.user("Find Bob's id for me.")
    b.call("c1", "get_user_id", user="Bob")
    b.result("c1", content='{"user_id": "USR002"}')
    b.user("Forward my notes to Bob please. I am USR001.")
    b.call("c2", "send_message", receiver_id="USR002", message="notes")
    assert run(unique_stale_argument, b) is None  # "I am USR001": the user's own identity
    b.events[-2]["content"] = "Forward my notes to Bob please."
    b.events.insert(
        -1,
        {
            "trace_id": "self",
            "type": "tool_call",
            "call_id": "cl",
            "name": "message_login",
            "arguments": {"user_id": "USR001"},
        },
    )
    b.events.insert(
        -1,
        {
            "trace_id": "self",
            "type": "tool_result",
            "call_id": "cl",
            "content": "User 'USR001' logged in",
        },
    )
    for i, e in enumerate(b.events):
        e["seq"] = i
    assert run(unique_stale_argument, b) is None  # USR001 plays user_id, not receiver_id


def test_a_different_user_named_for_the_same_role_is_stale() -> None:
    b = bfcl("role", MESSAGES)
    b.user("Find Bob's id for me.")
    b.call("c1", "get_user_id", user="Bob")
    b.result("c1", content='{"user_id": "USR002"}')
    b.call("c1b", "get_user_id", user="Eve")
    b.result("c1b", content='{"user_id": "USR003"}')
    b.user("Actually send the notes to USR003 instead.")
    b.call("c2", "send_message", receiver_id="USR002", message="notes")
    hit = run(unique_stale_argument, b)
    assert hit is not None and hit.twin is not None
    assert hit.twin.arguments["receiver_id"] == "USR003"
    # ... unless a call of this turn already bound USR003
    b.events.insert(
        -1,
        {
            "trace_id": "role",
            "type": "tool_call",
            "call_id": "x",
            "name": "send_message",
            "arguments": {"receiver_id": "USR003", "message": "notes"},
        },
    )
    for i, e in enumerate(b.events):
        e["seq"] = i
    assert run(unique_stale_argument, b) is None


@pytest.mark.parametrize(
    "value,kind",
    [
        ("card_4332", ("card_", "4332")),
        ("gift_card_8516878", ("gift_card_", "8516878")),
        ("USR001", ("USR", "001")),
        ("4BMN53", None),
        ("2", None),
        ("acc_7", None),
    ],
)
def test_identifier_kind(value: str, kind: tuple[str, str] | None) -> None:
    assert identifier_kind(value) == kind


def test_counts_and_codes_are_not_identifiers_of_a_kind() -> None:
    b = Events("n", tools=account_tools())
    b.user("book it")
    b.call("c1", "get_account", key="acc_7")
    b.result("c1", content={"key": "acc_7", "bags": 0, "code": "4BMN53", "other": 2})
    b.user("I want 2 bags on reservation 4BMN53")
    b.call("c2", "set_payment", key="4BMN53", value="0")
    assert run(unique_stale_argument, b) is None


def test_every_registered_certificate_reads_only_the_prefix() -> None:
    """The facts a certificate sees end before the call: appending later events changes
    nothing."""
    for cert, b in (
        (inverse_action, brake_release()),
        (unique_stale_argument, stale_card()),
        (repeat_after_error, repeat_trace()),
    ):
        before = run(cert, b)
        call, _ = at_last_call(b.events)
        more = [
            *b.events,
            {
                "trace_id": b.trace_id,
                "type": "tool_result",
                "call_id": call.call_id,
                "content": "ok",
                "seq": 999,
            },
            {
                "trace_id": b.trace_id,
                "type": "message",
                "role": "user",
                "content": "undo it all, 8107 4332",
                "seq": 1000,
            },
        ]
        t = Trace.from_events(more)
        f = TraceFacts()
        for e in t.events[: call.index]:
            f.observe(e)
        after = cert(t.events[call.index], CertContext(t, f, build_profile(t)))
        assert (before is None) == (after is None)
        assert before is None or after is None or before.twin == after.twin


def test_a_missing_function_prompt_does_not_replace_the_request() -> None:
    """BFCL miss_func: the turn that adds functions says only "I have updated some more
    functions…"; the request it repeats is the previous one (so "release" asked there still
    counts, and the stale-argument certificate still reads that request)."""
    b = bfcl("miss", VEHICLE, missed_function={"1": ["releaseBrakePedal"]})
    b.user("Start the engine, then release the brake.", turn=0)
    b.call("c1", "pressBrakePedal", pedalPosition=1.0)
    b.result("c1", content='{"brakePedalStatus": "pressed"}')
    b.call("c2", "startEngine", ignitionMode="START")
    b.result("c2", content='{"engineState": "running"}')
    b.user("I have updated some more functions you can choose from. What about now?", turn=1)
    b.call("c3", "releaseBrakePedal", turn=1)
    call, ctx = at_last_call(b.events, inverse_scope="trace")
    assert ctx.facts.latest_request.startswith("Start the engine")
    assert ctx.facts.latest_user.startswith("I have updated")
    assert inverse_action(call, ctx) is None  # the release was asked for in the request
    b.events[1]["content"] = "Start the engine."
    assert run(inverse_action, b, inverse_scope="trace") is not None
    assert run(inverse_action, b) is None  # the press was in the previous turn


def test_a_read_that_already_failed_identically_is_not_a_twin() -> None:
    b = Events("rr", tools=account_tools())
    b.user("Change the payment of acc_7 to card_1")
    b.call("c0", "get_account", key="acc_7")
    b.result("c0", status="error", content="account service down")
    b.call("c1", "set_payment", key="acc_7", value="card_1")
    b.result("c1", status="error", content="payment method not found")
    b.call("c2", "set_payment", key="acc_7", value="card_1")
    hit = run(repeat_after_error, b)
    assert hit is not None and hit.twin is not None and hit.twin.kind == "ask_user"
