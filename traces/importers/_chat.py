"""OpenAI-style chat messages → v1 message / tool_call / tool_result events.

Shared by `openai_chat` and `tau_bench` (τ-bench trajectories are OpenAI messages; τ²-bench
messages are a close variant: tool calls carry `name`/`arguments` at the top level, tool messages
carry `id` and an `error` flag).
"""

from __future__ import annotations

from typing import Any

from ._common import Trace, parse_arguments, require, short
from ._harness import harness_error
from ._timing import put_timing

_TIMING_SOURCE = {"ts": "timestamp", "cost_usd": "cost", "usage": "usage"}


def message_timing(trace: Trace, events: list[dict], msg: dict) -> None:
    """A message's timestamp on every event made from it; its tokens and cost on the first only,
    so a trace's sums count each model call once."""
    for i, event in enumerate(events):
        put_timing(
            trace,
            event,
            ts=msg.get("timestamp"),
            usage=msg.get("usage") if i == 0 else None,
            cost_usd=msg.get("cost") if i == 0 else None,
            source=_TIMING_SOURCE,
        )


ROLES = {"system": "system", "developer": "system", "user": "user", "assistant": "assistant"}
# Per-message timing, tokens and cost (τ²-bench; OpenAI-style exports that keep `usage`).
TIMING_KEYS = frozenset({"timestamp", "cost", "usage"})
MESSAGE_KEYS = frozenset({"role", "content", "tool_calls", "function_call"}) | TIMING_KEYS
TOOL_MESSAGE_KEYS = (
    frozenset({"role", "content", "tool_call_id", "id", "name", "error"}) | TIMING_KEYS
)
CALL_KEYS = frozenset({"id", "type", "function", "name", "arguments"})


class CallPairer:
    """Pairs tool results with tool calls by id, in order.

    Real traces reuse call ids (τ-bench's gpt-4o trajectories repeat the same id for later calls),
    so a result pairs with the oldest unanswered call of that id, and a reused id gets a `#n`
    suffix in v1 (the source id stays in `meta.source_call_id`) so `call_id` is unique per trace.
    """

    __slots__ = ("trace", "pending", "uses", "calls", "auto")

    def __init__(self, trace: Trace) -> None:
        self.trace = trace
        self.pending: dict[str, list[str]] = {}
        self.uses: dict[str, int] = {}
        self.calls: dict[str, dict] = {}
        self.auto = 0

    def call(self, event: dict, source_id: Any) -> str:
        trace = self.trace
        if not isinstance(source_id, str) or not source_id:
            self.auto += 1
            source_id = f"call{self.auto}"
            trace.flag(event, "call_id_missing", "call_id_generated", True)
        n = self.uses.get(source_id, 0) + 1
        self.uses[source_id] = n
        uid = source_id if n == 1 else f"{source_id}#{n}"
        if n > 1:
            trace.flag(event, "call_id_reused", "source_call_id", source_id)
        self.pending.setdefault(source_id, []).append(uid)
        self.calls[uid] = event
        event["call_id"] = uid
        return uid

    def result(self, event: dict, source_id: Any, name: Any = None) -> None:
        trace = self.trace
        queue = self.pending.get(source_id) if isinstance(source_id, str) else None
        if not queue and source_id is None and isinstance(name, str):
            # Legacy `function` role results name the function instead of an id.
            queue = self.pending.get(f"function:{name}")
        if queue:
            uid = queue.pop(0)
            event["call_id"] = uid
            if uid != source_id:
                event.setdefault("meta", {})["source_call_id"] = source_id
            return
        event["call_id"] = source_id if isinstance(source_id, str) else f"unpaired{event['seq']}"
        trace.flag(event, "tool_result_unpaired", "unpaired", True)
        trace.report.note_unmapped(
            "tool result without a matching call", f"{trace.trace_id}: call_id {source_id!r}"
        )

    def finish(self) -> None:
        for queue in self.pending.values():
            for uid in queue:
                self.trace.flag(self.calls[uid], "tool_call_without_result", "unanswered", True)


def text_content(trace: Trace, event: dict, content: Any, path: str) -> str:
    """v1 message content is a string: join OpenAI text parts; keep anything else in meta."""
    if isinstance(content, str):
        return content
    if content is None:
        return ""
    if isinstance(content, list) and all(isinstance(p, dict) for p in content):
        texts = [
            p["text"] for p in content if p.get("type") == "text" and isinstance(p.get("text"), str)
        ]
        if len(texts) == len(content):
            return "".join(texts)
    trace.flag(event, "content_not_text", "content_raw", content)
    trace.report.note_unmapped(
        "non-text message content", f"{trace.trace_id} {path}: {short(content)}"
    )
    return (
        "".join(p.get("text", "") for p in content if isinstance(p, dict))
        if isinstance(content, list)
        else ""
    )


