"""What a worker builds from a run's model settings: one `policies.llm.run.LLMRun` per chunk
process, over the database cache, the run's shared budget and its statistics row."""

from __future__ import annotations

from typing import Any

from auditor.llm.store import DatabaseCache, RunBudget, RunStats, call_refs
from auditor.runs.models import AuditResult, AuditRun
from policies.llm.claims import elicit_claims
from policies.llm.recheck import ModelResponder
from policies.llm.run import LLMRun, LLMSettings

JsonDict = dict[str, Any]


#: Which policy's records reference a use's calls (VRR makes none; its records are large).
USE_POLICY = {
    "judge": "twincheck",
    "twin": "twincheck",
    "live": "twincheck",
    "claims": "checklist",
    "recheck": "commit",
}


class RunBackend:
    """The model side of one run in one process. ``auditor_kwargs`` go to `policies.Auditor`;
    `prepare` adds elicited claims; `flush` adds this process's call counts to the run."""

    def __init__(self, run: AuditRun) -> None:
        self.run_id = run_id = run.pk
        self.settings = LLMSettings.from_mapping(run.model_settings)
        self.cache = DatabaseCache()
        self.llm = LLMRun(self.settings, self.cache)
        # The latest finished run of the same audit: its records name the calls a re-run makes.
        self.previous = (
            AuditRun.objects.filter(
                project_id=run.project_id,
                judge=run.judge,
                policies=run.policies,
                settings=run.settings,
                model_settings=run.model_settings,
                status=AuditRun.Status.DONE,
            )
            .exclude(pk=run.pk)
            .order_by("-pk")
            .values_list("pk", flat=True)
            .first()
        )
        judge = run.judge
        self.responders: list[ModelResponder] = []
        self.stats = RunStats()
        # Replaced before any client exists, so every client shares these two.
        self.budget = RunBudget(run_id, self.settings.max_calls, self.settings.max_tokens)
        self.llm.budget = self.budget
        self.llm.stats = self.stats
        self.judge = self.llm.judge() if judge == "llm" else None

    def auditor_kwargs(self) -> dict[str, Any]:
        responder = self.llm.responder()
        if responder is not None:
            self.responders.append(responder)
        out: dict[str, Any] = {
            "twin_generator": self.llm.twin_generator(),
            "continuer": self.llm.continuer(),
            "responder": responder,
        }
        if self.judge is not None:
            out["judge"] = self.judge
        return out

    def prefetch(self, trace_ids: list[int]) -> None:
        """Load in one query the cached calls the previous run made on these traces."""
        if self.previous is None:
            return
        policies = {p for use, p in USE_POLICY.items() if self.llm.enabled(use)}
        records = AuditResult.objects.filter(
            run_id=self.previous, trace_id__in=trace_ids, policy__in=policies
        ).values_list("record", flat=True)
        self.cache.preload(str(ref["cache_key"]) for rec in records for ref in call_refs(rec))

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

    def take_recheck_calls(self) -> list[JsonDict]:
        """The commit rule's re-check calls since the last take (one trace's), for its record:
        the responder keeps them, the policy's record does not."""
        out: list[JsonDict] = []
        for r in self.responders:
            out += r.calls
            r.calls.clear()
        return out

    def flush(self) -> None:
        self.stats.flush(self.run_id, self.budget)
