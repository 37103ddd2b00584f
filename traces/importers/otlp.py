"""OpenTelemetry traces as OTLP/JSON, with OpenInference, Langfuse or OTel GenAI span attributes.

What Arize Phoenix, OpenInference instrumentations and many agent SDKs export, what the
Langfuse Python SDK emits (its observations are OTel spans), and what OpenLLMetry (Traceloop)
and other instrumentations of the OTel GenAI conventions write (`_otlp_genai`). One v1 trace
per OTel trace id (`otel:<32 hex>`); spans in start order:

- **LLM spans** (`openinference.span.kind = LLM`, Langfuse `generation`, `gen_ai.operation.name
  = chat`, OpenLLMetry's `llm.request.type = chat`): input messages not seen yet (system /
  user; assistant and tool messages only when no earlier span produced them) → `message` /
  `tool_result`; output messages → assistant `message` and `tool_call`s. Model:
  `llm.model_name`, `langfuse.observation.model.name`, `gen_ai.request.model`.
- **TOOL spans** (`TOOL`, Langfuse `tool`, `execute_tool`, `traceloop.span.kind = tool`): the
  result of the pending call with the span's call id (`tool_call.id`, `gen_ai.tool.call.id`),
  else of the oldest pending call of that tool name; a tool span no LLM span asked for becomes a
  call and its result. Status ERROR → `status: error`.
- **Timing, tokens, cost**: the header spans the trace (`ts` = first span start, `end_ts` = last
  span end, `duration_ms`); an LLM span's first output event carries its start, end, duration,
  `usage` (`llm.token_count.prompt` / `completion` / `total`, `gen_ai.usage.input_tokens` /
  `output_tokens`, Langfuse `usage_details`) and `cost_usd` (`llm.cost.total`, Langfuse
  `cost_details`); a tool result carries its TOOL span's times.
- Other spans (AGENT, CHAIN, RETRIEVER, …) add no events. **The trace tree is kept** in the
  header's `meta.otel.spans` (id, parent, name, kind, times, status, attributes not mapped), and
  every event names its span in `meta.span_id`.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterable, Iterator
from typing import Any, BinaryIO

import orjson

from ._common import Trace, parse_arguments, record_events
from ._otlp_genai import TRACELOOP_KIND, genai_messages, tool_definition, traceloop_tool
from ._otlp_read import Span, documents, request_spans
from ._otlp_usage import USAGE_KEYS, json_text, span_times, span_usage
from ._timing import put_timing
from .base import ImportReport, SourceEvent

_SNIFF = re.compile(rb'^\s*\{\s*"resourceSpans"\s*:')
_OI_MESSAGE = re.compile(r"^llm\.(input|output)_messages\.(\d+)\.message\.(.+)$")
_OI_CALL = re.compile(r"^tool_calls\.(\d+)\.tool_call\.(.+)$")
LANGFUSE_KIND = {"generation": "LLM", "tool": "TOOL", "embedding": "EMBEDDING"}
GEN_AI_KIND = {
    "chat": "LLM",
    "text_completion": "LLM",
    "generate_content": "LLM",
    "completion": "LLM",  # OpenLLMetry's `llm.request.type`
}
# Attributes whose content becomes events; everything else stays on the span in meta.
MAPPED_PREFIXES = (
    "llm.input_messages.",
    "llm.output_messages.",
    "input.",
    "output.",
    "langfuse.observation.input",
    "langfuse.observation.output",
    "llm.tools.",
    "gen_ai.input.messages",
    "gen_ai.output.messages",
    "gen_ai.system_instructions",
    "gen_ai.tool.definitions",
    "gen_ai.prompt.",
    "gen_ai.completion.",
    "traceloop.entity.input",
    "traceloop.entity.output",
)


def span_kind(attrs: dict) -> str:
    kind = attrs.get("openinference.span.kind")
    if isinstance(kind, str) and kind:
        return kind.upper()
    lf = attrs.get("langfuse.observation.type")
    if isinstance(lf, str) and lf:
        return LANGFUSE_KIND.get(lf, lf.upper())
    traceloop = attrs.get("traceloop.span.kind")
    if isinstance(traceloop, str) and traceloop in TRACELOOP_KIND:
        return TRACELOOP_KIND[traceloop]
    op = attrs.get("gen_ai.operation.name", attrs.get("llm.request.type"))
    if op == "execute_tool":
        return "TOOL"
    return GEN_AI_KIND.get(op, "UNKNOWN") if isinstance(op, str) else "UNKNOWN"


def _role(value: Any, default: str) -> str:
    """A message role as a string (anything else, e.g. a mangled attribute, is the default)."""
    return value if isinstance(value, str) and value else default


def _text(value: Any) -> str:
    if value is None:
        return ""
    return value if isinstance(value, str) else orjson.dumps(value).decode()


def _call(raw: Any) -> dict:
    """OpenAI (`{id, function: {name, arguments}}`) or flat (`{id, name, arguments}`) call."""
    if not isinstance(raw, dict):
        return {}
    fn = raw.get("function") if isinstance(raw.get("function"), dict) else raw
    return {"id": raw.get("id"), "name": fn.get("name"), "arguments": fn.get("arguments")}


def _as_message(raw: Any, default_role: str) -> dict | None:
    if isinstance(raw, str):
        return {"role": default_role, "content": raw, "tool_calls": []}
    if not isinstance(raw, dict):
        return None
    calls = raw.get("tool_calls") if isinstance(raw.get("tool_calls"), list) else []
    return {
        "role": _role(raw.get("role"), default_role),
        "content": raw.get("content"),
        "tool_calls": [_call(c) for c in calls],
        "tool_call_id": raw.get("tool_call_id"),
    }


def messages(span: Span, which: str) -> list[dict]:
    """The span's input or output messages, from OpenInference or Langfuse attributes."""
    found: dict[int, dict] = {}
    for key, value in span.attrs.items():
        m = _OI_MESSAGE.match(key)
        if not m or m.group(1) != which:
            continue
        msg = found.setdefault(int(m.group(2)), {"tool_calls": {}})
        rest = m.group(3)
        c = _OI_CALL.match(rest)
        if c:
            call = msg["tool_calls"].setdefault(int(c.group(1)), {})
            part = c.group(2)
            call[{"function.name": "name", "function.arguments": "arguments"}.get(part, part)] = (
                value
            )
        else:
            msg[rest] = value
    if found:
        return [
            {**m, "tool_calls": [m["tool_calls"][k] for k in sorted(m["tool_calls"])]}
            for _, m in sorted(found.items())
        ]
    default = "user" if which == "input" else "assistant"
    genai = genai_messages(span.attrs, which, default)
    if genai is not None:
        return genai
    raw = json_text(span.attrs.get(f"langfuse.observation.{which}"))
    if raw is None:
        raw = span.attrs.get(f"{which}.value")
        if raw is None:
            return []
    if isinstance(raw, dict) and isinstance(raw.get("messages"), list):
        raw = raw["messages"]
    items = raw if isinstance(raw, list) else [raw]
    return [m for m in (_as_message(x, default) for x in items) if m is not None]


