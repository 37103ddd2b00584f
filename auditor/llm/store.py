"""The database side of a run's model calls: `DatabaseCache` (the cache protocol of
policies/llm/cache.py over `ModelCallRecord`, shared by every worker and every run of a project
— of all projects only when the operator opts in), `RunBudget`
(policies' `Budget`, counted in the run's `RunModelUsage` row so that all worker processes
share one budget) and `RunStats` (`CallStats` whose counts are added to the same row)."""

from __future__ import annotations

import copy
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from django.db import transaction
from django.db.models import F, Q

from auditor.llm.models import ModelCallRecord, RunModelUsage
from policies.llm.budget import Budget, BudgetState
from policies.llm.cache import cache_key, call_scope
from policies.llm.client import CallStats

JsonDict = dict[str, Any]


def call_refs(value: Any) -> Iterator[Mapping[str, Any]]:
    """Every model-call reference (``{"purpose", "cache_key", ...}``) anywhere in a record."""
    if isinstance(value, Mapping):
        key = value.get("cache_key")
        if isinstance(key, str) and len(key) == 64 and "purpose" in value:
            yield value
        for v in value.values():
            yield from call_refs(v)
    elif isinstance(value, list):
        for v in value:
            yield from call_refs(v)


class DatabaseCache:
    """Content-addressed: an entry is written once and never changes, so concurrent workers
    writing the same key are harmless (the second insert is ignored). `preload` reads the
    entries a batch will likely ask for in one query (a re-run's calls are the previous run's),
    so the cache-hit path costs no query per call.

    One project's entries (``tenant`` ``project:<id>``), or every project's (``shared``):
    the keys are made in the scope of the endpoint's ``base_url`` and the tenant, and every
    read is also filtered by project, so another project's answer is never served."""

    def __init__(self, project_id: int, base_url: str, tenant: str) -> None:
        self._loaded: dict[str, JsonDict] = {}
        self.scope = call_scope(base_url, tenant)
        self.base_url = base_url.rstrip("/")
        self.project_id = None if tenant == "shared" else project_id
        self._rows = ModelCallRecord.objects.filter(project_id=self.project_id)

    def preload(self, keys: Iterable[str]) -> None:
        wanted = list(dict.fromkeys(keys))
        rows = self._rows.filter(key__in=wanted).values_list("key", "response")
        self._loaded = {k: r for k, r in rows if isinstance(r, dict)}

    def get(self, key: str) -> JsonDict | None:
        hit = self._loaded.get(key)
        if hit is not None:
            return copy.deepcopy(hit)  # callers may not mutate the store
        row = self._rows.filter(key=key).values_list("response", flat=True).first()
        return row if isinstance(row, dict) else None

    def put(self, key: str, request: JsonDict, response: JsonDict, scope: str = "") -> None:
        if scope != self.scope or cache_key(request, self.scope) != key:
            raise ValueError("cache key does not match the request and scope")  # a caller bug
        ModelCallRecord.objects.bulk_create(
            [
                ModelCallRecord(
                    key=key,
                    project_id=self.project_id,
                    base_url=self.base_url[:500],
                    model=str(request.get("model", ""))[:200],
                    request=request,
                    response=response,
                )
            ],
            ignore_conflicts=True,
        )

    def entry(self, key: str) -> JsonDict | None:
        """Request and response of one call (the trace page shows them)."""
        row = self._rows.filter(key=key).values("request", "response").first()
        return dict(row) if row else None


def usage_for(run_id: int, max_calls: int | None, max_tokens: int | None) -> RunModelUsage:
    usage, _ = RunModelUsage.objects.get_or_create(
        run_id=run_id, defaults={"max_calls": max_calls, "max_tokens": max_tokens}
    )
    return usage


