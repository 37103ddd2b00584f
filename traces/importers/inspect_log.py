"""Inspect AI eval logs (`.eval` zip or `.json`), read with inspect_ai's own log reader
(`inspect_ai.log.read_eval_log`) — an optional extra: without the package installed the upload
is rejected with the command that installs it.

One v1 trace per sample and epoch: `inspect:<task>:<sample id>:epoch<n>`. Messages →
`message` (system / user / assistant, text parts joined), an assistant's `tool_calls` →
`tool_call` (id, function, arguments), `tool` messages → `tool_result` (`status: error` when the
message carries a tool error). Scores → `outcome`: the first scorer's value — `C` / `I` (and
Inspect's other letter values), a boolean, or a number in [0, 1] (success when ≥ 1) — with every
score in `outcome.details`. A sample that errored keeps the error in the header's `meta`.

Timing, tokens, cost: the header carries the sample's `started_at`, `completed_at`,
`total_time` and its `model_usage` summed over models (`total_cost` when every model has one);
`working_time` is kept in `meta.working_time_ms`. Each assistant message carries its model
call's times, usage and cost (Inspect's `model` events, in order, when there is one per
assistant message), each tool result its `tool` event's times.
"""

from __future__ import annotations

import asyncio
import dataclasses
import importlib
import os
import re
import tempfile
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any, BinaryIO

from ._common import Trace, record_events, short
from ._timing import amount, put_timing
from .base import ImportReport, SourceEvent

_JSON_HEAD = re.compile(rb'^\s*\{\s*"version"\s*:\s*\d+\s*,\s*"status"\s*:')
INSTALL = "pip install inspect-ai==0.3.285 (optional extra, in requirements-dev.txt)"
# Inspect's letter values (inspect_ai.scorer CORRECT, INCORRECT, PARTIAL, NOANSWER).
LETTER = {"C": (True, 1.0), "I": (False, 0.0), "P": (False, 0.5), "N": (False, 0.0)}
ROLES = ("system", "user", "assistant")


class InspectLogImporter:
    name = "inspect_ai"
    label = "Inspect AI eval log (.eval, .json)"

    def sniff(self, head: bytes, filename: str) -> bool:
        if head.startswith(b"PK\x03\x04"):
            return b"_journal/" in head[:4096] or (filename or "").endswith(".eval")
        return _JSON_HEAD.match(head) is not None and b'"eval"' in head

    def convert(self, stream: BinaryIO, report: ImportReport) -> Iterator[SourceEvent]:
        try:
            log_module = importlib.import_module("inspect_ai.log")
        except ImportError:
            report.error(
                line=0,
                trace_id=None,
                path="$",
                message=f"reading Inspect AI logs needs the inspect_ai package: {INSTALL}",
            )
            return
        data = stream.read()
        suffix = ".eval" if data.startswith(b"PK\x03\x04") else ".json"
        fd, path = tempfile.mkstemp(suffix=suffix)
        try:
            with os.fdopen(fd, "wb") as tmp:
                tmp.write(data)
            del data
            try:
                log = off_event_loop(log_module.read_eval_log, path)
            except Exception as exc:  # noqa: BLE001 — any reader failure is this file's error
                report.error(
                    line=0,
                    trace_id=None,
                    path="$",
                    message=f"expected an Inspect AI eval log that inspect_ai can read, "
                    f"found: {type(exc).__name__}: {short(str(exc), 300)}",
                )
                return
        finally:
            os.unlink(path)
        task = str(getattr(log.eval, "task", "") or "task")
        model = inspect_model(log.eval)
        for number, sample in enumerate(log.samples or (), 1):
            tid = f"inspect:{task}:{sample.id}:epoch{sample.epoch}"
            trace = Trace(tid, number, report)
            yield from record_events(trace, _sample, trace, task, model, sample)


def inspect_model(eval_spec: Any) -> str | None:
    """An Inspect log names the evaluated model in its eval spec (`openai/gpt-4o`)."""
    model = getattr(eval_spec, "model", None)
    return model if isinstance(model, str) and model else None


def off_event_loop(fn: Any, *args: Any) -> Any:
    """Call `fn` where no asyncio loop runs: inspect_ai's reader starts its own loop, which
    fails inside a running one (an async caller, or Playwright's sync API in the same thread)."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return fn(*args)
    with ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(fn, *args).result()


def outcome(scores: dict | None) -> dict:
    details = {k: _dump(v) for k, v in (scores or {}).items()}
    out: dict[str, Any] = {"success": None, "reward": None, "details": details or None}
    if not scores:
        return out
    value = next(iter(scores.values())).value
    if isinstance(value, str) and value in LETTER:
        out["success"], out["reward"] = LETTER[value]
    elif isinstance(value, bool):
        out["success"], out["reward"] = value, float(value)
    elif isinstance(value, int | float):
        out["reward"] = float(value)
        out["success"] = value >= 1 - 1e-6
    return out


def _dump(value: Any) -> Any:
    """Inspect's pydantic models and dataclasses (ToolCallError) as plain JSON values."""
    dump = getattr(value, "model_dump", None)
    if dump is not None:
        return dump(mode="json")
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return dataclasses.asdict(value)
    if isinstance(value, list):
        return [_dump(v) for v in value]
    return value


