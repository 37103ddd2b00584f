"""A run's model settings and the objects built from them (the surface the app wires in).

`LLMSettings` is plain data stored with an audit run: one endpoint (`ModelConfig`), the uses
switched on, an optional model per use (a verifier model that differs from the actor model,
say), the run's budget and the claim-elicitation settings. `LLMRun` builds, from settings and
a cache, the clients and the use objects — sharing one budget and one statistics counter —
and reports what the run page shows.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from ..settings import build_settings
from .budget import Budget
from .cache import CallCache, MemoryCache
from .claims import ClaimsSettings
from .client import CallStats, ModelClient
from .config import ModelConfig
from .judge import LLMJudge
from .live_bfcl import continue_live
from .netguard import AddressGuard
from .recheck import ModelResponder
from .twin import TwinGenerator

USES = ("judge", "twin", "live", "claims", "recheck")


@dataclass(frozen=True, slots=True)
class LLMSettings:
    endpoint: ModelConfig
    uses: tuple[str, ...] = ("judge",)
    models: Mapping[str, str] = field(default_factory=dict)
    max_calls: int | None = None
    max_tokens: int | None = None
    claims: ClaimsSettings = field(default_factory=ClaimsSettings)

    @classmethod
    def from_mapping(cls, values: Mapping[str, Any]) -> LLMSettings:
        """From ``{"endpoint": {...}, "uses": [...], "models": {use: model}, "max_calls",
        "max_tokens", "claims": {...}}``; every unknown key or use is a ``ValueError``."""
        v = dict(values)
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(v) - known)
        if unknown:
            raise ValueError(f"unknown model-run settings: {', '.join(unknown)}")
        uses = tuple(v.get("uses", ("judge",)))
        models = dict(v.get("models") or {})
        bad = sorted((set(uses) | set(models)) - set(USES))
        if bad:
            raise ValueError(f"unknown model uses: {', '.join(bad)} (known: {', '.join(USES)})")
        return cls(
            endpoint=ModelConfig.from_mapping(v.get("endpoint")),
            uses=uses,
            models=models,
            max_calls=v.get("max_calls"),
            max_tokens=v.get("max_tokens"),
            claims=build_settings(ClaimsSettings, v.get("claims")),
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "endpoint": self.endpoint.to_dict(),
            "uses": list(self.uses),
            "models": dict(self.models),
            "max_calls": self.max_calls,
            "max_tokens": self.max_tokens,
            "claims": self.claims.to_dict(),
        }


class LLMRun:
    """``api_key``, ``guard`` and ``tenant`` go to every client (`ModelClient`)."""

    def __init__(
        self,
        settings: LLMSettings,
        cache: CallCache | None = None,
        api_key: str = "",
        guard: AddressGuard | None = None,
        tenant: str = "",
    ) -> None:
        self.settings = settings
        self.cache = cache if cache is not None else MemoryCache()
        self.budget = Budget(settings.max_calls, settings.max_tokens)
        self.stats = CallStats()
        self._key = api_key
        self._guard = guard
        self._tenant = tenant
        self._clients: dict[str, ModelClient] = {}

    def __repr__(self) -> str:
        return f"LLMRun(model={self.settings.endpoint.model!r}, uses={self.settings.uses})"

    def client(self, use: str) -> ModelClient:
        model = self.settings.models.get(use) or self.settings.endpoint.model
        c = self._clients.get(model)
        if c is None:
            cfg = self.settings.endpoint.replace(model=model)
            c = ModelClient(
                cfg, self.cache, self.budget, self.stats, self._key, self._guard, self._tenant
            )
            self._clients[model] = c
        return c

    def enabled(self, use: str) -> bool:
        return use in self.settings.uses

    def judge(self) -> LLMJudge | None:
        return LLMJudge(self.client("judge")) if self.enabled("judge") else None

    def twin_generator(self) -> TwinGenerator | None:
        return TwinGenerator(self.client("twin")) if self.enabled("twin") else None

    def continuer(self) -> Callable[..., Any] | None:
        """For replay's ``continuer`` hook: (trace, prefix, replacement, environment)."""
        return partial(continue_live, client=self.client("live")) if self.enabled("live") else None

    def responder(self) -> ModelResponder | None:
        return ModelResponder(self.client("recheck")) if self.enabled("recheck") else None

    def summary(self) -> dict[str, Any]:
        """Calls, tokens, cache hits and failures; whether (and why) the budget stopped it."""
        state = self.budget.state()
        return {
            **self.stats.to_dict(),
            "budget_reached": state.reached,
            "budget_message": state.message(),
        }
