"""Where a step's tool results go when one model step made several calls.

A harness that executes a step's calls one after another (BFCL's
`execute_multi_turn_func_call`, most parallel-tool-call loops) produces each result before the
next call runs, so in the trace each result follows its own call: call 1, result 1, call 2,
result 2. Written as all calls first and all results after, a later call of the step would
look as if it ran before the earlier calls' results existed, and a policy reading the prefix
at that call would see the state as it was before the step (a `cd` still pending before a
repeated `wc`).
"""

from __future__ import annotations

from typing import Any


def results_follow_calls(events: list[dict[str, Any]], start: int) -> None:
    """Reorder ``events[start:]`` in place so that each ``tool_result`` comes right after the
    ``tool_call`` with its ``call_id``; results without a call in that range keep their
    relative order at the end. ``seq`` is renumbered over the range."""
    tail = events[start:]
    results: dict[str, list[dict[str, Any]]] = {}
    calls = {e.get("call_id") for e in tail if e.get("type") == "tool_call"}
    unpaired: list[dict[str, Any]] = []
    rest: list[dict[str, Any]] = []
    for e in tail:
        if e.get("type") == "tool_result":
            if e.get("call_id") in calls:
                results.setdefault(e["call_id"], []).append(e)
            else:
                unpaired.append(e)
        else:
            rest.append(e)
    ordered: list[dict[str, Any]] = []
    for e in rest:
        ordered.append(e)
        if e.get("type") == "tool_call":
            ordered.extend(results.pop(e.get("call_id"), []))
    ordered.extend(unpaired)
    for i, e in enumerate(ordered, start):
        e["seq"] = i
    events[start:] = ordered
