"""Trace storage: projects, uploads, traces and their append-only events."""

from __future__ import annotations

import hashlib
import secrets
from datetime import datetime

from django.conf import settings
from django.db import models
from django.urls import reverse
from django.utils import timezone

from common.jobs import Job
from traces.links import page_url


class ExecutionRefused(PermissionError):
    """Code execution was to be switched on for a project that may not have it (the message
    says why)."""


class Project(models.Model):
    """The tenancy boundary: every upload, trace and token belongs to exactly one project."""

    name = models.CharField(max_length=100, unique=True)
    created_at = models.DateTimeField(auto_now_add=True)
    # Off by default: on, workers run the code candidates of this project's uploads (written by
    # a model, possibly by an attacker) in the sandbox to label them (docs/sandbox.md). Only an
    # owner switches it, and only where `execution_refusal` is None.
    execute_code_candidates = models.BooleanField(
        default=False,
        help_text="run code candidates against their hidden tests in a sandbox (executes "
        "uploaded code, in workers only)",
    )
    # Who made the project (the app's form, the admin, the CLI's own user): code execution is
    # for projects a staff user created. Null for a creator since deleted.
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
    )
    members = models.ManyToManyField(
        settings.AUTH_USER_MODEL, through="Membership", related_name="projects"
    )

    def __str__(self) -> str:
        return self.name

    def save(self, *args, **kwargs):  # type: ignore[no-untyped-def]
        """Refuses (`ExecutionRefused`) to switch code execution on where
        `execution_refusal` says why not — whichever path saves it (page, admin, shell)."""
        if self.execute_code_candidates and self.execution_refusal is not None:
            was_on = (
                self.pk is not None
                and Project.objects.filter(pk=self.pk, execute_code_candidates=True).exists()
            )
            if not was_on:
                raise ExecutionRefused(self.execution_refusal)
        super().save(*args, **kwargs)

    def get_absolute_url(self) -> str:
        return page_url("project", self.pk)

    @property
    def execution_refusal(self) -> str | None:
        """Why this project's code candidates may not be executed, or None when they may: a
        staff user (active) created it, or the operator allows every project
        (``TA_SANDBOX_ALLOW_ALL_PROJECTS``). Any registered user can create a project, so
        execution is not theirs to switch on alone."""
        if settings.TA_SANDBOX_ALLOW_ALL_PROJECTS:
            return None
        creator = self.created_by
        if creator is not None and creator.is_active and (creator.is_staff or creator.is_superuser):
            return None
        return (
            "code execution is available only for projects created by a staff user; an "
            "operator can allow it for every project (TA_SANDBOX_ALLOW_ALL_PROJECTS=1)"
        )


class Membership(models.Model):
    class Role(models.TextChoices):
        OWNER = "owner"
        ANNOTATOR = "annotator"
        VIEWER = "viewer"

    project = models.ForeignKey(Project, on_delete=models.CASCADE)
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE)
    role = models.CharField(max_length=16, choices=Role.choices, default=Role.VIEWER)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["project", "user"], name="membership_unique")
        ]

    def __str__(self) -> str:
        return f"{self.user} in {self.project} as {self.role}"


def _hash_token(raw: str) -> str:
    return hashlib.sha256(raw.encode()).hexdigest()


class ProjectToken(models.Model):
    """A per-project token for agents. Only its SHA-256 is stored; the raw value is shown once,
    at creation. Its scope says what it may do: `upload` (the default — an agent's token sends
    traces and follows its uploads), `read` (reads the project's traces, uploads and exports,
    and changes nothing) or `write` (both, and every other write a token may make)."""

    PREFIX = "ta_"
    # last_used_at is written at most this often: not one UPDATE per API request.
    LAST_USED_RESOLUTION_SECONDS = 60

    class Scope(models.TextChoices):
        UPLOAD = "upload", "upload only"
        READ = "read", "read only"
        WRITE = "write", "upload, read and write"

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="tokens")
    name = models.CharField(max_length=100)
    digest = models.CharField(max_length=64, unique=True)
    hint = models.CharField(max_length=12, help_text="the first characters, to tell tokens apart")
    scope = models.CharField(max_length=8, choices=Scope.choices, default=Scope.UPLOAD)
    created_at = models.DateTimeField(auto_now_add=True)
    expires_at = models.DateTimeField(null=True, blank=True, help_text="none: never expires")
    last_used_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)

    def __str__(self) -> str:
        return f"{self.name} ({self.hint}…)"

    def allows(self, scope: str, *, writes: bool = False) -> bool:
        """Whether the token may use a view of `token_scope` `scope`, by a method that reads
        (GET, HEAD, OPTIONS) or one that `writes`. `write` may all; `read` only reads; `upload`
        only the upload views."""
        if self.scope == self.Scope.WRITE:
            return True
        if self.scope == self.Scope.READ:
            return not writes
        return scope == self.Scope.UPLOAD

    @classmethod
    def issue(
        cls,
        *,
        project: Project,
        name: str,
        scope: str = Scope.UPLOAD,
        expires_at: datetime | None = None,
    ) -> tuple[ProjectToken, str]:
        if scope not in cls.Scope.values:
            raise ValueError(f"unknown token scope {scope!r}; choose one of: {cls.Scope.values}")
        raw = cls.PREFIX + secrets.token_urlsafe(32)
        token = cls.objects.create(
            project=project,
            name=name,
            digest=_hash_token(raw),
            hint=raw[:8],
            scope=scope,
            expires_at=expires_at,
        )
        return token, raw

    @classmethod
    def lookup(cls, raw: str) -> ProjectToken | None:
        """The live token (not revoked, not expired) with this value; its use is recorded."""
        now = timezone.now()
        token = (
            cls.objects.select_related("project")
            .filter(digest=_hash_token(raw), revoked_at__isnull=True)
            .filter(models.Q(expires_at__isnull=True) | models.Q(expires_at__gt=now))
            .first()
        )
        if token is not None and (
            token.last_used_at is None
            or (now - token.last_used_at).total_seconds() >= cls.LAST_USED_RESOLUTION_SECONDS
        ):
            cls.objects.filter(pk=token.pk).update(last_used_at=now)
            token.last_used_at = now
        return token


