"""What an OpenTelemetry span records of a model call's tokens and cost, and its times, in v1
terms (`usage`, `cost_usd`, `ts`, `end_ts`, `duration_ms`).

Attribute names: OpenInference (`llm.token_count.*`, `llm.cost.*`), the GenAI semantic
conventions (`gen_ai.usage.*`) and the Langfuse SDK (`langfuse.observation.usage_details`,
`cost_details`, JSON objects).
"""

from __future__ import annotations

from typing import Any

import orjson

from ._otlp_read import Span
from ._timing import amount, count, from_unix_nano


def json_text(value: Any) -> Any:
    """A JSON string attribute parsed (as instrumentations store objects); else as it is."""
    if isinstance(value, str):
        try:
            return orjson.loads(value)
        except orjson.JSONDecodeError:
            return value
    return value


# Token counts and cost of an LLM span, by v1 name: the first attribute present wins.
USAGE_ATTRS = {
    "input_tokens": (
        "llm.token_count.prompt",
        "gen_ai.usage.input_tokens",
        "gen_ai.usage.prompt_tokens",
    ),
    "output_tokens": (
        "llm.token_count.completion",
        "gen_ai.usage.output_tokens",
        "gen_ai.usage.completion_tokens",
    ),
    "total_tokens": ("llm.token_count.total", "gen_ai.usage.total_tokens"),
}
LANGFUSE_USAGE = "langfuse.observation.usage_details"
LANGFUSE_COST = "langfuse.observation.cost_details"
COST_ATTRS = ("llm.cost.total", "gen_ai.usage.cost")
# What `span_usage` reads off an LLM span (so the span tree in meta does not repeat them).
USAGE_KEYS = frozenset(
    {k for keys in USAGE_ATTRS.values() for k in keys}
    | {LANGFUSE_USAGE, LANGFUSE_COST, *COST_ATTRS, "llm.cost.prompt", "llm.cost.completion"}
)


def span_usage(span: Span) -> tuple[dict | None, float | None]:
    """(v1 usage, cost in USD) an LLM span records; None for what it does not."""
    attrs = span.attrs
    usage: dict[str, int] = {}
    for name, keys in USAGE_ATTRS.items():
        found = next((count(attrs[k]) for k in keys if count(attrs.get(k)) is not None), None)
        if found is not None:
            usage[name] = found
    details = json_text(attrs.get(LANGFUSE_USAGE))
    if not usage and isinstance(details, dict):
        for name, key in (
            ("input_tokens", "input"),
            ("output_tokens", "output"),
            ("total_tokens", "total"),
        ):
            found = count(details.get(key))
            if found is not None:
                usage[name] = found
    cost = next((amount(attrs[k]) for k in COST_ATTRS if amount(attrs.get(k)) is not None), None)
    if cost is None:
        parts = [amount(attrs.get(k)) for k in ("llm.cost.prompt", "llm.cost.completion")]
        if all(p is not None for p in parts):
            cost = sum(p for p in parts if p is not None)
    costs = json_text(attrs.get(LANGFUSE_COST))
    if cost is None and isinstance(costs, dict):
        cost = amount(costs.get("total"))
        if cost is None and costs and all(amount(v) is not None for v in costs.values()):
            cost = sum(costs.values())
    return usage or None, cost


def span_times(start: int, end: int) -> dict:
    """`ts`, `end_ts` and `duration_ms` from a span's unix-nano times (a 0 is no time). A time
    no date holds is passed on as the number it is, in text (JSON numbers stop at 64 bits),
    which `put_timing` keeps in `meta` and flags as unreadable; no duration is taken from it."""
    ts, end_ts = from_unix_nano(start), from_unix_nano(end)
    out: dict = {
        "ts": ts if ts is not None or start <= 0 else str(start),
        "end_ts": end_ts if end_ts is not None or end <= 0 else str(end),
    }
    if ts is not None and end_ts is not None and end >= start:
        out["duration_ms"] = (end - start) / 1e6
    return out
