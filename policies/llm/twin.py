"""TwinCheck's generator for repeat-after-error twins (Dai & Huang 2026, App. Fig. 5): when the
actor is about to repeat a call that failed, a model proposes one evidence-gathering read-only
call instead.

`generate_twin` offers the model only the tools it is given (TwinCheck passes the read-only
ones: `certificates.read_only_tools`) and validates the proposal here — exactly one tool call,
a tool that was offered, arguments that parse and validate against that tool's schema, and a
call different from the failed one. TwinCheck's own structural checks (grounding included) run
on the result as on any twin. `TwinGenerator` is the same bound to a client, with the inputs
taken from a trace, for TwinCheck's generator hook.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..certificates import read_only_tools
from ..facts import TraceFacts, canonical_args
from ..schema import validate
from ..trace import ToolCall, ToolResult, ToolSpec, Trace
from ..twincheck.policy import render_context
from .client import ModelClient
from .prompts import TWIN_SYSTEM, TWIN_USER


@dataclass(frozen=True, slots=True)
class TwinProposal:
    """``call`` ({"name", "arguments"}) when the proposal passed every check, else None with
    ``error`` saying which check failed. ``record``: the model call's reference and the raw
    proposal, for the decision record."""

    call: dict[str, Any] | None
    error: str | None
    record: dict[str, Any] = field(default_factory=dict)


def openai_tool(tool: ToolSpec | Mapping[str, Any]) -> dict[str, Any]:
    if isinstance(tool, ToolSpec):
        name, desc, params = tool.name, tool.description, tool.parameters
    else:
        name = str(tool.get("name", ""))
        desc = str(tool.get("description", ""))
        params = tool.get("parameters") or {}
    schema = dict(params) if isinstance(params, Mapping) else {}
    schema.setdefault("type", "object")
    schema.setdefault("properties", {})
    return {
        "type": "function",
        "function": {"name": name, "description": desc, "parameters": schema},
    }


def generate_twin(
    client: ModelClient,
    *,
    context: str,
    failed_name: str,
    failed_arguments: Mapping[str, Any],
    failed_result: str,
    tools: Sequence[ToolSpec | Mapping[str, Any]],
    tool_choice: str = "required",
) -> TwinProposal:
    offered = {t["function"]["name"]: t["function"] for t in map(openai_tool, tools)}
    if not offered:
        return TwinProposal(None, "no read-only tool to propose", {})
    call_text = f"{failed_name}({canonical_args(dict(failed_arguments))})"
    messages = [
        {"role": "system", "content": TWIN_SYSTEM},
        {
            "role": "user",
            "content": TWIN_USER.format(
                context=context or "(empty)", call=call_text, result=failed_result[:2000]
            ),
        },
    ]
    call = client.chat(
        messages,
        purpose="twin_generator",
        tools=[{"type": "function", "function": f} for f in offered.values()],
        tool_choice=tool_choice,
    )
    record: dict[str, Any] = {"call": call.ref()}
    if call.error is not None:
        return TwinProposal(None, call.error, record)
    proposals = call.tool_calls()
    if len(proposals) != 1:
        what = "text, not a tool call" if not proposals else f"{len(proposals)} tool calls"
        record["raw"] = call.text[:2000] if not proposals else [p.raw_arguments for p in proposals]
        return TwinProposal(None, f"expected exactly one tool call, got {what}", record)
    p = proposals[0]
    record["proposed"] = {"name": p.name, "arguments": p.raw_arguments[:4000]}
    if p.arguments is None or p.arguments_error is not None:
        return TwinProposal(None, f"malformed tool call: {p.arguments_error}", record)
    fn = offered.get(p.name)
    if fn is None:
        return TwinProposal(None, f"tool {p.name[:100]!r} was not offered", record)
    errors = validate(p.arguments, fn["parameters"])
    if errors:
        return TwinProposal(
            None, "arguments do not match the schema: " + "; ".join(errors[:5]), record
        )
    if p.name == failed_name and canonical_args(p.arguments) == canonical_args(
        dict(failed_arguments)
    ):
        return TwinProposal(None, "the proposal repeats the failed call", record)
    return TwinProposal({"name": p.name, "arguments": p.arguments}, None, record)


class TwinGenerator:
    """`generate_twin` for TwinCheck's hook: ``generator(call, facts, trace)`` at a
    repeat-after-error point (``facts`` = the prefix before ``call``)."""

    def __init__(self, client: ModelClient, context_events: int = 20) -> None:
        self.client = client
        self.context_events = context_events

    def __call__(self, call: ToolCall, facts: TraceFacts, trace: Trace) -> TwinProposal:
        key = call.name + "\x00" + canonical_args(call.arguments)
        failed = facts.last_fail.get(key)
        result = ""
        if failed is not None and failed.result_index is not None:
            e = trace.events[failed.result_index]
            result = str(e.content) if isinstance(e, ToolResult) else ""
        return generate_twin(
            self.client,
            context=render_context(trace.events[: call.index], self.context_events),
            failed_name=call.name,
            failed_arguments=call.arguments,
            failed_result=result,
            tools=read_only_tools(trace, facts),
        )