def model_of(span: Span) -> str | None:
    for key in (
        "llm.model_name",
        "langfuse.observation.model.name",
        "gen_ai.request.model",
        "gen_ai.response.model",
    ):
        if isinstance(span.attrs.get(key), str):
            return span.attrs[key]
    return None


class OTLPImporter:
    name = "otlp"
    label = "OpenTelemetry OTLP/JSON traces (OpenInference, Langfuse, OpenLLMetry / GenAI)"

    def sniff(self, head: bytes, filename: str) -> bool:
        return _SNIFF.match(head) is not None

    def convert(self, stream: BinaryIO, report: ImportReport) -> Iterator[SourceEvent]:
        return self.convert_requests(documents(stream, report), report)

    def convert_requests(
        self, requests: Iterable[tuple[int, Any]], report: ImportReport
    ) -> Iterator[SourceEvent]:
        """`convert` of (line, request) pairs already parsed: a file's, or the OTLP receiver's
        buffered spans of the traces it completed (one request, no file in between)."""
        spans, broken = request_spans(requests, report)
        by_trace: dict[str, list[Span]] = defaultdict(list)
        for span in spans:
            by_trace[span.trace_id].append(span)
        for hex_id, group in by_trace.items():
            if hex_id in broken:
                continue
            group.sort(key=lambda s: (s.start, s.end))
            trace = Trace(f"otel:{hex_id}", group[0].line, report)
            yield from record_events(trace, _Builder(trace, group).build)


