"""Audit runs: create, fan out over traces in chunks, audit each trace with the policies
library, and summarise. Tasks call these; they are idempotent and safe to run twice."""

from __future__ import annotations

import logging
import time
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from datetime import timedelta
from typing import Any

import orjson
from django.conf import settings as django_settings
from django.db import transaction
from django.db.models import Count, F, Q
from django.utils import timezone

from auditor.models import AuditItem, AuditResult, AuditRun, Calibration
from policies import POLICIES, Auditor
from policies.jsonsafe import json_safe
from policies.report import summarise_run
from policies.trace import Trace as PTrace
from policies.vrr_calibration import calibrate, observations_from_traces
from traces.models import Event, Project, Trace, Upload
from traces.selectors import load_events

log = logging.getLogger(__name__)

JUDGES = ("heuristic", "recorded", "openai")
ENVIRONMENTS = ("auto", "none", "bfcl")
FILTER_FIELDS = ("model", "benchmark", "category", "agent", "upload")


class AuditRejected(Exception):
    """The run cannot be created as asked (unknown policy, bad setting)."""


# --- creating ------------------------------------------------------------------------------


def parse_set_options(pairs: Iterable[str]) -> tuple[dict[str, dict[str, Any]], dict[str, str]]:
    """`--set policy.key=value` → per-policy settings; `--set judge=…`/`environment=…` → run
    options. Values are read as JSON when they parse (numbers, booleans, lists), else text."""
    per_policy: dict[str, dict[str, Any]] = {}
    options: dict[str, str] = {}
    for pair in pairs:
        key, sep, raw = pair.partition("=")
        if not sep or not key:
            raise AuditRejected(f"--set {pair!r}: expected KEY=VALUE")
        try:
            value: Any = orjson.loads(raw)
        except orjson.JSONDecodeError:
            value = raw
        if "." in key:
            policy, _, field = key.partition(".")
            if policy not in POLICIES:
                raise AuditRejected(f"--set {pair!r}: unknown policy {policy!r}")
            per_policy.setdefault(policy, {})[field] = value
        elif key in ("judge", "environment", "label"):
            options[key] = str(value)
        elif key in FILTER_FIELDS:
            options[f"filter.{key}"] = str(value)
        else:
            raise AuditRejected(
                f"--set {pair!r}: expected POLICY.SETTING=VALUE, judge=, environment=, label= "
                f"or a filter ({', '.join(FILTER_FIELDS)})"
            )
    return per_policy, options


def audit_run_create(
    *,
    project: Project,
    policies: Sequence[str] = POLICIES,
    settings: Mapping[str, Mapping[str, Any]] | None = None,
    judge: str = "heuristic",
    environment: str = "auto",
    trace_filter: Mapping[str, Any] | None = None,
    label: str = "",
    user=None,  # type: ignore[no-untyped-def]
    enqueue: bool = True,
) -> AuditRun:
    policies = list(dict.fromkeys(policies))
    unknown = [p for p in policies if p not in POLICIES]
    if unknown or not policies:
        raise AuditRejected(f"unknown policies {unknown}; choose from {', '.join(POLICIES)}")
    if judge not in JUDGES:
        raise AuditRejected(f"unknown judge {judge!r}; choose from {', '.join(JUDGES)}")
    if environment not in ENVIRONMENTS:
        raise AuditRejected(
            f"unknown environment {environment!r}; choose from {', '.join(ENVIRONMENTS)}"
        )
    settings = {k: dict(v) for k, v in (settings or {}).items()}
    try:  # fail now, with the library's message, rather than in every worker
        Auditor(policies, settings, judge, None, _judge_options(judge))
    except (ValueError, TypeError) as exc:
        raise AuditRejected(f"invalid settings: {exc}") from exc
    trace_filter = {k: v for k, v in (trace_filter or {}).items() if k in FILTER_FIELDS and v}
    run = AuditRun.objects.create(
        project=project,
        policies=policies,
        settings=settings,
        judge=judge,
        environment=environment,
        trace_filter=trace_filter,
        label=label[:200],
        created_by=user if getattr(user, "pk", None) is not None else None,
    )
    if enqueue:
        transaction.on_commit(lambda: _enqueue_start(run.pk))
    return run


def _judge_options(judge: str) -> dict[str, Any]:
    if judge != "openai":
        return {}
    return {
        "base_url": django_settings.TA_JUDGE_BASE_URL,
        "model": django_settings.TA_JUDGE_MODEL,
        "api_key": django_settings.TA_JUDGE_API_KEY,
        "timeout": django_settings.TA_JUDGE_TIMEOUT,
    }


def _enqueue_start(run_id: int) -> None:
    from auditor.tasks import start_run

    try:
        start_run.delay(run_id)
    except Exception:  # noqa: BLE001 — an unreachable broker; the sweep starts it later
        log.warning(
            "broker unavailable: run %s stays pending until the sweep", run_id, exc_info=True
        )


