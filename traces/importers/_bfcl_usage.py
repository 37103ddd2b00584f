"""BFCL's per-model-call latency and token counts, on the steps they belong to.

A multi-turn record's `latency` (seconds), `input_token_count` and `output_token_count` are
lists of turns, each with one value per model call: bfcl-eval's multi-turn inference
(`base_handler.inference_multi_turn_FC` / `_prompting`) appends one value per query, and each
query's output is one step of `result`. So when a list has exactly the shape of `result` — as
many turns, as many values in each turn as it has steps, each value a usable number — the value
of step `[t][s]` goes on that step's first event (its model output: the first tool call, or the
text message), so each model call counts once. The header then states none of it, and the
trace's totals are the events' sums (`traces/totals.py`: a header figure would win over them).

A list of another shape (other counts of turns or steps, a value that is not a number) cannot be
told apart step by step: its sum stays on the header, as the trace's total only, the header's
`meta.step_figures_unmatched` says why, and the import report counts it (not an error). Input
and output tokens go on the steps together or not at all, so a trace's token counts always come
from one place.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ._common import Trace, short
from ._timing import amount, count, put_timing

# Source list → what it becomes on a step event.
TOKEN_LISTS = {"input_token_count": "input_tokens", "output_token_count": "output_tokens"}
UNMATCHED = "BFCL per-step {what} of another shape than the steps (sum kept on the header)"
NOTE = (
    "BFCL latency or token lists that do not have one value per step of the result stay as "
    "their traces' totals only (the header's duration and usage), not on the steps: see the "
    "unmapped counts for which traces and why"
)


def _problem(
    values: Any, steps: list[list[dict[str, Any]]], read: Callable[[Any], Any]
) -> str | None:
    """Why `values` ([turn][model call]) cannot go step by step on `steps`; None when it can."""
    if not isinstance(values, list):
        return f"not a list of turns but {short(repr(values), 40)}"
    if len(values) != len(steps):
        return f"{len(values)} turns of values for the result's {len(steps)} turns"
    for t, (row, events) in enumerate(zip(values, steps, strict=True)):
        if not isinstance(row, list):
            return f"turn {t} is {short(repr(row), 40)}, not a list of per-step values"
        if len(row) != len(events):
            return f"turn {t} has {len(row)} values for its {len(events)} steps"
        for s, value in enumerate(row):
            if read(value) is None:
                shown = short(repr(value), 40)
                return f"the value of turn {t} step {s} is {shown}, not a usable number"
    return None


def _unmatched(trace: Trace, header: dict[str, Any], what: str, source: str, problem: str) -> None:
    header.setdefault("meta", {}).setdefault("step_figures_unmatched", {})[source] = problem
    trace.report.note_unmapped(UNMATCHED.format(what=what), f"{trace.trace_id}: {problem}")
    trace.report.note(NOTE)


def put_step_figures(
    trace: Trace, header: dict[str, Any], record: dict[str, Any], steps: list[list[dict[str, Any]]]
) -> None:
    """Move the record's latency and token counts from the header (where `bfcl._timing` put
    their sums) onto the first event of each step, when their shape is the steps' (`steps`:
    per turn, each step's first event)."""
    latency = record.get("latency")
    if latency is not None:
        problem = _problem(latency, steps, amount)
        if problem is None:
            for row, events in zip(latency, steps, strict=True):
                for value, event in zip(row, events, strict=True):
                    put_timing(trace, event, duration_ms=value * 1000)
            header.pop("duration_ms", None)
        else:
            _unmatched(trace, header, "latency", "latency", problem)
    present = [k for k in TOKEN_LISTS if record.get(k) is not None]
    problems = {k: _problem(record[k], steps, count) for k in present}
    if any(problems.values()):
        for source, problem in problems.items():
            if problem is not None:
                _unmatched(trace, header, "token counts", source, problem)
        return
    if not present:
        return
    for t, events in enumerate(steps):
        for s, event in enumerate(events):
            put_timing(trace, event, usage={TOKEN_LISTS[k]: record[k][t][s] for k in present})
    header.pop("usage", None)
