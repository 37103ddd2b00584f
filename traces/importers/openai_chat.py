"""OpenAI chat format: one `{"messages": [...], "tools": [...]}` object per line (SPEC §3).

Assistant `tool_calls` become `tool_call` events (the JSON argument string parsed), `tool`
messages become `tool_result` events paired with their call by id. Argument strings that are not
a JSON object are kept: `arguments` is `{}`, the raw string is in `meta.raw_arguments`, and the
report counts them under flags `arguments_not_json_object` — broken arguments are model
behaviour an audit wants to see, not a reason to reject the trace.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, BinaryIO

from ._chat import convert_messages
from ._common import Trace, convert_jsonl, head_lines, require, short
from ._timing import put_timing
from .base import ImportReport, SourceEvent

RECORD_KEYS = frozenset({"messages", "tools", "id", "trace_id", "model", "usage"})
TOOL_KEYS = frozenset({"type", "function"})
FUNCTION_KEYS = frozenset({"name", "description", "parameters"})


class OpenAIChatImporter:
    name = "openai_chat"
    label = "OpenAI chat (messages + tools per line)"

    def sniff(self, head: bytes, filename: str) -> bool:
        records = head_lines(head, 2)
        return bool(records) and all(
            isinstance(r, dict) and isinstance(r.get("messages"), list) and "trace_id" not in r
            for r in records
        )

    def convert(self, stream: BinaryIO, report: ImportReport) -> Iterator[SourceEvent]:
        def identify(record: Any, line: int) -> tuple[str, str, str]:
            trace_id = _trace_id(record, line)
            return trace_id, "$.id", f"expected a unique id, found {trace_id!r}"

        yield from convert_jsonl(stream, report, identify=identify, build=_convert_record)


def _trace_id(record: Any, line: int) -> str:
    if isinstance(record, dict):
        for key in ("trace_id", "id"):
            value = record.get(key)
            if isinstance(value, str | int) and not isinstance(value, bool) and str(value):
                return f"openai_chat:{value}"
    return f"openai_chat:line{line}"


def _convert_record(trace: Trace, record: Any) -> None:
    record = require(trace, record, dict, "$", "an object with messages")
    model = record.get("model")
    header = trace.header(model=model if isinstance(model, str) else None)
    if record.get("id") is not None:
        header["task"]["id"] = str(record["id"])
    header["tools"] = tools_from_openai(trace, record.get("tools"), "$.tools")
    # A record-level `usage` (a chat completion's) is the whole conversation's: the header's.
    put_timing(trace, header, usage=record.get("usage"))
    trace.keep(header, record, RECORD_KEYS, "record")
    if "model" in record and not isinstance(record["model"], str):
        header.setdefault("meta", {})["model"] = record["model"]
    convert_messages(trace, record.get("messages"), "$.messages")


def tools_from_openai(trace: Trace, tools: Any, path: str) -> list[dict]:
    """OpenAI `tools` ([{type: function, function: {name, description, parameters}}]) → v1 tools.
    `read_only` is unknown in this format and left out."""
    if tools is None:
        return []
    tools = require(trace, tools, list, path, "an array of tools")
    out = []
    for i, tool in enumerate(tools):
        tpath = f"{path}[{i}]"
        tool = require(trace, tool, dict, tpath, "a tool object")
        fn = tool.get("function", tool)
        fn = require(
            trace, fn, dict, f"{tpath}.function", "an object with name, description, parameters"
        )
        name = fn.get("name")
        if not isinstance(name, str) or not name:
            raise trace.fail(
                f"{tpath}.function.name", f"expected a tool name string, found {short(name, 40)}"
            )
        description, parameters = fn.get("description"), fn.get("parameters")
        item = {
            "name": name,
            "description": description if isinstance(description, str) else "",
            "parameters": parameters if isinstance(parameters, dict) else {},
        }
        extra = {k: v for k, v in fn.items() if k not in FUNCTION_KEYS}
        # Kept rather than dropped when they are not the expected string / schema object.
        if description is not None and not isinstance(description, str):
            extra["description"] = description
        if parameters is not None and not isinstance(parameters, dict):
            extra["parameters"] = parameters
        extra.update(
            {k: v for k, v in tool.items() if k not in TOOL_KEYS and k not in FUNCTION_KEYS}
        )
        if tool.get("type") not in (None, "function"):
            extra["type"] = tool.get("type")
        if extra:
            item["meta"] = extra
            trace.report.note_unmapped("tool definition fields", f"{name}: {short(extra)}")
        out.append(item)
    return out
