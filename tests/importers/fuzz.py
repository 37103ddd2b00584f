"""Hypothesis helpers: mutate a real record (drop keys, swap value types, truncate the bytes)."""

from __future__ import annotations

import orjson
from hypothesis import strategies as st

JUNK = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-3, 3),
    st.floats(allow_nan=False),
    st.text(max_size=8),
    st.lists(st.integers(0, 2), max_size=2),
    st.dictionaries(st.text(max_size=3), st.integers(-5, 5), max_size=2),
)


def _paths(obj, prefix=(), out=None, limit=400):
    out = [] if out is None else out
    if len(out) >= limit:
        return out
    if isinstance(obj, dict):
        for k, v in obj.items():
            out.append(prefix + (k,))
            _paths(v, prefix + (k,), out, limit)
    elif isinstance(obj, list):
        for i, v in enumerate(obj[:6]):
            out.append(prefix + (i,))
            _paths(v, prefix + (i,), out, limit)
    return out


def mutate_obj(data: st.DataObject, obj):
    """Return a copy of `obj` with a few random values replaced or removed."""
    obj = orjson.loads(orjson.dumps(obj))
    paths = _paths(obj)
    if not paths:
        return data.draw(JUNK)
    for _ in range(data.draw(st.integers(1, 4))):
        path = data.draw(st.sampled_from(paths))
        parent = obj
        try:
            for key in path[:-1]:
                parent = parent[key]
            # An earlier mutation may have replaced a container: keys must still fit.
            if isinstance(parent, dict) != isinstance(path[-1], str):
                continue
            if data.draw(st.booleans()) and isinstance(parent, dict):
                parent.pop(path[-1], None)
            else:
                parent[path[-1]] = data.draw(JUNK)
        except (KeyError, IndexError, TypeError):
            continue
    return obj


def mutate(data: st.DataObject, obj, *, jsonl: bool = True) -> bytes:
    """Serialise a mutated `obj` (one JSONL line, or a document); sometimes truncate it."""
    blob = orjson.dumps(mutate_obj(data, obj)) + (b"\n" if jsonl else b"")
    if data.draw(st.integers(0, 4)) == 0:
        blob = blob[: data.draw(st.integers(0, len(blob)))]
    return blob
