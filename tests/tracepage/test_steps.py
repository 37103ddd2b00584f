"""The steps tree of the trace page (`auditor.trace_page.steps`) and the timing fields it reads
(`auditor.trace_page.timing`): nesting by OTel parent span and by turn, missing, partial and
unusable timing, bounded rows. Pure: no database."""

from __future__ import annotations

import math
from typing import Any

import pytest

from auditor.trace_page import step_rows, steps
from auditor.trace_page.timing import (
    ABSURD_MS,
    Usage,
    cost_text,
    duration_text,
    epoch_ms,
    event_timing,
    span_timing,
)

T0 = "2026-01-31T12:00:00Z"
T0_MS = epoch_ms(T0)


def at(ms: float) -> str:
    """RFC 3339, ``ms`` after T0."""
    whole, frac = divmod(int(ms), 1000)
    return f"2026-01-31T12:{whole // 60:02d}:{whole % 60:02d}.{frac:03d}Z"


def ev(seq: int, type_: str, **fields: Any) -> dict[str, Any]:
    return {"seq": seq, "type": type_, **fields}


def shape(nodes: list[steps.Node]) -> list[Any]:
    """(label, name, seq, children) — the tree without the numbers."""
    return [(n.label, n.name, n.seq, shape(n.children)) for n in nodes]


# --- timing fields -----------------------------------------------------------------------


def test_rfc3339_times_in_any_zone_and_to_the_nanosecond():
    assert epoch_ms("2026-01-31T13:00:00.250+01:00") == T0_MS + 250
    assert epoch_ms("2026-01-31t12:00:00.000000001z") == pytest.approx(T0_MS)
    assert epoch_ms("2026-01-31 12:00:01.5Z") == T0_MS + 1500
    # not a time, a time without a zone, an impossible date: no instant
    for bad in ("soon", "2026-01-31T12:00:00", "2026-02-30T12:00:00Z", 1769860800, None):
        assert epoch_ms(bad) is None, bad


def test_event_timing_prefers_duration_ms_then_end_minus_start():
    t = event_timing(T0, at(900), 250)
    assert (t.start, t.duration, t.bad) == (T0_MS, 250.0, False)
    t = event_timing(T0, at(900), None)
    assert (t.start, t.duration, t.bad) == (T0_MS, 900.0, False)
    t = event_timing(T0, None, None)  # a start alone: a point in time
    assert (t.start, t.duration, t.bad) == (T0_MS, None, False)
    t = event_timing(None, None, 40)  # a duration alone: no place on the axis
    assert (t.start, t.duration) == (None, 40.0)
    t = event_timing(None, at(500), None)  # an end alone: a point at the end
    assert (t.start, t.duration) == (T0_MS + 500, None)
    assert not event_timing(None, None, None).recorded


@pytest.mark.parametrize(
    "end_ts, duration_ms",
    [
        (None, -5),
        (None, ABSURD_MS + 1),
        (None, math.nan),
        (None, math.inf),
        (None, True),  # a bool is not a number
        (None, "12"),
        ("2026-01-31T11:59:59Z", None),  # ends before it starts
        ("2027-01-31T12:00:00Z", None),  # a year long
        ("yesterday", None),
    ],
)
def test_negative_absurd_or_broken_durations_are_unknown(end_ts, duration_ms):
    t = event_timing(T0, end_ts, duration_ms)
    assert t.bad and t.duration is None and t.start == T0_MS


def test_a_broken_start_is_no_start():
    t = event_timing("12:00", None, 30)
    assert t.bad and t.start is None and t.duration == 30.0


def test_span_timing_from_unix_nanoseconds_zero_is_unset():
    t = span_timing(1_769_860_800_000_000_000, 1_769_860_800_250_000_000)
    assert (t.start, t.duration, t.bad) == (T0_MS, 250.0, False)
    assert span_timing(0, 0).start is None and not span_timing(0, 0).recorded
    backwards = span_timing(1_769_860_800_250_000_000, 1_769_860_800_000_000_000)
    assert backwards.bad and backwards.duration is None


def test_usage_reads_counts_and_rejects_what_is_not_a_count():
    u = Usage.of({"input_tokens": 1200, "output_tokens": 85}, 0.0042)
    assert (u.input, u.output, u.total, u.cost) == (1200, 85, 1285, 0.0042)
    u = Usage.of({"total_tokens": 99, "input_tokens": -1, "output_tokens": True}, -1)
    assert (u.input, u.output, u.total, u.cost) == (None, None, 99, None)
    assert not Usage.of("lots", "free").any


