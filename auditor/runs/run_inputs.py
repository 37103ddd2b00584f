"""What a new audit run is refused for, before it is stored: every setting's type and range
(`policies.settings_schema`) and text the database cannot hold. One check for the API, the
form and `manage.py audit`, which all create runs through `services.audit_run_create`."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from common.request_input import text_problem
from policies.settings_schema import SettingsInvalid, validate_settings


class AuditRejected(Exception):
    """The run cannot be created as asked (unknown policy, bad setting). ``field`` names what
    was refused (``settings.vrr.delta``, ``policies``)."""

    def __init__(self, message: str, field: str = "settings") -> None:
        super().__init__(message)
        self.field = field


def checked_inputs(
    settings: Any, *, label: str, trace_filter: Mapping[str, Any] | None
) -> dict[str, dict[str, Any]]:
    """The per-policy settings as the schema returns them; `AuditRejected` naming the field."""
    texts = [("label", label), *((f"filter.{k}", str(v)) for k, v in (trace_filter or {}).items())]
    for name, text in texts:
        problem = text_problem(text)
        if problem:
            raise AuditRejected(f"{name}: {problem} are not allowed", field=name)
    try:
        return validate_settings(settings)
    except SettingsInvalid as exc:
        name = exc.field if exc.field.startswith("settings") else f"settings.{exc.field}"
        raise AuditRejected(f"invalid settings: {exc}", field=name) from exc
