"""What a worker builds from a run's model settings: one `policies.llm.run.LLMRun` per chunk
process, over the database cache, the run's shared budget and its statistics row."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from auditor.llm.store import DatabaseCache, RunBudget, RunStats
from policies.llm.claims import elicit_claims
from policies.llm.run import LLMRun, LLMSettings

JsonDict = dict[str, Any]


class RunBackend:
    """The model side of one run in one process. ``auditor_kwargs`` go to `policies.Auditor`;
    `prepare` adds elicited claims; `flush` adds this process's call counts to the run."""

    def __init__(self, run_id: int, judge: str, model_settings: Mapping[str, Any]) -> None:
        self.run_id = run_id
        self.settings = LLMSettings.from_mapping(model_settings)
        self.llm = LLMRun(self.settings, DatabaseCache())
        self.stats = RunStats()
        # Replaced before any client exists, so every client shares these two.
        self.llm.budget = RunBudget(run_id, self.settings.max_calls, self.settings.max_tokens)
        self.llm.stats = self.stats
        self.judge = self.llm.judge() if judge == "llm" else None

    def auditor_kwargs(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "twin_generator": self.llm.twin_generator(),
            "continuer": self.llm.continuer(),
            "responder": self.llm.responder(),
        }
        if self.judge is not None:
            out["judge"] = self.judge
        return out

    def prepare(
        self, events: list[JsonDict], policies: list[str]
    ) -> tuple[list[JsonDict], JsonDict | None]:
        """Events with elicited pre-reply claims when the run asks for them (checklist only:
        no other policy reads claims) and the trace has none, and what the elicitation did
        (its calls and failures, for the checklist's record)."""
        if "checklist" not in policies or not self.llm.enabled("claims"):
            return events, None
        got = elicit_claims(events, self.llm.client("claims"), self.settings.claims)
        if not got.calls:
            return got.events, None
        return got.events, {"calls": got.calls, "failures": got.failures}

    def flush(self) -> None:
        self.stats.flush(self.run_id)
