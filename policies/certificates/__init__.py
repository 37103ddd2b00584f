"""TwinCheck's evidence condition: a registry of certificates, each a trace-local failure
hypothesis with its deterministic negative twin (SPEC §5.1 step 1; Dai & Huang 2026, §3 and
App. Figures 4–6). One module per certificate; `base` holds what they share.

Register another certificate with `register_certificate(name)` on a function
``(call, CertContext) -> Hit | None`` and name it in ``TwinCheckSettings.certificates``.
"""

from __future__ import annotations

from ..inverse_tables import INVERSE_VERBS, inverse_name
from .base import (
    ASK_USER_TEXT,
    CERTIFICATES,
    COMPLETION_TEXT,
    CertContext,
    Certificate,
    Hit,
    Twin,
    TwinKind,
    completion_or_delete,
    register_certificate,
    turn_made_progress,
)
from .inverse import REVERSAL_WORDS, inverse_action, inverted_success, requested_reversal
from .repeat import (
    failed_identical,
    rank_evidence_calls,
    read_only_tools,
    repeat_after_error,
    success_since,
)
from .stale import (
    from_earlier_lookup,
    identifier_kind,
    names_self,
    not_bound_in_turn,
    requested_instead,
    same_role,
    unique_stale_argument,
)

__all__ = [
    "ASK_USER_TEXT",
    "CERTIFICATES",
    "COMPLETION_TEXT",
    "INVERSE_VERBS",
    "REVERSAL_WORDS",
    "CertContext",
    "Certificate",
    "Hit",
    "Twin",
    "TwinKind",
    "completion_or_delete",
    "failed_identical",
    "from_earlier_lookup",
    "identifier_kind",
    "inverse_action",
    "inverse_name",
    "inverted_success",
    "names_self",
    "not_bound_in_turn",
    "rank_evidence_calls",
    "read_only_tools",
    "register_certificate",
    "repeat_after_error",
    "requested_instead",
    "requested_reversal",
    "same_role",
    "success_since",
    "turn_made_progress",
    "unique_stale_argument",
]