def _sample(trace: Trace, task: str, model: Any, sample: Any) -> None:
    header = trace.header(
        agent=task,
        model=model if isinstance(model, str) else None,
        task={
            "id": str(sample.id),
            "benchmark": task,
            "category": None,
            "input": _dump(sample.input),
            "target": _dump(sample.target),
        },
        env={"name": "inspect_ai", "config": {}},
        outcome=outcome(sample.scores),
    )
    meta: dict[str, Any] = {"epoch": sample.epoch}
    if getattr(sample, "error", None) is not None:
        meta["error"] = _dump(sample.error)
        trace.report.note_flag("sample_error")
    if getattr(sample, "metadata", None):
        meta["metadata"] = sample.metadata
    header["meta"] = meta
    _sample_timing(trace, header, sample)
    timed = _timed_events(sample)
    model_calls = timed["model"]
    if len(model_calls) != sum(1 for m in sample.messages if m.role == "assistant"):
        model_calls = []  # no one-to-one match: leave the messages untimed rather than guess
    trace.turn = None
    users = 0
    called: set[str] = set()  # the ids of the calls so far: a result must answer one
    for i, msg in enumerate(sample.messages):
        role = msg.role
        if role == "user":
            trace.turn = users
            users += 1
        if role in ROLES:
            text = msg.text or ""
            calls = getattr(msg, "tool_calls", None) or []
            first = len(trace.events)
            if text or not calls:
                trace.add("message", role=role, content=text)
            for call in calls:
                args = call.arguments if isinstance(call.arguments, dict) else {}
                event = trace.add("tool_call", name=call.function, arguments=args, call_id=call.id)
                called.add(call.id)
                if getattr(call, "parse_error", None):
                    trace.flag(
                        event, "arguments_not_json_object", "arguments_error", call.parse_error
                    )
            if role == "assistant" and model_calls and len(trace.events) > first:
                _model_timing(trace, trace.events[first], model_calls.pop(0))
        elif role == "tool":
            error = getattr(msg, "error", None)
            # A failed tool call has no text: its error message is what the model was shown.
            text = msg.text or (getattr(error, "message", "") if error is not None else "")
            event = trace.add(
                "tool_result",
                call_id=msg.tool_call_id or f"unpaired{i}",
                status="error" if error is not None else "ok",
                content=text or "",
            )
            if error is not None:
                event["meta"] = {"error": _dump(error)}
            tool_event = timed["tool"].get(msg.tool_call_id)
            if tool_event is not None:
                put_timing(
                    trace,
                    event,
                    ts=_iso(getattr(tool_event, "timestamp", None)),
                    end_ts=_iso(getattr(tool_event, "completed", None)),
                )
            if msg.tool_call_id not in called:
                # No call before it with its id (a call lost with its message's role, say): kept,
                # and marked as v1 marks a result without its call.
                trace.flag(event, "tool_result_unpaired", "unpaired", True)
                trace.report.note_unmapped(
                    "tool result without a matching call",
                    f"{trace.trace_id}: call_id {msg.tool_call_id!r}",
                )
        else:
            raise trace.fail(
                f"$.samples[{trace.line - 1}].messages[{i}].role",
                f"expected system, user, assistant or tool, found {role!r}",
            )


def _iso(value: Any) -> str | None:
    """Inspect gives times as datetimes or as ISO strings, depending on the field."""
    if value is None:
        return None
    return value.isoformat() if hasattr(value, "isoformat") else str(value)


def _usage(usage: Any) -> dict | None:
    if usage is None:
        return None
    return {
        k: getattr(usage, k)
        for k in ("input_tokens", "output_tokens", "total_tokens")
        if getattr(usage, k, None) is not None
    } or None


def _sample_timing(trace: Trace, header: dict, sample: Any) -> None:
    total_time = amount(getattr(sample, "total_time", None))
    usages = list((getattr(sample, "model_usage", None) or {}).values())
    summed: dict[str, int] = {}
    for usage in usages:
        for key, value in (_usage(usage) or {}).items():
            summed[key] = summed.get(key, 0) + value
    costs = [getattr(u, "total_cost", None) for u in usages]
    put_timing(
        trace,
        header,
        ts=_iso(getattr(sample, "started_at", None)),
        end_ts=_iso(getattr(sample, "completed_at", None)),
        duration_ms=total_time * 1000 if total_time is not None else None,
        usage=summed or None,
        cost_usd=sum(costs) if costs and None not in costs else None,
    )
    working = amount(getattr(sample, "working_time", None))
    if working is not None:
        header["meta"]["working_time_ms"] = working * 1000


def _timed_events(sample: Any) -> dict[str, Any]:
    """The sample's model events in order, and its tool events by call id."""
    models: list[Any] = []
    tools: dict[str, Any] = {}
    for event in getattr(sample, "events", None) or ():
        kind = getattr(event, "event", None)
        if kind == "model":
            models.append(event)
        elif kind == "tool" and isinstance(getattr(event, "id", None), str):
            tools[event.id] = event
    return {"model": models, "tool": tools}


def _model_timing(trace: Trace, event: dict, call: Any) -> None:
    output = getattr(call, "output", None)
    usage = getattr(output, "usage", None)
    put_timing(
        trace,
        event,
        ts=_iso(getattr(call, "timestamp", None)),
        end_ts=_iso(getattr(call, "completed", None)),
        usage=_usage(usage),
        cost_usd=getattr(usage, "total_cost", None),
    )