def _enqueue_chunks(run: AuditRun, trace_ids: list[int]) -> int:
    from auditor.tasks import audit_chunk

    size = django_settings.TA_AUDIT_CHUNK_TRACES
    chunks = [trace_ids[i : i + size] for i in range(0, len(trace_ids), size)]
    for chunk in chunks:
        audit_chunk.delay(run.pk, chunk)
    return len(chunks)


# --- starting --------------------------------------------------------------------------------


def run_traces(run: AuditRun):  # type: ignore[no-untyped-def]
    """The traces a run covers: the project's visible traces, narrowed by its filter."""
    qs = Trace.objects.filter(project=run.project, upload__status=Upload.Status.DONE)
    for key, value in run.trace_filter.items():
        qs = qs.filter(**{("upload_id" if key == "upload" else key): value})
    return qs


def audit_run_start(*, run_id: int, inline: bool = False) -> AuditRun | None:
    """Claim the run, create one item per trace, calibrate VRR, and queue the chunks (or, inline,
    process them here). Idempotent: a second call finds the run already claimed."""
    now = timezone.now()
    if not AuditRun.objects.filter(pk=run_id, status=AuditRun.Status.PENDING).update(
        status=AuditRun.Status.RUNNING, started_at=now, heartbeat_at=now
    ):
        return None
    run = AuditRun.objects.select_related("project").get(pk=run_id)
    t0 = time.perf_counter()
    ids = list(run_traces(run).order_by("id").values_list("id", flat=True))
    AuditItem.objects.bulk_create(
        [AuditItem(run=run, trace_id=i) for i in ids], ignore_conflicts=True, batch_size=5000
    )
    AuditRun.objects.filter(pk=run.pk).update(traces_total=len(ids))
    if "vrr" in run.policies and not run.settings.get("vrr", {}).get("params"):
        _calibrate(run, ids)
    run.timings = {"prepare_s": round(time.perf_counter() - t0, 3)}
    AuditRun.objects.filter(pk=run.pk).update(timings=run.timings)
    if not ids:
        _finish_if_complete(run.pk)
    elif inline:
        audit_chunk_process(run_id=run.pk, trace_ids=ids)
    else:
        transaction.on_commit(lambda: _enqueue_chunks(run, ids))
    run.refresh_from_db()
    return run


def _verifier(events: list[dict]) -> str:
    for ev in events:
        if ev.get("type") == "verification":
            v = ev.get("verifier")
            return v if isinstance(v, str) else ""
    return ""


def _calibrate(run: AuditRun, trace_ids: list[int]) -> None:
    """VRR noise parameters per (model, verifier) group, from the run's traces that hold
    verification votes (SPEC §5.3 calibration)."""
    with_votes = list(
        Event.objects.filter(trace_id__in=trace_ids, type="verification")
        .values_list("trace_id", flat=True)
        .distinct()
    )
    groups: dict[tuple[str, str], list[PTrace]] = defaultdict(list)
    models = dict(Trace.objects.filter(pk__in=with_votes).values_list("pk", "model"))
    for start in range(0, len(with_votes), 500):
        part = with_votes[start : start + 500]
        for tid, events in load_events(part).items():
            groups[(models.get(tid) or "", _verifier(events))].append(PTrace.from_events(events))
    for (model, verifier), traces in groups.items():
        obs, transitions = observations_from_traces(traces)
        if not obs:
            continue
        cal = calibrate(obs, transitions, n_boot=django_settings.TA_CALIBRATION_BOOTSTRAP, seed=0)
        # NaN (an unidentified α, β) becomes null: jsonb, and JSON itself, have no NaN.
        params = json_safe({**cal.to_dict(), "samples": [s.to_dict() for s in cal.samples]})
        Calibration.objects.update_or_create(
            run=run,
            model=model,
            verifier=verifier,
            defaults={"traces": len(traces), "observations": cal.n_observations, "params": params},
        )


# --- the work ------------------------------------------------------------------------------


