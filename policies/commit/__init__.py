"""Commit under challenge (SPEC §5.4): keep the committed answer when a user challenges it
without new evidence.

- `policy`: `CommitPolicy`, `CommitSettings`, `commit_rule` and the seed's live designs
  (`commit_rule_live`, `challenge_loop`);
- `answers`: the trace's answers under challenge;
- `live`: a live responder for the guarded continuation (`Responder`);
- `extractors`: short-answer extraction and agreement (`ExtractorSettings`, `extract_answer`,
  `answers_agree`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..lazy import lazy_getattr

if TYPE_CHECKING:
    from .extractors import ExtractorSettings, answers_agree, extract_answer
    from .live import CHALLENGE_PROMPT, Responder
    from .policy import (
        CommitPolicy,
        CommitSettings,
        challenge_loop,
        commit_rule,
        commit_rule_live,
    )

#: Public name -> the module in this package that defines it, imported on first use (PEP 562),
#: so importing one module of the package does not import the others.
_EXPORTS = {
    "CHALLENGE_PROMPT": "live",
    "CommitPolicy": "policy",
    "CommitSettings": "policy",
    "ExtractorSettings": "extractors",
    "Responder": "live",
    "answers_agree": "extractors",
    "challenge_loop": "policy",
    "commit_rule": "policy",
    "commit_rule_live": "policy",
    "extract_answer": "extractors",
}

__all__ = [
    "CHALLENGE_PROMPT",
    "CommitPolicy",
    "CommitSettings",
    "ExtractorSettings",
    "Responder",
    "answers_agree",
    "challenge_loop",
    "commit_rule",
    "commit_rule_live",
    "extract_answer",
]


__getattr__ = lazy_getattr(__name__, _EXPORTS)