def convert_messages(
    trace: Trace, messages: Any, path: str, *, error_prefix: bool = False
) -> CallPairer:
    """Append events for a list of chat messages. `error_prefix`: τ-bench tools signal failure by
    returning a string starting with "Error" — map that to status "error"."""
    messages = require(trace, messages, list, path, "an array of messages")
    pairer = CallPairer(trace)
    seen_user = False
    trace.turn = 0
    for i, msg in enumerate(messages):
        mpath = f"{path}[{i}]"
        msg = require(trace, msg, dict, mpath, "a message object")
        role = msg.get("role")
        if role == "tool" or role == "function":
            _tool_message(trace, pairer, msg, mpath, role, error_prefix)
            continue
        v1_role = ROLES.get(role) if isinstance(role, str) else None
        if v1_role is None:
            raise trace.fail(
                f"{mpath}.role",
                "expected role system/developer/user/assistant/tool, found "
                + (short(role, 40) if role is not None else "nothing"),
            )
        content = msg.get("content")
        if v1_role == "user" and (content or not msg.get("tool_calls")):
            if seen_user:
                trace.turn += 1
            seen_user = True
        first = len(trace.events)
        tool_calls = msg.get("tool_calls")
        function_call = msg.get("function_call")
        has_calls = bool(tool_calls) or bool(function_call)
        if content not in (None, "") or not has_calls:
            event = trace.add("message", role=v1_role)
            event["content"] = text_content(trace, event, content, f"{mpath}.content")
            if v1_role == "assistant" and (error := harness_error(event["content"])):
                trace.flag(event, "harness_error", "harness_error", error)
            if role != v1_role:
                event.setdefault("meta", {})["source_role"] = role
            trace.keep(event, msg, MESSAGE_KEYS, "message")
            extra_target = None
        else:
            extra_target = msg  # unmapped message keys go onto the first tool call
        if tool_calls:
            tool_calls = require(
                trace, tool_calls, list, f"{mpath}.tool_calls", "an array of tool calls"
            )
            for j, call in enumerate(tool_calls):
                cpath = f"{mpath}.tool_calls[{j}]"
                call = require(trace, call, dict, cpath, "a tool call object")
                fn = call.get("function")
                if fn is not None:
                    fn = require(
                        trace, fn, dict, f"{cpath}.function", "an object with name and arguments"
                    )
                    name, raw_args, apath = (
                        fn.get("name"),
                        fn.get("arguments"),
                        f"{cpath}.function.arguments",
                    )
                    npath = f"{cpath}.function.name"
                else:
                    name, raw_args, apath = (
                        call.get("name"),
                        call.get("arguments"),
                        f"{cpath}.arguments",
                    )
                    npath = f"{cpath}.name"
                event = _call_event(trace, name, raw_args, npath, apath)
                pairer.call(event, call.get("id"))
                trace.keep(event, call, CALL_KEYS, "tool_call")
                if fn is not None:
                    trace.keep(event, fn, {"name", "arguments"}, "tool_call.function")
                if extra_target is not None:
                    if v1_role != "assistant":
                        event.setdefault("meta", {})["role"] = v1_role
                    trace.keep(event, extra_target, MESSAGE_KEYS, "message")
                    extra_target = None
        if function_call:
            fpath = f"{mpath}.function_call"
            fc = require(trace, function_call, dict, fpath, "an object with name and arguments")
            name = fc.get("name")
            event = _call_event(
                trace, name, fc.get("arguments"), f"{fpath}.name", f"{fpath}.arguments"
            )
            pairer.call(event, f"function:{name}")
            if extra_target is not None:
                trace.keep(event, extra_target, MESSAGE_KEYS, "message")
                extra_target = None
        message_timing(trace, trace.events[first:], msg)
    pairer.finish()
    return pairer


def _call_event(trace: Trace, name: Any, raw_args: Any, npath: str, apath: str) -> dict:
    if not isinstance(name, str) or not name:
        raise trace.fail(
            npath,
            f"expected a function name string, found "
            f"{short(name, 40) if name is not None else 'nothing'}",
        )
    event = trace.add("tool_call", name=name)
    args, problem = parse_arguments(raw_args)
    if problem is None:
        event["arguments"] = args
    else:
        # Broken arguments are real model behaviour worth auditing: keep the call, flag it.
        event["arguments"] = {}
        meta = event.setdefault("meta", {})
        meta["raw_arguments"] = raw_args
        meta["arguments_error"] = f"{apath}: {problem}"
        trace.report.note_flag("arguments_not_json_object")
        trace.report.note_unmapped(
            "tool call arguments that are not a JSON object", f"{trace.trace_id}: {short(raw_args)}"
        )
    return event


def _tool_message(
    trace: Trace, pairer: CallPairer, msg: dict, mpath: str, role: str, error_prefix: bool
) -> None:
    content = msg.get("content")
    status = "ok"
    error = msg.get("error")
    if isinstance(error, bool):
        status = "error" if error else "ok"
    elif error_prefix and isinstance(content, str) and content.startswith("Error"):
        status = "error"
    event = trace.add("tool_result", call_id="", status=status)
    event["content"] = content if content is not None else ""
    message_timing(trace, [event], msg)
    source_id = msg.get("tool_call_id", msg.get("id"))
    pairer.result(event, source_id, msg.get("name") if role == "function" else None)
    if role == "function":
        event.setdefault("meta", {})["source_role"] = "function"
    mapped = (
        TOOL_MESSAGE_KEYS
        if isinstance(error, bool) or error is None
        else TOOL_MESSAGE_KEYS - {"error"}
    )
    trace.keep(event, msg, mapped, "tool_message")
    name = msg.get("name")
    if isinstance(name, str) and role == "tool":
        call = pairer.calls.get(event["call_id"])
        if call is not None and call.get("name") != name:
            trace.flag(event, "tool_result_name_mismatch", "source_name", name)
