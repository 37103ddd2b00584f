"""The hot paths' shortcuts give exactly what the general code gives (issue 11: the policies'
throughput target is met by such shortcuts, and a decision record or a judge prompt must not
change by a byte because of them)."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from policies.facts import canonical_args


def _reference(arguments: dict[Any, Any]) -> str:
    try:
        return json.dumps(arguments, sort_keys=True, separators=(",", ":"), default=str)
    except (TypeError, ValueError):
        return repr(sorted(arguments.items(), key=lambda kv: kv[0]))


scalars = st.one_of(
    st.text(), st.integers(), st.booleans(), st.none(), st.floats(allow_nan=True)
)
values = st.recursive(scalars, lambda inner: st.lists(inner) | st.dictionaries(st.text(), inner))


@given(st.dictionaries(st.text(), values))
def test_canonical_args_is_sorted_compact_json(arguments: dict[str, Any]) -> None:
    assert canonical_args(arguments) == _reference(arguments)


@given(st.dictionaries(st.integers(), st.text(), min_size=1))  # JSON never has mixed keys
def test_canonical_args_with_keys_that_are_not_strings(arguments: dict[Any, str]) -> None:
    assert canonical_args(arguments) == _reference(arguments)


def test_canonical_args_escapes_as_json_does() -> None:
    args = {"b": 'say "hi"\n\u00e9\U0001f600\x00', "a": True, "c": None, "d": -(10**30)}
    assert canonical_args(args) == _reference(args)
    assert canonical_args(args).startswith('{"a":true,"b":"say \\"hi\\"\\n\\u00e9')
