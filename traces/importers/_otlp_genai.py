"""The OTel GenAI semantic conventions' content attributes, as OpenLLMetry (Traceloop) and other
GenAI instrumentations write them: `gen_ai.input.messages` and `gen_ai.output.messages` (JSON:
each message a role and its parts — `text`, `tool_call`, `tool_call_response`), the system
prompt apart in `gen_ai.system_instructions`, and the tools offered in
`gen_ai.tool.definitions`; and the flat attributes of earlier OpenLLMetry releases
(`gen_ai.prompt.N.role` / `.content` / `.tool_call_id`, `gen_ai.completion.N.tool_calls.M.name`
/ `.arguments` / `.id`; tool spans `traceloop.span.kind = tool` with `traceloop.entity.input` /
`output`). Read into the same message shape as OpenInference's and Langfuse's
(`otlp.messages`), so one code path makes the events."""

from __future__ import annotations

import re
from typing import Any

from ._otlp_usage import json_text

_FLAT = re.compile(r"^gen_ai\.(prompt|completion)\.(\d+)\.(.+)$")
_FLAT_CALL = re.compile(r"^tool_calls\.(\d+)\.(.+)$")
TRACELOOP_KIND = {"tool": "TOOL", "agent": "AGENT", "workflow": "CHAIN", "task": "CHAIN"}


def genai_messages(attrs: dict[str, Any], which: str, default: str) -> list[dict] | None:
    """The span's input or output messages; None when it has no such attribute. A tool message
    becomes one result a `tool_call_response` part; a message's text parts are joined."""
    raw = json_text(attrs.get(f"gen_ai.{which}.messages"))
    if not isinstance(raw, list):
        return flat_messages(attrs, which, default)
    out = []
    if which == "input":
        system = json_text(attrs.get("gen_ai.system_instructions"))
        text = parts_text(system if isinstance(system, list) else [system])
        if text:
            out.append({"role": "system", "content": text, "tool_calls": []})
    for item in raw:
        if isinstance(item, str):  # a bare text: a message of the side's own role
            item = {"role": default, "parts": [item]}
        if not isinstance(item, dict):
            continue
        given = item.get("parts")
        if not isinstance(given, list):  # no parts: an OpenAI-style `content`, if any
            given = [item["content"]] if isinstance(item.get("content"), str) else []
        parts = [p for p in given if isinstance(p, dict | str)]
        calls = [
            {"id": p.get("id"), "name": p.get("name"), "arguments": p.get("arguments")}
            for p in parts
            if isinstance(p, dict) and p.get("type") == "tool_call"
        ]
        answers = [
            p for p in parts if isinstance(p, dict) and p.get("type") == "tool_call_response"
        ]
        for answer in answers:
            out.append(
                {
                    "role": "tool",
                    "content": answer.get("response"),
                    "tool_calls": [],
                    "tool_call_id": answer.get("id"),
                }
            )
        text = parts_text(parts)
        if text or calls or not answers:
            role = item.get("role")
            out.append(
                {
                    "role": role if isinstance(role, str) and role else default,
                    "content": text,
                    "tool_calls": calls,
                }
            )
    return out


def flat_messages(attrs: dict[str, Any], which: str, default: str) -> list[dict] | None:
    """Earlier OpenLLMetry's flat `gen_ai.prompt.N.*` / `gen_ai.completion.N.*` messages."""
    side = "prompt" if which == "input" else "completion"
    found: dict[int, dict] = {}
    for key, value in attrs.items():
        m = _FLAT.match(key)
        if not m or m.group(1) != side:
            continue
        msg = found.setdefault(int(m.group(2)), {"tool_calls": {}})
        call = _FLAT_CALL.match(m.group(3))
        if call:
            msg["tool_calls"].setdefault(int(call.group(1)), {})[call.group(2)] = value
        else:
            msg[m.group(3)] = value
    if not found:
        return None
    out = []
    for _n, msg in sorted(found.items()):
        role = msg.get("role")
        calls = [msg["tool_calls"][k] for k in sorted(msg["tool_calls"])]
        out.append(
            {
                "role": role if isinstance(role, str) and role else default,
                "content": msg.get("content"),
                "tool_calls": [
                    {"id": c.get("id"), "name": c.get("name"), "arguments": c.get("arguments")}
                    for c in calls
                ],
                "tool_call_id": msg.get("tool_call_id"),
            }
        )
    return out


def traceloop_tool(attrs: dict[str, Any]) -> tuple[Any, Any, Any]:
    """An earlier OpenLLMetry tool span's name, arguments and output: the entity's name, its
    input's keyword arguments (`{"args": [], "kwargs": {…}}` or `{"inputs": {…}}`), its output."""
    given = json_text(attrs.get("traceloop.entity.input"))
    args = given
    if isinstance(given, dict):
        args = given.get("kwargs", given.get("inputs", given))
    output = json_text(attrs.get("traceloop.entity.output"))
    return attrs.get("traceloop.entity.name"), args, output


def parts_text(parts: list) -> str:
    """The text of a message's parts (`{"type": "text", "content": …}`, or plain strings),
    joined by blank lines."""
    texts = []
    for p in parts:
        if isinstance(p, str):
            texts.append(p)
        elif isinstance(p, dict) and p.get("type") in ("text", None):
            content = p.get("content")
            if isinstance(content, str):
                texts.append(content)
    return "\n\n".join(t for t in texts if t)


def tool_definition(schema: Any) -> dict | None:
    """A tool offered to the model (`{"type": "function", "name", "parameters"}` of the GenAI
    conventions, or OpenAI's `{"function": {…}}` of OpenInference's `llm.tools.N.tool.json_schema`)
    as a v1 header tool; None when it names none."""
    fn = schema.get("function", schema) if isinstance(schema, dict) else {}
    if not isinstance(fn, dict) or not isinstance(fn.get("name"), str):
        return None
    return {
        "name": fn["name"],
        "description": fn.get("description") or "",
        "parameters": fn.get("parameters") or {"type": "object"},
    }
