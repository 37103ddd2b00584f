"""Audit runs: runs of the guard policies over a project's traces, their per-trace work items
and results, and VRR calibrations."""

from __future__ import annotations

from typing import Any

from django.conf import settings as django_settings
from django.db import models
from django.urls import reverse
from django.utils import timezone

from common.jobs import Job
from traces.models import Event, Project, Trace

__all__ = ["DECISION_FIELDS", "AuditItem", "AuditResult", "AuditRun", "Calibration"]

# A policy's decision as AuditResult stores it: the keys of policies' PolicyResult.to_dict()
# that are columns here (besides guarded_trajectory and guarded_from, which only the trace page
# and annotation read, through AuditResult.full_trajectory). Written
# once: storing results, the run tables, annotation queues and exports all read this list.
DECISION_FIELDS = (
    "applied",
    "actor_success",
    "guarded_success",
    "transition",
    "continuation",
    "record",
)


class AuditRun(Job):
    """One audit of a project's traces under a fixed set of policies and settings. Every
    setting is stored, so two runs with different settings can be compared side by side."""

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="audit_runs")
    label = models.CharField(max_length=200, blank=True)
    policies = models.JSONField(help_text="policy names, in order")
    settings = models.JSONField(default=dict, blank=True, help_text="per-policy settings")
    judge = models.CharField(max_length=20, default="heuristic")
    # policies.llm.run.LLMSettings.to_dict(); {} = no model. Names the key's environment
    # variable, never the key (auditor/llm/settings.py refuses one).
    model_settings = models.JSONField(default=dict, blank=True)
    environment = models.CharField(max_length=20, default="auto")
    trace_filter = models.JSONField(default=dict, blank=True)
    traces_total = models.PositiveIntegerField(default=0)
    traces_done = models.PositiveIntegerField(default=0)
    error_count = models.PositiveIntegerField(default=0)
    summary = models.JSONField(default=dict, blank=True, help_text="run-level tables per policy")
    timings = models.JSONField(default=dict, blank=True)
    # When the start stored the run's VRR calibration (or found none was needed). Until then no
    # trace with verification votes is audited: the start queues the other traces' chunks
    # first, and a run whose start died calibrating is calibrated again by the sweep.
    calibrated_at = models.DateTimeField(null=True, blank=True)
    failure = models.TextField(blank=True)
    # Failures of the run's chunks in a row with one reason (`auditor.runs.stalls`): at
    # TA_AUDIT_MAX_FAILURES the run fails with that reason instead of being queued again.
    stall_count = models.PositiveIntegerField(default=0)
    stall_reason = models.TextField(blank=True)
    # traces_done when the sweep last resumed the run: no progress since is a stall too.
    resumed_at_done = models.PositiveIntegerField(null=True, blank=True)
    created_by = models.ForeignKey(
        django_settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL
    )

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return f"run #{self.pk} ({self.status})"

    def get_absolute_url(self) -> str:
        return reverse("auditor:run", args=[self.pk])

    @property
    def progress(self) -> float:
        return self.traces_done / self.traces_total if self.traces_total else 1.0

    @property
    def eta(self) -> str:
        """Time left at the rate so far ("" until a trace is done or once finished): long runs
        say how long they will take."""
        if self.is_finished or not self.started_at or not self.traces_done:
            return ""
        left = self.traces_total - self.traces_done
        if left <= 0:
            return ""
        elapsed = (timezone.now() - self.started_at).total_seconds()
        seconds = round(elapsed / self.traces_done * left)
        if seconds < 120:
            return f"about {seconds} s left"
        if seconds < 7200:
            return f"about {round(seconds / 60)} min left"
        return f"about {seconds / 3600:.1f} h left"


class AuditItem(models.Model):
    """The unit of work: one trace of one run. Its status makes the fan-out idempotent and
    lets a crashed or failed trace be found and retried."""

    class Status(models.TextChoices):
        PENDING = "pending"
        DONE = "done"
        ERROR = "error"

    run = models.ForeignKey(AuditRun, on_delete=models.CASCADE, related_name="items")
    trace = models.ForeignKey(Trace, on_delete=models.CASCADE, related_name="audit_items")
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.PENDING)
    error = models.TextField(blank=True)
    attempts = models.PositiveIntegerField(default=0)
    seconds = models.FloatField(null=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["run", "trace"], name="item_unique")]
        indexes = [models.Index(fields=["run", "status"], name="item_run_status")]

    def __str__(self) -> str:
        return f"run {self.run_id} trace {self.trace_id}: {self.status}"


