"""The schema of every audit setting: its type and its range, checked before a run is created.

One layer for every entry point (the API, the browser form, `manage.py audit`): a value of the
wrong type, a number out of range (above 2⁶³, NaN, infinite, negative where a count is meant), an
unknown policy or setting, a regex that does not compile — each is refused with a
`SettingsInvalid` naming the field (``vrr.delta``), instead of being stored and then failing in
every trace of the run.

The types come from the settings dataclasses (`policies.settings.SETTINGS_CLASSES`); the ranges
are listed here, field by field. A field of a known type without a listed range gets the default
range of its type (`DEFAULT_INT`, `DEFAULT_FLOAT`).
"""

from __future__ import annotations

import dataclasses
import math
import re
import types
import typing
from collections.abc import Mapping
from typing import Any, Literal

from .certificates import CERTIFICATES
from .inverse_tables import DECLARED_TABLES, INVERSE_TABLES
from .settings import SETTINGS_CLASSES
from .vrr.rule import VrrParams

#: Default ranges of numbers without a listed one.
DEFAULT_INT = (0, 1_000_000)
DEFAULT_FLOAT = (-1e6, 1e6)
#: Longest text setting (prompts, patterns), and longest list.
MAX_TEXT = 10_000
MAX_ITEMS = 10_000
PROBABILITY = (0.0, 1.0)

#: Ranges by "policy.field" (numbers: inclusive bounds).
RANGES: dict[str, tuple[float, float]] = {
    "twincheck.min_confidence": PROBABILITY,
    "twincheck.min_margin": (-4.0, 4.0),
    "twincheck.context_events": (0, 100_000),
    "checklist.theta": PROBABILITY,
    "checklist.on_demand_threshold": PROBABILITY,
    "checklist.draft_first_threshold": PROBABILITY,
    "checklist.min_overlap": (0, 1_000),
    "vrr.tau": (-1e6, 1e6),
    "vrr.j_min": (-1.0, 1.0),
    "vrr.delta_fraction": PROBABILITY,
    "vrr.delta": (1, 1_000),
    "vrr.sign_stability": PROBABILITY,
    "vrr.min_evidence": (1, 1_000_000),
    "vrr.params": PROBABILITY,  # each of rho0, rho1, alpha, beta, prior
    "vrr.samples": PROBABILITY,
    "vrr.rate_lower": PROBABILITY,
    "vrr.rate_upper": PROBABILITY,
    "commit.budget": (1, 100),
    "commit.short_answer_words": (1, 10_000),
    "commit.extractor.abs_tol": (0.0, 1e6),
    "commit.extractor.rel_tol": (0.0, 1.0),
}
#: Text settings that are regular expressions (they must compile).
PATTERNS = frozenset(
    {"checklist.evidence_pattern", "commit.challenge_pattern", "commit.extractor.pattern"}
)


def _choices(field: str) -> tuple[str, ...] | None:
    """Allowed values of text fields whose type does not say them."""
    if field == "twincheck.inverse_table":
        return ("auto", *INVERSE_TABLES, *DECLARED_TABLES)
    if field == "twincheck.certificates":
        return tuple(CERTIFICATES)
    return None


