"""Strict reading of a model's JSON answer: one JSON object, alone or in one ```json fence,
valid against the use's schema (types, required keys, no extra keys, numeric ranges). Anything
else is malformed — the use abstains and records the raw text."""

from __future__ import annotations

import json
import re
from typing import Any

from ..schema import validate

_FENCED = re.compile(r"\A```(?:json)?[ \t]*\n(?P<body>.*)\n```\Z", re.DOTALL)
RAW_LIMIT = 4000


class MalformedAnswer(ValueError):
    pass


def json_answer(text: str, schema: dict[str, Any]) -> dict[str, Any]:
    """The answer object, or `MalformedAnswer` saying what is wrong."""
    obj = json_object(text)
    errors = validate(obj, schema) + _ranges(obj, schema, "$")
    if errors:
        raise MalformedAnswer("; ".join(errors[:5]))
    return obj


def json_object(text: str) -> dict[str, Any]:
    """The one JSON object ``text`` holds (bare or in one fence), or `MalformedAnswer`."""
    s = text.strip()
    m = _FENCED.match(s)
    if m is not None:
        s = m.group("body").strip()
    try:
        obj = json.loads(s)
    except ValueError as exc:
        raise MalformedAnswer(f"not a JSON object ({exc})") from None
    if not isinstance(obj, dict):
        raise MalformedAnswer(f"expected a JSON object, got {type(obj).__name__}")
    return obj


def _ranges(value: Any, schema: dict[str, Any], path: str) -> list[str]:
    """``minimum``/``maximum`` (the project's validator covers the rest of the subset)."""
    out: list[str] = []
    if isinstance(value, int | float) and not isinstance(value, bool):
        if value != value:
            return [f"{path}: not a number"]
        lo, hi = schema.get("minimum"), schema.get("maximum")
        if isinstance(lo, int | float) and value < lo or isinstance(hi, int | float) and value > hi:
            out.append(f"{path}: {value!r} is outside [{lo}, {hi}]")
    elif isinstance(value, dict):
        props = schema.get("properties") or {}
        for k, v in value.items():
            if isinstance(props.get(k), dict):
                out.extend(_ranges(v, props[k], f"{path}.{k}"))
    elif isinstance(value, list) and isinstance(schema.get("items"), dict):
        for i, v in enumerate(value):
            out.extend(_ranges(v, schema["items"], f"{path}[{i}]"))
    return out


def raw_excerpt(text: str) -> str:
    return text if len(text) <= RAW_LIMIT else text[: RAW_LIMIT - 1] + "…"