class _Builder:
    def __init__(self, trace: Trace, spans: list[Span]) -> None:
        self.trace = trace
        self.spans = spans
        self.seen = {"system": 0, "user": 0, "assistant": 0}
        self.pending: list[tuple[str, str, dict]] = []  # (call id, tool name, call event)
        self.auto = 0
        self.users = 0

    def build(self) -> None:
        trace, spans = self.trace, self.spans
        ids = {s.span_id for s in spans}
        root = next((s for s in spans if s.parent not in ids), spans[0])
        llm = [s for s in spans if span_kind(s.attrs) == "LLM"]
        header = trace.header(
            agent=_first_str(root.resource.get("service.name"), root.name),
            model=next((m for m in map(model_of, llm) if m), None),
            task={
                "benchmark": None,
                "category": None,
                "name": root.name,
                "input": json_text(
                    root.attrs.get("input.value", root.attrs.get("langfuse.observation.input"))
                ),
            },
            env={"name": root.scope or None, "config": {}},
            tools=self.tools(llm),
            outcome={"success": False if root.error else None, "reward": None},
        )
        starts = [s.start for s in spans if s.start > 0]
        ends = [s.end for s in spans if s.end > 0]
        if starts and ends:
            put_timing(trace, header, **span_times(min(starts), max(ends)))
        tree = []
        trace.turn = 0
        for span in spans:
            kind = span_kind(span.attrs)
            first = len(trace.events)
            if kind == "LLM":
                self.llm(span)
            elif kind == "TOOL":
                self.tool(span)
            tree.append(self.node(span, kind, list(range(first, len(trace.events)))))
        for _call_id, _name, event in self.pending:
            trace.flag(event, "tool_call_without_result", "unanswered", True)
        header["meta"] = {
            **header.get("meta", {}),
            "otel": {"trace_id": root.trace_id, "resource": root.resource, "spans": tree},
        }

    def node(self, span: Span, kind: str, seqs: list[int]) -> dict:
        rest = {
            k: v
            for k, v in span.attrs.items()
            if not k.startswith(MAPPED_PREFIXES) and not (kind == "LLM" and k in USAGE_KEYS)
        }
        for key in rest:
            self.trace.report.note_unmapped(f"span attribute {key}", "")
        return {
            "span_id": span.span_id,
            "parent_span_id": span.parent,
            "name": span.name,
            "kind": kind,
            "start_unix_nano": _json_int(span.start),
            "end_unix_nano": _json_int(span.end),
            "status": span.status,
            "status_message": span.status_message or None,
            "attributes": rest,
            "events": seqs,
        }

    def tools(self, llm: list[Span]) -> list[dict]:
        out: dict[str, dict] = {}
        for span in llm:
            defined = json_text(span.attrs.get("gen_ai.tool.definitions"))
            schemas = list(defined) if isinstance(defined, list) else []
            schemas += [
                json_text(value)
                for key, value in span.attrs.items()
                if key.startswith("llm.tools.") and key.endswith(".tool.json_schema")
            ]
            for schema in schemas:
                tool = tool_definition(schema)
                if tool is not None:
                    out.setdefault(tool["name"], tool)
        return list(out.values())

    def llm(self, span: Span) -> None:
        counts = {"system": 0, "user": 0, "assistant": 0}
        for msg in messages(span, "input"):
            role = _role(msg.get("role"), "user")
            if role == "tool":
                self.result_for(span, msg.get("tool_call_id"), None, msg.get("content"), False)
                continue
            role = "system" if role == "developer" else role
            if role not in counts:
                continue
            counts[role] += 1
            if counts[role] <= self.seen[role]:
                continue  # history this trace already has
            self.message(span, role, msg)
        first = len(self.trace.events)
        for msg in messages(span, "output"):
            self.message(span, "assistant", msg)
        outputs = self.trace.events[first:]
        if outputs:
            usage, cost = span_usage(span)
            put_timing(
                self.trace,
                outputs[0],
                **span_times(span.start, span.end),
                usage=usage,
                cost_usd=cost,
            )

    def message(self, span: Span, role: str, msg: dict) -> None:
        trace = self.trace
        self.seen[role] += 1
        if role == "user":
            self.users += 1
            trace.turn = self.users - 1
        text = _text(msg.get("content"))
        if text or not msg.get("tool_calls"):
            trace.add("message", role=role, content=text, meta={"span_id": span.span_id})
        for call in msg.get("tool_calls") or ():
            self.call(span, call.get("id"), call.get("name"), call.get("arguments"))

    def call(self, span: Span, source_id: Any, name: Any, raw_args: Any) -> dict:
        trace = self.trace
        args, problem = parse_arguments(raw_args)
        event = trace.add(
            "tool_call",
            name=name if isinstance(name, str) and name else "unknown",
            arguments=args if args is not None else {},
            meta={"span_id": span.span_id},
        )
        if problem:
            event["meta"]["raw_arguments"] = raw_args
            trace.flag(event, "arguments_not_json_object", "arguments_error", problem)
        if not isinstance(source_id, str) or not source_id:
            self.auto += 1
            source_id = f"call{self.auto}"
        taken = {e["call_id"] for e in trace.events if e["type"] == "tool_call" and "call_id" in e}
        call_id = source_id if source_id not in taken else f"{source_id}#{len(trace.events)}"
        event["call_id"] = call_id
        self.pending.append((call_id, event["name"], event))
        return event

    def tool(self, span: Span) -> None:
        attrs = span.attrs
        tl_name, tl_args, tl_output = traceloop_tool(attrs)
        name = _first_str(attrs.get("tool.name"), attrs.get("gen_ai.tool.name"), tl_name, span.name)
        call_id = _first_str(attrs.get("tool_call.id"), attrs.get("gen_ai.tool.call.id"))
        output = attrs.get("output.value", attrs.get("langfuse.observation.output"))
        if output is None:
            output = attrs.get("gen_ai.tool.call.result", tl_output)
        if not self.result_for(span, call_id, name, output, span.error):
            args = attrs.get("input.value", attrs.get("langfuse.observation.input"))
            if args is None:
                args = attrs.get("gen_ai.tool.call.arguments", tl_args)
            event = self.call(span, call_id, name, args)
            event["meta"]["from_tool_span"] = True
            self.result_for(span, event["call_id"], name, output, span.error)

    def result_for(self, span: Span, call_id: Any, name: Any, content: Any, error: bool) -> bool:
        """Answer the pending call with this id (else the oldest of this name); False when none
        is pending."""
        match = next((p for p in self.pending if p[0] == call_id), None)
        if match is None and isinstance(name, str):
            match = next((p for p in self.pending if p[1] == name), None)
        if match is None:
            return False
        self.pending.remove(match)
        text = _text(content)
        status = "error" if error or text.startswith("Error") else "ok"
        event = self.trace.add(
            "tool_result",
            call_id=match[0],
            status=status,
            content=text,
            meta={"span_id": span.span_id},
        )
        if span_kind(span.attrs) == "TOOL":
            put_timing(self.trace, event, **span_times(span.start, span.end))
        return True


def _first_str(*values: Any) -> str | None:
    return next((v for v in values if isinstance(v, str) and v), None)


def _json_int(value: int) -> int | str:
    """A span time as stored: an int where JSON holds it (64 bits), else its text (OTLP times
    are unsigned 64-bit, so only a malformed file has a larger one)."""
    return value if -(2**63) <= value < 2**64 else str(value)
