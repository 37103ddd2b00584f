"""Text and numbers for display: control characters made visible, JSON pretty-printed, values
cut to one line, and tolerant readers of record fields (a record may be partial or old)."""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from typing import Any

# C0 controls (except tab and newline) and DEL → their Unicode "control picture"; ESC → ␛.
_CONTROL_PICTURES = {c: 0x2400 + c for c in range(0x20) if c not in (0x09, 0x0A)}
_CONTROL_PICTURES[0x7F] = 0x2421
_CONTROL_PICTURES[0x0D] = None  # a bare CR only confuses a <pre>; CRLF becomes LF


def visible(text: str) -> str:
    """``text`` with control characters shown as symbols (ESC → ␛), so ANSI colour codes and
    terminal tricks are displayed, not interpreted or silently dropped."""
    return text.translate(_CONTROL_PICTURES)


# JSON writes control characters as \u00XX escapes; show those as control pictures too, so an
# ANSI code reads the same (␛[31m) inside a JSON value as in plain text.
_JSON_CONTROL = re.compile(r"(?<!\\)\\u00([01][0-9a-fA-F]|7[fF])")


def _json_control(m: re.Match[str]) -> str:
    code = int(m.group(1), 16)
    return chr(0x2421 if code == 0x7F else 0x2400 + code)


def pretty(value: Any) -> str:
    """Readable text of any JSON value: strings as they are, everything else indented JSON."""
    if isinstance(value, str):
        return visible(value)
    try:
        text = json.dumps(value, indent=2, ensure_ascii=False, allow_nan=True, default=str)
    except (TypeError, ValueError):
        text = repr(value)
    return visible(_JSON_CONTROL.sub(_json_control, text))


def short(value: Any, limit: int = 120) -> str:
    """One line, at most ``limit`` characters."""
    if isinstance(value, str):
        text = value
    else:
        try:
            text = json.dumps(value, ensure_ascii=False, default=str, separators=(", ", ": "))
            text = _JSON_CONTROL.sub(_json_control, text)
        except (TypeError, ValueError):
            text = repr(value)
    text = " ".join(visible(text).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _maybe_json(text: str) -> Any:
    """Tool results often carry JSON in a string; parse it for display when it clearly is."""
    s = text.strip()
    if len(s) < 2 or s[0] not in "[{" or len(s) > 200_000:
        return text
    try:
        return json.loads(s)
    except ValueError:
        return text


def fmt_num(value: Any, digits: int = 3) -> str:
    if isinstance(value, bool) or value is None:
        return "—" if value is None else str(value)
    if isinstance(value, (int, float)):
        if isinstance(value, float) and not math.isfinite(value):
            return str(value)
        return f"{value:.{digits}g}" if isinstance(value, float) else str(value)
    return short(value, 30)


def finite(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value) if math.isfinite(value) else None


def as_list(value: Any) -> list[Any]:
    return list(value) if isinstance(value, list) else []


def as_dict(value: Any) -> dict[str, Any]:
    return dict(value) if isinstance(value, Mapping) else {}
