"""What a worker builds from a run's model settings: one `policies.llm.run.LLMRun` per chunk
process, over the database cache (scoped to the endpoint's URL and the project), the run's
shared budget and its statistics row, with the endpoint's key and the operator's address
guard."""

from __future__ import annotations

from typing import Any

from auditor.llm.endpoints import endpoint_key, guard, tenant
from auditor.llm.models import ModelEndpoint
from auditor.llm.settings import llm_settings
from auditor.llm.store import DatabaseCache, RunBudget, RunStats, call_refs
from auditor.runs.models import AuditResult, AuditRun
from policies.llm.claims import elicit_claims
from policies.llm.recheck import ModelResponder
from policies.llm.run import LLMRun

JsonDict = dict[str, Any]


#: Which policy's records reference a use's calls (VRR makes none; its records are large).
USE_POLICY = {
    "judge": "twincheck",
    "twin": "twincheck",
    "live": "twincheck",
    "claims": "checklist",
    "recheck": "commit",
}


def run_key(run: AuditRun, base_url: str) -> str:
    """The key the run's endpoint holds ("" for a run that names no endpoint). The endpoint
    must still be the project's and still point where it did when the run was started: a key
    is only ever sent to the URL its owner saved it with. `ValueError` with the reason."""
    ref = (run.model_settings or {}).get("endpoint_id")
    if ref is None:
        return ""
    name = (run.model_settings or {}).get("endpoint_name", ref)
    ep = ModelEndpoint.objects.filter(pk=ref, project_id=run.project_id).first()
    if ep is None:
        raise ValueError(f"the model endpoint {name!r} no longer exists")
    if ep.base_url.rstrip("/") != base_url.rstrip("/"):
        raise ValueError(
            f"the model endpoint {ep.name!r} points to another URL than when the run was "
            f"started; start a new audit"
        )
    return endpoint_key(ep)


class RunBackend:
    """The model side of one run in one process. ``auditor_kwargs`` go to `policies.Auditor`;
    `prepare` adds elicited claims; `flush` adds this process's call counts to the run."""

    def __init__(self, run: AuditRun) -> None:
        self.run_id = run_id = run.pk
        self.settings = llm_settings(run.model_settings)
        key = run_key(run, self.settings.endpoint.base_url)
        who = tenant(run.project_id)
        self.cache = DatabaseCache(run.project_id, self.settings.endpoint.base_url, who)
        self.llm = LLMRun(self.settings, self.cache, key, guard(), who)
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