def test_display_texts():
    assert [duration_text(x) for x in (0.42, 4.2, 120, 1250, 12_500, 125_000, 3_720_000)] == [
        "0.42 ms",
        "4.2 ms",
        "120 ms",
        "1.25 s",
        "12.5 s",
        "2 min 05 s",
        "1 h 02 min",
    ]
    assert [cost_text(x) for x in (None, 0, 0.0042, 0.042, 12.5)] == [
        "",
        "$0",
        "$0.0042",
        "$0.042",
        "$12.50",
    ]


# --- nesting -----------------------------------------------------------------------------


def turn_events(**timing: dict[int, dict[str, Any]]) -> list[dict[str, Any]]:
    """Header; turn 0: user, assistant with two calls and their results (answered out of
    order), assistant answer; turn 1: user, assistant. ``timing`` adds fields by seq."""
    events = [
        ev(0, "trace"),
        ev(1, "message", role="user", turn=0),
        ev(2, "message", role="assistant", turn=0),
        ev(3, "tool_call", name="search", call_id="a", turn=0),
        ev(4, "tool_call", name="fetch", call_id="b", turn=0),
        ev(5, "tool_result", call_id="b", status="ok", turn=0),
        ev(6, "tool_result", call_id="a", status="error", turn=0),
        ev(7, "message", role="assistant", turn=0),
        ev(8, "message", role="user", turn=1),
        ev(9, "message", role="assistant", turn=1),
    ]
    for seq, fields in (timing.get("by_seq") or {}).items():
        events[seq].update(fields)
    return events


def test_by_turn_nests_calls_under_the_message_and_results_under_their_call():
    tree = steps.build(turn_events())
    assert tree.source == "turns" and tree.events == 9
    assert shape(tree.roots) == [
        (
            "Turn 0",
            "",
            1,
            [
                ("message", "user", 1, []),
                (
                    "message",
                    "assistant",
                    2,
                    [
                        ("tool_call", "search", 3, [("tool_result", "search", 6, [])]),
                        ("tool_call", "fetch", 4, [("tool_result", "fetch", 5, [])]),
                    ],
                ),
                ("message", "assistant", 7, []),
            ],
        ),
        ("Turn 1", "", 8, [("message", "user", 8, []), ("message", "assistant", 9, [])]),
    ]
    assert tree.roots[0].events == 7 and tree.roots[0].children[1].events == 5
    assert tree.roots[0].children[1].children[0].children[0].error  # status error


def test_by_turn_without_turns_is_flat_and_calls_without_a_message_sit_at_the_top():
    events = [
        ev(0, "trace"),
        ev(1, "tool_call", name="ls", call_id="c1"),
        ev(2, "tool_result", call_id="c1"),
        ev(3, "tool_result", call_id="nobody"),
        ev(4, "guardrail", name="no_rm"),
    ]
    assert shape(steps.build(events).roots) == [
        ("tool_call", "ls", 1, [("tool_result", "ls", 2, [])]),
        ("tool_result", "", 3, []),
        ("guardrail", "no_rm", 4, []),
    ]


def test_events_without_a_turn_join_the_turn_before_them():
    events = [
        ev(0, "trace"),
        ev(1, "message", role="system"),
        ev(2, "message", role="user", turn=0),
        ev(3, "claims"),
        ev(4, "message", role="user", turn=1),
    ]
    assert shape(steps.build(events).roots) == [
        ("message", "system", 1, []),
        ("Turn 0", "", 2, [("message", "user", 2, []), ("claims", "", 3, [])]),
        ("Turn 1", "", 4, [("message", "user", 4, [])]),
    ]


NS = 1_769_860_800_000_000_000  # T0 in Unix nanoseconds


def span(sid: str, parent: str | None, kind: str, start_ms: float, end_ms: float, **kw: Any):
    return {
        "span_id": sid,
        "parent_span_id": parent,
        "name": kw.pop("name", kind.lower()),
        "kind": kind,
        "start_unix_nano": NS + int(start_ms * 1e6),
        "end_unix_nano": NS + int(end_ms * 1e6),
        "status": kw.pop("status", "ok"),
        "attributes": {},
        "events": kw.pop("events", []),
    }