class _AuditorCache:
    """One `Auditor` per (environment kind, calibration group), built on first use."""

    def __init__(self, run: AuditRun) -> None:
        self.run = run
        self.options = _judge_options(run.judge)
        self.cals = {(c.model, c.verifier): c.params for c in Calibration.objects.filter(run=run)}
        self.cache: dict[tuple, Auditor] = {}

    def for_trace(self, header: dict, model: str, events: list[dict]) -> Auditor:
        env_kind = self._env_kind(header)
        group = (model, _verifier(events)) if "vrr" in self.run.policies else ("", "")
        key = (env_kind, group if group in self.cals else None)
        auditor = self.cache.get(key)
        if auditor is None:
            settings = {k: dict(v) for k, v in self.run.settings.items()}
            cal = self.cals.get(group)
            if cal is not None and not settings.get("vrr", {}).get("params"):
                settings.setdefault("vrr", {}).update(params=cal["params"], samples=cal["samples"])
            auditor = Auditor(
                self.run.policies,
                settings,
                self.run.judge,
                self._environment(env_kind),
                self.options,
            )
            self.cache[key] = auditor
        return auditor

    def _env_kind(self, header: dict) -> str:
        mode = self.run.environment
        if mode == "none":
            return "none"
        env = header.get("env") if isinstance(header.get("env"), dict) else {}
        name = str(env.get("name") or "").lower()
        if mode == "bfcl" or (mode == "auto" and name.startswith("bfcl")):
            return "bfcl" if name.startswith("bfcl") else "none"
        return "none"

    @staticmethod
    def _environment(kind: str):  # type: ignore[no-untyped-def]
        if kind == "bfcl":
            from policies.env_bfcl import BFCLEnvironment

            return BFCLEnvironment()
        return None


def audit_chunk_process(*, run_id: int, trace_ids: Sequence[int]) -> int:
    """Audit the still-pending traces among `trace_ids`. Safe to run twice, or at the same
    time as a redelivered copy: results are keyed (run, trace, policy) and inserted with
    ignore_conflicts, and an item is marked done only with its results."""
    run = AuditRun.objects.filter(pk=run_id).first()
    if run is None or run.status != AuditRun.Status.RUNNING:
        return 0
    pending = list(
        AuditItem.objects.filter(
            run=run, trace_id__in=trace_ids, status=AuditItem.Status.PENDING
        ).values_list("trace_id", flat=True)
    )
    if not pending:
        _finish_if_complete(run.pk)
        return 0
    traces = {t.pk: t for t in Trace.objects.filter(pk__in=pending).only("pk", "model", "header")}
    auditors = _AuditorCache(run)
    done = 0
    batch_size = 50
    for start in range(0, len(pending), batch_size):
        part = pending[start : start + batch_size]
        events_by_trace = load_events(part)
        _audit_batch(run, [traces[t] for t in part], events_by_trace, auditors)
        done += len(part)
        AuditRun.objects.filter(pk=run.pk).update(
            heartbeat_at=timezone.now(),
            traces_done=AuditItem.objects.filter(run=run)
            .exclude(status=AuditItem.Status.PENDING)
            .count(),
        )
    _finish_if_complete(run.pk)
    return done


def _audit_batch(
    run: AuditRun,
    traces: list[Trace],
    events_by_trace: dict[int, list[dict]],
    auditors: _AuditorCache,
) -> None:
    """Audit a batch of traces and store their results in one transaction (one insert, one
    update), so the database round trips do not dominate the policies' own work."""
    rows: list[AuditResult] = []
    done: list[int] = []
    failed: list[tuple[int, str]] = []
    for trace in traces:
        events = events_by_trace[trace.pk]
        try:
            auditor = auditors.for_trace(trace.header or {}, trace.model, events)
            results = auditor.audit(events)
        except Exception as exc:  # noqa: BLE001 — a bad trace must not stop the run
            log.exception("audit of trace %s in run %s failed", trace.pk, run.pk)
            failed.append((trace.pk, f"{type(exc).__name__}: {exc}"[:4000]))
            continue
        for name, res in results.items():
            d = res.to_dict()
            rows.append(
                AuditResult(
                    run=run,
                    trace=trace,
                    policy=name,
                    applied=d["applied"],
                    actor_success=d["actor_success"],
                    guarded_success=d["guarded_success"],
                    transition=d["transition"],
                    continuation=d["continuation"],
                    record=d["record"],
                    guarded_trajectory=d["guarded_trajectory"],
                )
            )
        done.append(trace.pk)
    pending = AuditItem.objects.filter(run=run, status=AuditItem.Status.PENDING)
    with transaction.atomic():
        AuditResult.objects.bulk_create(rows, ignore_conflicts=True, batch_size=500)
        pending.filter(trace_id__in=done).update(
            status=AuditItem.Status.DONE, error="", attempts=F("attempts") + 1
        )
        for trace_id, error in failed:
            pending.filter(trace_id=trace_id).update(
                status=AuditItem.Status.ERROR, error=error, attempts=F("attempts") + 1
            )


def _finish_if_complete(run_id: int) -> bool:
    """Mark the run done once no item is pending — exactly once, by a conditional update —
    and compute its run-level tables."""
    if AuditItem.objects.filter(run_id=run_id, status=AuditItem.Status.PENDING).exists():
        return False
    counts = AuditItem.objects.filter(run_id=run_id).aggregate(
        done=Count("id", filter=~Q(status=AuditItem.Status.PENDING)),
        errors=Count("id", filter=Q(status=AuditItem.Status.ERROR)),
    )
    summary = audit_run_summary(AuditRun.objects.get(pk=run_id))
    now = timezone.now()
    return bool(
        AuditRun.objects.filter(pk=run_id, status=AuditRun.Status.RUNNING).update(
            status=AuditRun.Status.DONE,
            finished_at=now,
            heartbeat_at=now,
            summary=summary,
            traces_done=counts["done"],
            error_count=counts["errors"],
        )
    )


