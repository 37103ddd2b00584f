"""Model calls shared by every worker: the content-addressed cache of requests and responses,
and one usage row per run (calls, tokens, cache hits, failures) that is also the run's budget.

The API key is in neither: the cache key is the hash of the request body and the key travels
only in a header (policies/llm/cache.py)."""

from __future__ import annotations

from django.db import models


class ModelCallRecord(models.Model):
    """One cached chat-completions call: ``key`` = SHA-256 of the canonical request body.
    Decision records reference calls by this key (``call.cache_key``)."""

    key = models.CharField(max_length=64, primary_key=True)
    model = models.CharField(max_length=200, blank=True)
    request = models.JSONField()
    response = models.JSONField()
    created_at = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return f"{self.model} {self.key[:12]}"


class RunModelUsage(models.Model):
    """What one run's model calls used, counted across worker processes by conditional and
    F() updates (never read-modify-write), so the budget holds however many workers share it."""

    run = models.OneToOneField(
        "auditor.AuditRun", on_delete=models.CASCADE, related_name="model_usage", primary_key=True
    )
    max_calls = models.PositiveIntegerField(null=True)
    max_tokens = models.PositiveBigIntegerField(null=True)
    calls = models.PositiveIntegerField(default=0, help_text="budget: calls reserved")
    tokens = models.PositiveBigIntegerField(default=0, help_text="budget: tokens charged")
    budget_reached = models.BooleanField(default=False)
    # Statistics (policies.llm.client.CallStats fields), flushed by each worker.
    made = models.PositiveIntegerField(default=0, help_text="calls asked of the client")
    cache_hits = models.PositiveIntegerField(default=0)
    cache_misses = models.PositiveIntegerField(default=0)
    http_requests = models.PositiveIntegerField(default=0)
    failures = models.PositiveIntegerField(default=0)
    failure_reasons = models.JSONField(default=dict, blank=True)

    def __str__(self) -> str:
        return f"run {self.run_id}: {self.calls} calls, {self.tokens} tokens"
