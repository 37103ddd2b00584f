"""Settings of an audit run: one frozen dataclass per policy, built from plain dicts (as stored
in the audit run's JSONField) with unknown keys rejected, so a typo never silently runs the
defaults."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from .checklist.policy import ChecklistSettings
from .commit.extractors import ExtractorSettings
from .commit.policy import CommitSettings
from .twincheck.policy import TwinCheckSettings
from .vrr.rule import VrrParams, VrrSettings

SETTINGS_CLASSES: dict[str, type[Any]] = {
    "twincheck": TwinCheckSettings,
    "checklist": ChecklistSettings,
    "vrr": VrrSettings,
    "commit": CommitSettings,
}


def _convert(name: str, value: Any) -> Any:
    if name == "extractor" and isinstance(value, Mapping):
        return build_settings(ExtractorSettings, value)
    if name in ("params", "rate_lower", "rate_upper") and isinstance(value, Mapping):
        return VrrParams.from_dict(dict(value))
    if name == "samples" and isinstance(value, (list, tuple)):
        return tuple(VrrParams.from_dict(dict(v)) if isinstance(v, Mapping) else v for v in value)
    if isinstance(value, list):
        return tuple(value)
    return value


def build_settings[S](cls: type[S], values: Mapping[str, Any] | None) -> S:
    """``cls(**values)`` with nested settings converted; ``ValueError`` on unknown keys."""
    values = dict(values or {})
    known = {f.name for f in dataclasses.fields(cls)}  # type: ignore[arg-type]
    unknown = sorted(set(values) - known)
    if unknown:
        raise ValueError(f"unknown {cls.__name__} settings: {', '.join(unknown)}")
    return cls(**{k: _convert(k, v) for k, v in values.items()})


def policy_settings(policy: str, values: Mapping[str, Any] | None) -> Any:
    try:
        cls = SETTINGS_CLASSES[policy]
    except KeyError:
        raise ValueError(f"unknown policy {policy!r}") from None
    return build_settings(cls, values)