def otel_trace() -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The OTLP importer's shape: an AGENT root over LLM → TOOL → LLM; events name their span
    in ``span_id`` (the first LLM's only through the span's event list)."""
    spans = [
        span("r", None, "AGENT", 0, 1000, name="agent"),
        span("l1", "r", "LLM", 10, 400, name="ChatCompletion", events=[1, 2, 3]),
        span("t1", "r", "TOOL", 410, 700, name="get_weather", status="error"),
        span("l2", "r", "LLM", 710, 990, name="ChatCompletion"),
    ]
    events = [
        ev(0, "trace", spans=spans),
        ev(1, "message", role="system"),
        ev(2, "message", role="user", turn=0),
        ev(3, "tool_call", name="get_weather", call_id="c", turn=0),
        ev(4, "tool_result", call_id="c", status="error", turn=0, span_id="t1"),
        ev(5, "message", role="assistant", turn=0, span_id="l2", usage={"input_tokens": 50}),
    ]
    return events, spans


def test_by_span_nests_spans_by_parent_with_their_events_under_them():
    events, spans = otel_trace()
    tree = steps.build(events, spans)
    assert tree.source == "spans"
    assert shape(tree.roots) == [
        (
            "AGENT",
            "agent",
            1,
            [
                (
                    "LLM",
                    "ChatCompletion",
                    1,
                    [
                        ("message", "system", 1, []),
                        ("message", "user", 2, []),
                        ("tool_call", "get_weather", 3, []),
                    ],
                ),
                ("TOOL", "get_weather", 4, [("tool_result", "get_weather", 4, [])]),
                ("LLM", "ChatCompletion", 5, [("message", "assistant", 5, [])]),
            ],
        )
    ]
    root = tree.roots[0]
    assert (root.lo, root.hi) == (T0_MS, T0_MS + 1000) and not root.derived
    assert root.children[1].error and root.total.input == 50
    # the bars: the root spans the axis, the tool span sits at 41 %..70 %
    rows, total = step_rows.rows(tree)
    assert total == 9
    tool = next(r for r in rows if r["label"] == "TOOL")
    assert tool["style"] == "left:41.000%;width:29.000%" and tool["duration"] == "290 ms"
    assert rows[0]["style"] == "left:0.000%;width:100.000%"
    # the events under a span record no timing of their own: no bar, counted once each
    assert [r["bar"] for r in rows if r["label"] == "message"] == ["", "", ""]
    assert tree.untimed == 5


def test_spans_whose_parent_is_missing_or_in_a_cycle_become_roots():
    spans = [
        span("a", "b", "CHAIN", 0, 10),
        span("b", "a", "CHAIN", 0, 10),  # a and b: each the other's parent
        span("c", "gone", "LLM", 20, 30),  # its parent was never exported
        span("d", "d", "TOOL", 30, 40),  # its own parent
        span("a", None, "LLM", 0, 1),  # a repeated id: the first one counts
    ]
    spans.append(span("e", None, "UNKNOWN", 40, 50))  # a plain span (no kind attribute)
    tree = steps.build([ev(0, "trace"), ev(1, "message", role="user", span_id="zz")], spans)
    assert [(n.label, [c.label for c in n.children]) for n in tree.roots] == [
        ("CHAIN", ["CHAIN"]),
        ("LLM", []),
        ("TOOL", []),
        ("span", []),
        ("message", []),  # an event of no known span
    ]


def test_a_deep_span_chain_needs_no_recursion():
    n = 5000
    spans = [span(f"s{i}", f"s{i - 1}" if i else None, "CHAIN", i, 2 * n - i) for i in range(n)]
    tree = steps.build([ev(0, "trace"), ev(1, "message", role="user", span_id=f"s{n - 1}")], spans)
    deepest = tree.roots[0]
    while deepest.children and deepest.children[0].kind == "span":
        deepest = deepest.children[0]
    assert deepest.events == 1 and tree.roots[0].events == 1
    rows, total = step_rows.rows(tree, limit=step_rows.ALL_LIMIT)
    assert total == n + 1 and len(rows) == n + 1
    assert sum(len(r["closes"]) for r in rows) == sum(r["opens"] for r in rows) == n


def test_a_header_without_a_span_list_groups_by_turn():
    for spans in (None, [], "spans", [1, 2]):
        assert steps.build(turn_events(), spans).source == "turns"


# --- timing in the tree ------------------------------------------------------------------


def test_without_any_timing_there_are_counts_and_no_bars():
    tree = steps.build(turn_events())
    assert not tree.has_timing and tree.lo is None and tree.length == ""
    rows, _ = step_rows.rows(tree)
    assert all(r["bar"] == "" and r["style"] == "" and r["duration"] == "" for r in rows)
    assert [r["events"] for r in rows if r["opens"]] == [7, 5, 2, 2, 2]
    assert step_rows.axis(tree) == []
    assert step_rows.summary(tree)["has_timing"] is False


def test_partial_timing_a_parent_spans_its_timed_steps_and_the_rest_have_no_bar():
    tree = steps.build(
        turn_events(
            by_seq={
                3: {"ts": at(1000)},  # the call: a start only
                6: {"ts": at(1500), "duration_ms": 500},  # its result
                9: {"ts": at(4000), "end_ts": at(5000)},
            }
        )
    )
    assert tree.has_timing and (tree.lo, tree.hi) == (T0_MS + 1000, T0_MS + 5000)
    # untimed: 1, 4, 5, 7, 8 (the assistant message spans its calls)
    assert tree.untimed == 5 and tree.length == "4.00 s"
    rows = {r["seq"]: r for r in step_rows.rows(tree)[0] if r["label"] != "Turn 0"}
    call = rows[3]
    assert call["duration"] == "1.00 s" and "derived" in call["bar"]  # call to end of result
    assert call["style"] == "left:0.000%;width:25.000%"
    assert rows[6]["style"] == "left:12.500%;width:12.500%" and rows[6]["duration"] == "500 ms"
    assert rows[4]["bar"] == "" and rows[4]["duration"] == ""  # the other call: nothing
    assert "point" not in rows[9]["bar"] and rows[9]["duration"] == "1.00 s"
    assert step_rows.axis(tree)[0] == ("0.000%", "0") and step_rows.axis(tree)[-1][1] == "4.00 s"


def test_a_start_without_duration_is_a_point_not_a_bar():
    tree = steps.build([ev(0, "trace"), ev(1, "message", role="user", ts=T0),
                        ev(2, "message", role="assistant", ts=at(2000))])  # fmt: skip
    rows, _ = step_rows.rows(tree)
    assert ["point" in r["bar"] for r in rows] == [True, True]
    assert [r["style"] for r in rows] == ["left:0.000%;width:0.000%", "left:100.000%;width:0.000%"]
    assert [r["duration"] for r in rows] == ["", ""]


def test_unusable_durations_show_as_unknown_with_no_invented_width():
    tree = steps.build(
        [
            ev(0, "trace"),
            ev(1, "tool_call", name="a", ts=T0, duration_ms=-40),
            ev(2, "tool_call", name="b", ts=at(100), duration_ms=10 * ABSURD_MS),
            ev(3, "tool_call", name="c", ts=at(200), end_ts=at(150)),
            ev(4, "tool_call", name="d", ts=at(300), duration_ms=100),
        ]
    )
    assert tree.bad == 3 and (tree.lo, tree.hi) == (T0_MS, T0_MS + 400)
    rows, _ = step_rows.rows(tree)
    assert [r["duration"] for r in rows] == ["unknown", "unknown", "unknown", "100 ms"]
    assert [r["style"].split(";")[1] for r in rows] == ["width:0.000%"] * 3 + ["width:25.000%"]


def test_tokens_and_cost_add_up_through_the_tree():
    tree = steps.build(
        turn_events(
            by_seq={
                2: {"usage": {"input_tokens": 1000, "output_tokens": 20}, "cost_usd": 0.003},
                7: {"usage": {"input_tokens": 1100, "output_tokens": 80}, "cost_usd": 0.004},
                9: {"usage": {"total_tokens": 500}},
            }
        )
    )
    assert (tree.total.input, tree.total.output, tree.total.total) == (2100, 100, 2700)
    assert tree.total.cost == pytest.approx(0.007)
    rows = step_rows.rows(tree)[0]
    turn0, assistant = rows[0], rows[2]
    assert turn0["tokens"] == "2,100 / 100" and turn0["cost"] == "$0.0070"
    assert "with the steps under it" in turn0["tokens_title"]
    assert assistant["tokens"] == "1,000 / 20"
    turn1 = next(r for r in rows if r["label"] == "Turn 1")
    assert turn1["tokens"] == "500" and "not recorded apart" in turn1["tokens_title"]
    s = step_rows.summary(tree)
    assert (s["tokens"], s["cost"]) == ("2,100 / 100", "$0.0070")


# --- rows --------------------------------------------------------------------------------


def test_rows_are_bounded_and_every_details_opened_is_closed():
    events = [ev(0, "trace")]
    for t in range(60):
        events += [
            ev(len(events), "message", role="user", turn=t),
            ev(len(events) + 1, "message", role="assistant", turn=t),
            ev(len(events) + 2, "tool_call", name="x", call_id=f"c{t}", turn=t),
            ev(len(events) + 3, "tool_result", call_id=f"c{t}", turn=t),
        ]
    tree = steps.build(events)
    rows, total = step_rows.rows(tree, limit=25)
    assert total == 300 and len(rows) == 25
    assert sum(len(r["closes"]) for r in rows) == sum(r["opens"] for r in rows)
    # a large tree opens its turns, not what is under them
    assert [r["open"] for r in rows if r["opens"]][:3] == [True, False, False]
    rows, total = step_rows.rows(tree, limit=1000)
    assert len(rows) == total == 300
    small = step_rows.rows(steps.build(turn_events()))[0]
    assert all(r["open"] for r in small if r["opens"])


def test_names_are_cut_and_control_characters_shown():
    tree = steps.build(
        [ev(0, "trace"), ev(1, "tool_call", name="\x1b[31mrm\x1b[0m " + "x" * 200, call_id="c")]
    )
    name = step_rows.rows(tree)[0][0]["name"]
    assert name.startswith("␛[31mrm␛[0m x") and len(name) == steps.NAME_CHARS