class Upload(Job):
    class Source(models.TextChoices):
        WEB = "web"
        API = "api"
        CLI = "cli"
        OTLP = "otlp"

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="uploads")
    file = models.FileField(upload_to="uploads/%Y/%m/%d/", max_length=300)
    filename = models.CharField(max_length=255)
    size = models.BigIntegerField()
    content_hash = models.CharField(max_length=64)
    format_requested = models.CharField(max_length=32, default="auto")
    format_detected = models.CharField(max_length=32, blank=True)
    source = models.CharField(max_length=8, choices=Source.choices)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL
    )
    progress = models.FloatField(default=0.0, help_text="0..1")
    attempts = models.PositiveIntegerField(default=0)
    traces_accepted = models.PositiveIntegerField(default=0)
    traces_rejected = models.PositiveIntegerField(default=0)
    events = models.PositiveBigIntegerField(default=0)
    error_count = models.PositiveIntegerField(default=0)
    errors = models.JSONField(default=list, blank=True, help_text="first N line errors")
    warnings = models.JSONField(
        default=list, blank=True, help_text="first N kept-with-repair lines"
    )
    failure = models.TextField(blank=True, help_text="why the whole upload failed, if it did")
    report = models.JSONField(default=dict, blank=True, help_text="importer mapping report")
    # The run this file records: what the uploader said, else what the importer read
    # from the file. Importers put it into their trace ids, so runs of the same tasks coexist.
    run_model = models.CharField(max_length=200, blank=True)
    run_agent = models.CharField(max_length=200, blank=True)
    run_benchmark = models.CharField(max_length=200, blank=True)
    run_label = models.CharField(max_length=200, blank=True)
    # What the uploader stated about the run (model, agent, benchmark, label; blank: read from
    # the file), kept apart from `run_*`, which also hold what was read. `request_key` hashes
    # it with the format asked for: the same bytes under another run or format are a new upload.
    run_stated = models.JSONField(default=dict, blank=True)
    request_key = models.CharField(max_length=64, blank=True)
    # The path the CLI was given (directories name the model in BFCL's layout); `filename`
    # keeps only the last part.
    origin_path = models.CharField(max_length=500, blank=True)
    # A re-imported export: also re-create its decisions and verdicts (an imported audit run).
    with_annotations = models.BooleanField(default=False)
    # An owner took a failed upload off the dashboard's "Needs attention"; the upload, its raw
    # file and its error report stay.
    dismissed = models.BooleanField(default=False)

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [
            # An identical re-upload (same bytes, format and stated run) to the same project is a
            # no-op: the content hash and the request are the key.
            models.UniqueConstraint(
                fields=["project", "content_hash", "request_key"], name="upload_unique_request"
            )
        ]

    def __str__(self) -> str:
        return f"{self.filename} ({self.status})"

    def get_absolute_url(self) -> str:
        return reverse("traces:upload", args=[self.pk])

    @property
    def shown_status(self) -> str:
        """The status a person reads: a finished upload that stored nothing because every trace
        or line was rejected is "failed"; one that rejected some is "done with errors", never a
        green "done" (3 of 4 traces rejected is not a success). The job status stays "done": the
        lifecycle is finished either way."""
        if self.status == self.Status.DONE and (self.traces_rejected or self.error_count):
            return "failed" if self.rejected_all else "done with errors"
        return self.status

    @property
    def rejected_all(self) -> bool:
        """Finished, and every trace or line of the file was rejected: nothing was stored."""
        return (
            self.status == self.Status.DONE
            and not self.traces_accepted
            and bool(self.traces_rejected or self.error_count)
        )

    @property
    def needs_attention(self) -> bool:
        return not self.dismissed and self.shown_status in ("failed", "done with errors")


