"""Strict-JSON plain data for storage: PostgreSQL's jsonb rejects NaN and ±Infinity, which
statistics legitimately produce (an undefined rate, an unidentified parameter)."""

from __future__ import annotations

import math
from typing import Any


def json_safe(value: Any) -> Any:
    """A copy of ``value`` with non-finite floats replaced by None and tuples by lists."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {str(k): json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_safe(v) for v in value]
    return value
