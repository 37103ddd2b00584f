"""Strict-JSON plain data for storage: PostgreSQL's jsonb rejects NaN and ±Infinity, which
statistics legitimately produce (an undefined rate, an unidentified parameter)."""

from __future__ import annotations

import math
from typing import Any

import orjson

_OPTS = orjson.OPT_NON_STR_KEYS | orjson.OPT_SERIALIZE_NUMPY


def json_safe(value: Any) -> Any:
    """A copy of ``value`` with non-finite floats replaced by None and tuples by lists.

    orjson already writes NaN and ±Infinity as null and tuples as arrays, in C: a round trip
    through it is an order of magnitude faster than walking the value here, which matters for
    guarded trajectories of thousands of events. Values orjson cannot encode take the walk.
    """
    try:
        return orjson.loads(orjson.dumps(value, option=_OPTS))
    except TypeError:
        return _walk(value)


def _walk(value: Any) -> Any:
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {str(k): _walk(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_walk(v) for v in value]
    return value