class Trace(models.Model):
    """One agent trace. Visible only once its upload is done (see selectors)."""

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="traces")
    upload = models.ForeignKey(Upload, on_delete=models.CASCADE, related_name="traces")
    external_id = models.CharField(max_length=255, help_text="the trace_id in the file")
    agent = models.CharField(max_length=200, blank=True, db_index=True)
    model = models.CharField(max_length=200, blank=True, db_index=True)
    benchmark = models.CharField(max_length=200, blank=True, db_index=True)
    category = models.CharField(max_length=200, blank=True, db_index=True)
    task_id = models.CharField(max_length=255, blank=True, db_index=True)
    # The upload's run label, copied so filters and exports need no join.
    run_label = models.CharField(max_length=200, blank=True, db_index=True)
    # The run part of the trace id (agent/model/label, or the upload's own `<file>@<upload>`):
    # with the task, what identifies the trace. Blank for native ids and older uploads.
    run_source = models.CharField(max_length=200, blank=True, db_index=True)
    outcome_success = models.BooleanField(null=True, db_index=True)
    outcome_reward = models.FloatField(null=True)
    header = models.JSONField(default=dict, blank=True)
    event_count = models.PositiveIntegerField(default=0)
    created_at = models.DateTimeField(auto_now_add=True)
    # Timing, tokens and cost from the events' optional fields (traces.totals says how);
    # null where the source gives none, never 0.
    started_at = models.DateTimeField(null=True, blank=True)
    duration_ms = models.FloatField(null=True, blank=True)
    input_tokens = models.BigIntegerField(null=True, blank=True)
    output_tokens = models.BigIntegerField(null=True, blank=True)
    total_tokens = models.BigIntegerField(null=True, blank=True)
    cost_usd = models.FloatField(null=True, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["project", "external_id"], name="trace_unique_id")
        ]
        # A project's newest (and oldest) trace id in one index lookup: the traces list bounds
        # its newest-first scan of the primary key with it, which otherwise walks every newer
        # trace of other projects first (auditor.trace_list.selectors.trace_page).
        indexes = [
            models.Index(fields=["project", "id"], name="trace_project_id"),
            # The list's trace-id search, exact or by prefix (LIKE 'abc%'): the unique
            # constraint's index cannot serve a LIKE; the pattern operator class can.
            models.Index(
                fields=["project", "external_id"],
                name="trace_project_external",
                opclasses=["int8_ops", "varchar_pattern_ops"],
            ),
            # The list's date range on when traces were added.
            models.Index(fields=["project", "created_at"], name="trace_project_created"),
        ]

    def __str__(self) -> str:
        return self.external_id

    def get_absolute_url(self) -> str:
        return page_url("trace", self.pk)


class Event(models.Model):
    """One line of a trace. Append-only: never updated after insert (the payload is the event
    exactly as uploaded, unknown fields included). Hot columns are copies for filtering."""

    # No database-level foreign key: its per-row check at commit costs a large share of ingest
    # throughput (bench/ingest.py measures it). Integrity holds by
    # construction — events are written only by traces.store, which inserts their Trace rows in
    # the same transaction and deletes the events of traces it drops — and deletes still
    # cascade through the ORM.
    trace = models.ForeignKey(
        Trace, on_delete=models.CASCADE, related_name="event_set", db_constraint=False
    )
    seq = models.PositiveIntegerField()
    type = models.CharField(max_length=40)
    turn = models.IntegerField(null=True)
    role = models.CharField(max_length=20, blank=True)
    name = models.CharField(max_length=200, blank=True, help_text="tool name for tool calls")
    call_id = models.CharField(max_length=200, blank=True)
    status = models.CharField(max_length=20, blank=True)
    line = models.PositiveIntegerField(help_text="line (or record) number in the uploaded file")
    payload = models.JSONField()

    class Meta:
        constraints = [models.UniqueConstraint(fields=["trace", "seq"], name="event_unique_seq")]
        indexes = [models.Index(fields=["trace", "type"], name="event_trace_type")]

    def __str__(self) -> str:
        return f"{self.type} #{self.seq}"

    def save(self, *args, **kwargs):  # type: ignore[no-untyped-def]
        if self.pk is not None and not kwargs.get("force_insert"):
            raise ValueError("events are append-only")
        super().save(*args, **kwargs)


# The OTLP receiver's span buffer: a model of this app, kept in its own module.
from traces.otlp_receiver.models import OtlpSpan  # noqa: E402, F401