class RunBudget(Budget):
    """The run's budget in its usage row. With a limit, `reserve` is one conditional UPDATE: it
    takes a call only while calls and tokens are under their limits, atomically across
    processes. Without limits nothing can be exceeded, so the counts stay in this process until
    `flush` (one UPDATE per batch instead of two per call: the cache-hit path stays cheap)."""

    def __init__(self, run_id: int, max_calls: int | None, max_tokens: int | None) -> None:
        super().__init__(max_calls, max_tokens)
        self.run_id = run_id
        self.limited = max_calls is not None or max_tokens is not None
        usage_for(run_id, max_calls, max_tokens)
        self._rows = RunModelUsage.objects.filter(run_id=run_id)

    def reserve(self) -> bool:
        if not self.limited:
            return super().reserve()
        room = Q()
        if self.max_calls is not None:
            room &= Q(calls__lt=self.max_calls)
        if self.max_tokens is not None:
            room &= Q(tokens__lt=self.max_tokens)
        if self._rows.filter(room).update(calls=F("calls") + 1):
            return True
        self._rows.update(budget_reached=True)
        self._reached = True
        return False

    def charge(self, tokens: int) -> None:
        if not self.limited:
            super().charge(tokens)
        elif tokens > 0:
            self._rows.update(tokens=F("tokens") + int(tokens))

    def refund(self) -> None:
        if not self.limited:
            super().refund()
        else:
            self._rows.filter(calls__gt=0).update(calls=F("calls") - 1)

    def take(self) -> dict[str, Any]:
        """This process's unlimited counts since the last take, as F() updates of the row."""
        if self.limited:
            return {}
        with self._lock:
            calls, tokens = self._calls, self._tokens
            self._calls = self._tokens = 0
        return {"calls": F("calls") + calls, "tokens": F("tokens") + tokens} if calls else {}

    @property
    def reached(self) -> bool:
        if not self.limited:
            return False
        return self._reached or self._rows.filter(budget_reached=True).exists()

    def state(self) -> BudgetState:
        u = self._rows.get()
        return BudgetState(u.calls, u.tokens, u.max_calls, u.max_tokens, u.budget_reached)


class RunStats(CallStats):
    """This process's counts since the last `flush`, which adds them to the run's row."""

    def flush(self, run_id: int, budget: RunBudget | None = None) -> None:
        """Add the counts (and the unlimited budget's, ``budget``) to the run's row: one
        UPDATE, plus a row lock only when there are failure reasons to merge."""
        with self._lock:
            n, reasons = dict(self._n), dict(self.reasons)
            self._n = dict.fromkeys(self.FIELDS, 0)
            self.reasons = {}
        changes: dict[str, Any] = budget.take() if budget is not None else {}
        if n["calls"]:
            changes.update(
                made=F("made") + n["calls"],
                cache_hits=F("cache_hits") + n["cache_hits"],
                cache_misses=F("cache_misses") + n["cache_misses"],
                http_requests=F("http_requests") + n["http_requests"],
                failures=F("failures") + n["failures"],
            )
        if not changes:
            return
        rows = RunModelUsage.objects.filter(run_id=run_id)
        if not reasons:
            rows.update(**changes)
            return
        with transaction.atomic():
            usage = rows.select_for_update().get()
            merged = dict(usage.failure_reasons or {})
            for reason, count in reasons.items():
                merged[reason] = merged.get(reason, 0) + count
            rows.update(failure_reasons=merged, **changes)


def usage_summary(usage: RunModelUsage | None) -> JsonDict | None:
    """What the run page and `audit --json` show of a run's model calls."""
    if usage is None:
        return None
    state = BudgetState(
        usage.calls, usage.tokens, usage.max_calls, usage.max_tokens, usage.budget_reached
    )
    return {
        "calls": usage.made,
        "tokens": usage.tokens,
        "cache_hits": usage.cache_hits,
        "cache_misses": usage.cache_misses,
        "http_requests": usage.http_requests,
        "failures": usage.failures,
        "failure_reasons": usage.failure_reasons or {},
        "max_calls": usage.max_calls,
        "max_tokens": usage.max_tokens,
        "budget_reached": usage.budget_reached,
        "budget_message": state.message(),
    }
