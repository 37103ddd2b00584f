"""TwinCheck (SPEC §5.1): at a write-action decision point, replace the action by a read-only
twin when a certificate holds and a judge prefers the twin.

- `policy`: `TwinCheckPolicy`, `TwinCheckSettings`, `TwinGenerator` (the replay policy);
- `gate`: the structural checks and the switch gate (`structural_checks`, `switch_gate`).

The certificates, tool profiles and inverse tables it checks against are engine modules
(`policies.certificates`, `policies.tool_profile`, `policies.inverse_tables`): the heuristic
judge, the LLM twin and the settings schema read them too. Its run report is
`policies.stats.twincheck_report`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..lazy import lazy_getattr

if TYPE_CHECKING:
    from .gate import structural_checks, switch_gate
    from .policy import TwinCheckPolicy, TwinCheckSettings, TwinGenerator, render_context

#: Public name -> the module in this package that defines it, imported on first use (PEP 562),
#: so importing one module of the package does not import the others.
_EXPORTS = {
    "TwinCheckPolicy": "policy",
    "TwinCheckSettings": "policy",
    "TwinGenerator": "policy",
    "render_context": "policy",
    "structural_checks": "gate",
    "switch_gate": "gate",
}

__all__ = [
    "TwinCheckPolicy",
    "TwinCheckSettings",
    "TwinGenerator",
    "render_context",
    "structural_checks",
    "switch_gate",
]


__getattr__ = lazy_getattr(__name__, _EXPORTS)
