"""A project's model endpoints (where model calls go, with the key encrypted), the
content-addressed cache of requests and responses, and one usage row per run (calls, tokens,
cache hits, failures) that is also the run's budget.

The API key is stored only in `ModelEndpoint.key_encrypted` (Fernet, `auditor.llm.secrets`); it
is in no cache entry, run or record: the cache key is the hash of the request body within its
scope (base URL and project, policies/llm/cache.py) and the key travels only in a header."""

from __future__ import annotations

from django.conf import settings
from django.db import models


class ModelEndpoint(models.Model):
    """An OpenAI-compatible endpoint of one project, configured by its owners: the base URL, the
    default model and the API key — encrypted here (``key_encrypted``), or the name of an
    environment variable the operator allows (``key_env``, one of ``TA_MODEL_KEY_ENVS``), or
    none. Only owners see or change endpoints; no page or answer ever shows the key (at most
    that one is set and its last four characters, ``key_hint``, to owners)."""

    project = models.ForeignKey(
        "traces.Project", on_delete=models.CASCADE, related_name="model_endpoints"
    )
    name = models.CharField(max_length=100)
    base_url = models.CharField(max_length=500)
    model = models.CharField(max_length=200, blank=True, help_text="the default model")
    key_encrypted = models.TextField(blank=True, default="")
    key_hint = models.CharField(max_length=8, blank=True, default="")
    key_env = models.CharField(max_length=100, blank=True, default="")
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ("name",)
        constraints = [
            models.UniqueConstraint(fields=("project", "name"), name="model_endpoint_name_unique")
        ]

    def __str__(self) -> str:
        return f"{self.name} ({self.project_id})"

    def __repr__(self) -> str:  # never the encrypted key either
        return f"<ModelEndpoint {self.pk} {self.name!r} project={self.project_id}>"

    @property
    def key_source(self) -> str:
        """What an owner sees of the key: "stored (…abcd)", "operator variable NAME" or
        "none"."""
        if self.key_encrypted:
            return f"stored (…{self.key_hint})" if self.key_hint else "stored"
        if self.key_env:
            return f"operator variable {self.key_env}"
        return "none"


class ModelCallRecord(models.Model):
    """One cached chat-completions call: ``key`` = SHA-256 of the canonical request body within
    its scope (the endpoint's ``base_url`` and the ``project``; no project when the operator
    shares answers across projects, ``TA_MODEL_CACHE_SHARED``). Decision records reference
    calls by this key (``call.cache_key``)."""

    key = models.CharField(max_length=64, primary_key=True)
    project = models.ForeignKey(
        "traces.Project", on_delete=models.CASCADE, null=True, blank=True, related_name="+"
    )
    base_url = models.CharField(max_length=500, blank=True, default="")
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
