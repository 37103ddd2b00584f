"""Model backends (SPEC §4): one OpenAI-compatible client, a content-addressed call cache and
a per-run budget, and the uses built on them — the LLM pairwise judge, the twin generator,
claim/confidence elicitation, the commit rule's re-check responder and live BFCL
continuation. Plain Python like the rest of `policies`; see docs/models.md.
"""

from __future__ import annotations

from .budget import BUDGET_REACHED, Budget, BudgetState
from .cache import CallCache, FileCache, MemoryCache, cache_key, canonical_json
from .calls import BudgetReached, ModelCall, ModelCallError
from .client import CallStats, ModelClient
from .config import ModelConfig

__all__ = [
    "BUDGET_REACHED",
    "Budget",
    "BudgetReached",
    "BudgetState",
    "CallCache",
    "CallStats",
    "FileCache",
    "MemoryCache",
    "ModelCall",
    "ModelCallError",
    "ModelClient",
    "ModelConfig",
    "cache_key",
    "canonical_json",
]
