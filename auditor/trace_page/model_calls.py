"""The model calls a decision record references (``{"purpose", "cache_key", ...}`` anywhere in
it), each with its prompt and response from the database cache, for a policy panel. Records
hold only references (so re-runs are byte-identical); the text lives once in the cache."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from auditor.llm.models import ModelCallRecord
from auditor.llm.store import call_refs
from auditor.trace_page.text import short, visible

MAX_CALLS = 50  # a panel, not an export: the rest is counted
MAX_CHARS = 6000


def _clip(text: str) -> str:
    """Lines kept (a prompt is read as text), invisible characters shown, length bounded."""
    text = visible(text)
    return text if len(text) <= MAX_CHARS else text[: MAX_CHARS - 1] + "…"


def _message_text(m: Mapping[str, Any]) -> str:
    content = m.get("content")
    text = content if isinstance(content, str) else ("" if content is None else str(content))
    calls = m.get("tool_calls")
    if isinstance(calls, list) and calls:
        names = [
            f"{(c.get('function') or {}).get('name', '?')}"
            f"({(c.get('function') or {}).get('arguments', '')})"
            for c in calls
            if isinstance(c, Mapping)
        ]
        text = (text + "\n" if text else "") + "tool calls: " + "; ".join(names)
    return text


def model_calls(record: Mapping[str, Any]) -> dict[str, Any]:
    refs: dict[str, Mapping[str, Any]] = {}
    for ref in call_refs(record):
        refs.setdefault(str(ref["cache_key"]), ref)
    if not refs:
        return {"calls": [], "more": 0}
    keys = list(refs)[:MAX_CALLS]
    stored = {
        r["key"]: r
        for r in ModelCallRecord.objects.filter(key__in=keys).values("key", "request", "response")
    }
    calls = []
    for key in keys:
        ref, row = refs[key], stored.get(key)
        prompt, response = [], ""
        if row is not None:
            for m in (row["request"] or {}).get("messages") or []:
                if isinstance(m, Mapping):
                    prompt.append((short(m.get("role", "?"), 20), _clip(_message_text(m))))
            choices = (row["response"] or {}).get("choices") or [{}]
            message = choices[0].get("message") if isinstance(choices[0], Mapping) else None
            response = _clip(_message_text(message or {}))
        calls.append(
            {
                "key": key,
                "purpose": str(ref.get("purpose", "")),
                "model": str(ref.get("model", "")),
                "tokens": ref.get("tokens"),
                "error": short(ref.get("error"), 300) if ref.get("error") else "",
                "stored": row is not None,
                "prompt": prompt,
                "response": response,
            }
        )
    return {"calls": calls, "more": max(len(refs) - MAX_CALLS, 0)}