class SettingsInvalid(ValueError):
    """A setting the schema refuses; ``field`` names it (``vrr.delta``)."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field
        self.message = message


def _name(key: str) -> str:
    """A client-supplied key as a field name: itself when a plain name, else quoted, escaped
    (no NUL, no lone surrogate reaches a message) and cut."""
    return key[:60] if key.isidentifier() else ascii(key[:60])


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "text"
    if isinstance(value, (list, tuple)):
        return "a list"
    if isinstance(value, Mapping):
        return "an object"
    return type(value).__name__


def _number(field: str, value: Any, *, integer: bool, range_of: str = "") -> int | float:
    lo, hi = RANGES.get(range_of or field, DEFAULT_INT if integer else DEFAULT_FLOAT)
    want = "an integer" if integer else "a number"
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise SettingsInvalid(field, f"expected {want} from {lo:g} to {hi:g}, got {_kind(value)}")
    if integer and isinstance(value, float):
        if not value.is_integer():
            raise SettingsInvalid(field, f"expected {want}, got {value!r}")
    if isinstance(value, float) and not math.isfinite(value):
        raise SettingsInvalid(field, f"expected a finite number, got {value!r}")
    if not lo <= value <= hi:
        shown = str(value) if len(str(value)) <= 40 else f"a {len(str(value))}-digit number"
        raise SettingsInvalid(field, f"must be from {lo:g} to {hi:g}, not {shown}")
    return int(value) if integer else float(value)


def _text(field: str, value: Any) -> str:
    if not isinstance(value, str):
        raise SettingsInvalid(field, f"expected text, got {_kind(value)}")
    if len(value) > MAX_TEXT:
        raise SettingsInvalid(field, f"at most {MAX_TEXT:,} characters, got {len(value):,}")
    if "\x00" in value:
        raise SettingsInvalid(field, "NUL characters are not allowed")
    if field in PATTERNS:
        try:
            re.compile(value)
        except (re.error, RecursionError, OverflowError) as exc:
            raise SettingsInvalid(field, f"not a valid regular expression ({exc})") from None
    choices = _choices(field)
    if choices is not None and value not in choices:
        raise SettingsInvalid(field, f"choose from {', '.join(choices)}")
    return value


def _params(field: str, value: Any) -> dict[str, float | None] | None:
    if value is None:
        return None
    if not isinstance(value, Mapping):
        raise SettingsInvalid(field, f"expected an object of VRR parameters, got {_kind(value)}")
    names = [f.name for f in dataclasses.fields(VrrParams)]
    unknown = sorted(str(k) for k in value if k not in names)
    if unknown:
        raise SettingsInvalid(field, f"unknown parameters {unknown}; expected {', '.join(names)}")
    out: dict[str, float | None] = {}
    for name in names:
        v = value.get(name)
        # null is how JSON stores a parameter that was not identified (VrrParams.from_dict)
        out[name] = (
            None if v is None else _number(f"{field}.{name}", v, integer=False, range_of=field)
        )
    return out


def _check(field: str, hint: Any, value: Any) -> Any:
    """`value` checked against the type `hint` of the dataclass field `field`."""
    origin = typing.get_origin(hint)
    args = typing.get_args(hint)
    if origin in (typing.Union, types.UnionType):
        if value is None and type(None) in args:
            return None
        (inner,) = [a for a in args if a is not type(None)]
        return _check(field, inner, value)
    if hint is VrrParams:
        return _params(field, value)
    if dataclasses.is_dataclass(hint):
        return _section(field, hint, value)  # type: ignore[arg-type]
    if origin is Literal:
        if value not in args or not isinstance(value, str):
            shown = repr(value) if isinstance(value, str) and len(value) < 40 else _kind(value)
            raise SettingsInvalid(field, f"choose from {', '.join(args)}, not {shown}")
        return value
    if origin is tuple:
        if not isinstance(value, (list, tuple)):
            raise SettingsInvalid(field, f"expected a list, got {_kind(value)}")
        if len(value) > MAX_ITEMS:
            raise SettingsInvalid(field, f"at most {MAX_ITEMS:,} items, got {len(value):,}")
        return [_check(field, args[0], v) for v in value]
    if hint is bool:
        if not isinstance(value, bool):
            raise SettingsInvalid(field, f"expected true or false, got {_kind(value)}")
        return value
    if hint is int:
        return _number(field, value, integer=True)
    if hint is float:
        return _number(field, value, integer=False)
    if hint is str:
        return _text(field, value)
    raise SettingsInvalid(field, "this setting cannot be set")  # a type the schema lacks


def _section(prefix: str, cls: type[Any], values: Any) -> dict[str, Any]:
    if not isinstance(values, Mapping):
        raise SettingsInvalid(prefix, f"expected an object of settings, got {_kind(values)}")
    hints = typing.get_type_hints(cls)
    known = [f.name for f in dataclasses.fields(cls)]
    unknown = sorted(str(k) for k in values if k not in known)
    if unknown:
        raise SettingsInvalid(
            f"{prefix}.{_name(unknown[0])}", f"unknown setting; {prefix} has {', '.join(known)}"
        )
    return {name: _check(f"{prefix}.{name}", hints[name], v) for name, v in values.items()}


def validate_settings(settings: Any) -> dict[str, dict[str, Any]]:
    """Per-policy settings (``{"vrr": {"delta": 3}, …}``) checked against the schema, as plain
    JSON values (lists for tuples). Raises `SettingsInvalid` naming the first bad field."""
    if settings is None:
        return {}
    if not isinstance(settings, Mapping):
        raise SettingsInvalid("settings", f"expected an object, got {_kind(settings)}")
    out: dict[str, dict[str, Any]] = {}
    for policy, values in settings.items():
        cls = SETTINGS_CLASSES.get(policy) if isinstance(policy, str) else None
        if cls is None:
            raise SettingsInvalid(
                f"settings.{_name(str(policy))}",
                f"unknown policy; choose from {', '.join(SETTINGS_CLASSES)}",
            )
        out[policy] = _section(policy, cls, values)
    return out