class AuditResult(models.Model):
    """One policy's decision on one trace of one run (SPEC §5.5 transitions)."""

    class Transition(models.TextChoices):
        RESCUE = "rescue"
        HARM = "harm"
        SAME = "same"
        UNKNOWN = "unknown"
        # The policy had no decision point or lacked its evidence (policies.transitions).
        NOT_APPLICABLE = "not_applicable"

    # No index of its own: result_unique (run, trace, policy) leads with the run, and every
    # result written paid for the second copy.
    run = models.ForeignKey(
        AuditRun, on_delete=models.CASCADE, related_name="results", db_index=False
    )
    trace = models.ForeignKey(Trace, on_delete=models.CASCADE, related_name="audit_results")
    policy = models.CharField(max_length=20)
    applied = models.BooleanField()
    actor_success = models.BooleanField(null=True)
    guarded_success = models.BooleanField(null=True)
    transition = models.CharField(max_length=16, choices=Transition.choices)
    continuation = models.CharField(max_length=12)
    record = models.JSONField()
    # The guarded trajectory from index guarded_from on (`full_trajectory` rebuilds the whole
    # from the trace's events; auditor.runs.store.split_trajectory cuts it). Both NULL: the
    # guarded trajectory is the actor's.
    guarded_trajectory = models.JSONField(null=True, blank=True)
    guarded_from = models.PositiveIntegerField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            # Idempotency: a redelivered or re-run chunk can never add a second result.
            models.UniqueConstraint(fields=["run", "trace", "policy"], name="result_unique")
        ]
        indexes = [
            models.Index(fields=["run", "policy", "transition"], name="result_run_transition")
        ]

    def __str__(self) -> str:
        return f"{self.policy} on trace {self.trace_id}: {self.transition}"

    def full_trajectory(self, events: list[Any] | None = None) -> list[Any] | None:
        """The whole guarded trajectory (None when it is the actor's): the trace's first
        ``guarded_from`` events, then the stored suffix. ``events``: the trace's event payloads
        in order, if the caller holds them already (else one query reads the prefix)."""
        suffix = self.guarded_trajectory
        if suffix is None:
            return None
        start = self.guarded_from or 0
        if not start:
            return list(suffix)
        if events is None:
            events = list(
                Event.objects.filter(trace_id=self.trace_id)
                .order_by("seq")
                .values_list("payload", flat=True)[:start]
            )
        return [*events[:start], *suffix]


class Calibration(models.Model):
    """VRR noise parameters of one (model, verifier) group, estimated from a run's traces."""

    run = models.ForeignKey(AuditRun, on_delete=models.CASCADE, related_name="calibrations")
    model = models.CharField(max_length=200, blank=True)
    verifier = models.CharField(max_length=200, blank=True)
    traces = models.PositiveIntegerField()
    observations = models.PositiveIntegerField()
    params = models.JSONField(help_text="rho0, rho1, alpha, beta, prior, J and intervals")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["run", "model", "verifier"], name="calibration_unique")
        ]

    def __str__(self) -> str:
        return f"{self.model or '-'} / {self.verifier or '-'}"


class ExecutionResult(models.Model):
    """A code candidate's run against its hidden tests in the sandbox, passed or failed, by its
    key (`policies.sandbox.code_tests.program_key`: the program, the sandbox's limits and code, the
    interpreter), so that a later calibration in the project does not run it again
    (`auditor.runs.execution_store`). Kept per project: a project's labels come only from its
    own executions, and go with it."""

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="+", db_index=False)
    key = models.CharField(max_length=64)
    passed = models.BooleanField()
    detail = models.TextField(blank=True)  # the label's detail
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["project", "key"], name="execution_result_unique")
        ]

    def __str__(self) -> str:
        return f"{self.key[:12]} {'passed' if self.passed else 'failed'}"