def audit_run_summary(run: AuditRun) -> dict[str, Any]:
    """Run-level tables per policy (the TwinCheck paper's Tables 1–2 and each policy's own
    metrics), from the stored results."""
    categories = dict(Trace.objects.filter(audit_items__run=run).values_list("pk", "category"))
    out: dict[str, Any] = {}
    for policy in run.policies:
        rows = list(
            AuditResult.objects.filter(run=run, policy=policy)
            .order_by("trace_id")
            .values(
                "trace_id",
                "applied",
                "actor_success",
                "guarded_success",
                "transition",
                "continuation",
                "record",
            )
        )
        if not rows:
            out[policy] = {"n": 0}
            continue
        results = [{**r, "policy": policy, "guarded_trajectory": None} for r in rows]
        cats = [categories.get(r["trace_id"]) or "—" for r in rows]
        out[policy] = summarise_run(results, cats, n_boot=django_settings.TA_SUMMARY_BOOTSTRAP)
    return out


# --- retrying and resuming -------------------------------------------------------------------


def audit_run_retry_errors(*, run: AuditRun) -> int:
    """Queue the traces that failed again; the run goes back to running until they are done."""
    ids = list(run.items.filter(status=AuditItem.Status.ERROR).values_list("trace_id", flat=True))
    if not ids:
        return 0
    with transaction.atomic():
        AuditItem.objects.filter(run=run, trace_id__in=ids).update(
            status=AuditItem.Status.PENDING, error=""
        )
        AuditRun.objects.filter(pk=run.pk).update(
            status=AuditRun.Status.RUNNING, finished_at=None, heartbeat_at=timezone.now()
        )
        transaction.on_commit(lambda: _enqueue_chunks(run, ids))
    return len(ids)


def audit_runs_resume_stale(*, older_than: float | None = None) -> list[int]:
    """Queue the pending traces of running runs nobody has reported on for a while — after a
    worker was killed — and start runs still pending (their start message was lost while the
    broker was down). Duplicated work is harmless (results are idempotent)."""
    if older_than is None:
        older_than = django_settings.TA_STALE_SECONDS
    cutoff = timezone.now() - timedelta(seconds=older_than)
    for run_id in AuditRun.objects.filter(
        status=AuditRun.Status.PENDING, created_at__lt=cutoff
    ).values_list("pk", flat=True):
        _enqueue_start(run_id)
    resumed = []
    for run in AuditRun.objects.filter(status=AuditRun.Status.RUNNING, heartbeat_at__lt=cutoff):
        if not AuditRun.objects.filter(pk=run.pk, heartbeat_at__lt=cutoff).update(
            heartbeat_at=timezone.now()
        ):
            continue  # another worker resumed it first
        ids = list(
            run.items.filter(status=AuditItem.Status.PENDING).values_list("trace_id", flat=True)
        )
        if ids:
            _enqueue_chunks(run, ids)
        else:
            _finish_if_complete(run.pk)
        resumed.append(run.pk)
    return resumed


def audit_run_counts(run: AuditRun) -> dict[str, Any]:
    """The CLI's `--json` view of a finished run."""
    per_policy: dict[str, Any] = {}
    rows = (
        AuditResult.objects.filter(run=run)
        .values("policy")
        .annotate(
            n=Count("id"),
            applied=Count("id", filter=Q(applied=True)),
            actor_success=Count("id", filter=Q(actor_success=True)),
            guarded_success=Count("id", filter=Q(guarded_success=True)),
            rescue=Count("id", filter=Q(transition="rescue")),
            harm=Count("id", filter=Q(transition="harm")),
            same=Count("id", filter=Q(transition="same")),
            unknown=Count("id", filter=Q(transition="unknown")),
        )
    )
    for r in rows:
        policy = r.pop("policy")
        per_policy[policy] = r
    for policy in run.policies:
        per_policy.setdefault(
            policy,
            {
                "n": 0,
                "applied": 0,
                "actor_success": 0,
                "guarded_success": 0,
                "rescue": 0,
                "harm": 0,
                "same": 0,
                "unknown": 0,
            },
        )
        overall = ((run.summary or {}).get(policy) or {}).get("overall")
        if overall:  # Δ with its CI and the McNemar test, from the run-level tables
            per_policy[policy]["overall"] = overall
    return {
        "run": run.pk,
        "status": run.status,
        "traces": run.traces_total,
        "errors": run.error_count,
        "policies": per_policy,
    }
