"""Audit runs: create, start (claim, one item per trace, calibrate, queue the chunks), retry the
failed traces, and resume what a killed worker left. Tasks call these; they are idempotent and
safe to run twice. The per-trace work is in `work`, the run-level tables in `summary`."""

from __future__ import annotations

import time
from array import array
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import orjson
from django.db import connection, transaction
from django.db.models import F
from django.db.models.functions import Greatest
from django.utils import timezone

from auditor.llm.settings import check_judge_and_model, normalise_judge
from auditor.runs import stalls
from auditor.runs.calibration import ID_PART, needs_calibration, run_calibrate
from auditor.runs.models import AuditItem, AuditRun
from auditor.runs.queueing import enqueue_calibrate, enqueue_chunks, execution_queue
from auditor.runs.run_inputs import AuditRejected, checked_inputs
from auditor.runs.work import Progress, audit_chunk_process, finish_if_complete
from common.jobs import job_claim, job_enqueue, stale_cutoff, stale_pending, stale_running
from policies import POLICIES, Auditor
from traces.models import Project, Trace, Upload
from traces.selectors import analyze_if_never_analyzed

ENVIRONMENTS = ("auto", "none", "bfcl")
FILTER_FIELDS = ("model", "benchmark", "category", "agent", "upload")


# --- creating ------------------------------------------------------------------------------


def parse_set_options(pairs: Iterable[str]) -> tuple[dict[str, dict[str, Any]], dict[str, Any]]:
    """`--set policy.key=value` → per-policy settings; `--set judge=…`/`environment=…` → run
    options; `--set model.FIELD=…` → the model endpoint's other fields (``model.FIELD`` in the
    options). Values are read as JSON when they parse (numbers, booleans, lists), else text."""
    per_policy: dict[str, dict[str, Any]] = {}
    options: dict[str, Any] = {}
    for pair in pairs:
        key, sep, raw = pair.partition("=")
        if not sep or not key:
            raise AuditRejected(f"--set {pair!r}: expected KEY=VALUE")
        try:
            value: Any = orjson.loads(raw)
        except orjson.JSONDecodeError:
            value = raw
        if key.startswith("model.") and len(key) > 6:
            options[key] = value
        elif "." in key:
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
                f"--set {pair!r}: expected POLICY.SETTING=VALUE, model.FIELD=VALUE, judge=, "
                f"environment=, label= or a filter ({', '.join(FILTER_FIELDS)})"
            )
    return per_policy, options


def audit_run_create(
    *,
    project: Project,
    policies: Sequence[str] = POLICIES,
    settings: Mapping[str, Mapping[str, Any]] | None = None,
    judge: str = "heuristic",
    model_settings: Mapping[str, Any] | None = None,
    environment: str = "auto",
    trace_filter: Mapping[str, Any] | None = None,
    label: str = "",
    user=None,  # type: ignore[no-untyped-def]
    enqueue: bool = True,
) -> AuditRun:
    policies = list(dict.fromkeys(policies))
    unknown = [p for p in policies if p not in POLICIES]
    if unknown or not policies:
        raise AuditRejected(
            f"unknown policies {unknown}; choose from {', '.join(POLICIES)}", field="policies"
        )
    model_settings = dict(model_settings or {})
    try:
        judge = normalise_judge(judge)
        check_judge_and_model(judge, model_settings)
    except ValueError as exc:
        raise AuditRejected(str(exc), field="judge") from exc
    if environment not in ENVIRONMENTS:
        raise AuditRejected(
            f"unknown environment {ascii(environment[:60])}; choose from {', '.join(ENVIRONMENTS)}",
            field="environment",
        )
    settings = checked_inputs(settings, label=label, trace_filter=trace_filter)
    try:  # fail now, with the library's message, rather than in every worker
        # The llm judge is built by the worker from the model settings (checked above).
        Auditor(policies, settings, "heuristic" if judge == "llm" else judge)
    except (ValueError, TypeError) as exc:
        raise AuditRejected(f"invalid settings: {exc}") from exc
    trace_filter = {k: v for k, v in (trace_filter or {}).items() if k in FILTER_FIELDS and v}
    run = AuditRun.objects.create(
        project=project,
        policies=policies,
        settings=settings,
        judge=judge,
        model_settings=model_settings,
        environment=environment,
        trace_filter=trace_filter,
        label=label[:200],
        created_by=user if getattr(user, "pk", None) is not None else None,
    )
    if enqueue:
        transaction.on_commit(lambda: _enqueue_start(run.pk))
    return run


def _enqueue_start(run_id: int) -> None:
    # In the function: auditor.runs.tasks imports this module (its task calls audit_run_start).
    from auditor.runs.tasks import start_run

    job_enqueue(start_run, run_id, queue=execution_queue(run_id))


# --- starting --------------------------------------------------------------------------------


def run_traces(run: AuditRun):  # type: ignore[no-untyped-def]
    """The traces a run covers: the project's visible traces, narrowed by its filter."""
    qs = Trace.objects.filter(project=run.project, upload__status=Upload.Status.DONE)
    for key, value in run.trace_filter.items():
        qs = qs.filter(**{("upload_id" if key == "upload" else key): value})
    return qs


def audit_run_start(
    *, run_id: int, inline: bool = False, progress: Progress | None = None
) -> AuditRun | None:
    """Claim the run, create one item per trace, calibrate VRR, and queue the chunks (or, inline,
    process them here, calling ``progress(done, total)`` after each batch). Idempotent: a
    second call finds the run claimed."""
    if not job_claim(AuditRun, run_id):
        return None
    run = AuditRun.objects.select_related("project").get(pk=run_id)
    t0 = time.perf_counter()
    analyze_if_never_analyzed()
    ids = _run_ids(run)
    _store_items(run, ids)
    if needs_calibration(run):
        run_calibrate(run, ids)
    # after the calibration is stored: the chunks audit traces with votes only from here on
    AuditRun.objects.filter(pk=run.pk).update(calibrated_at=timezone.now())
    run.timings = {"prepare_s": round(time.perf_counter() - t0, 3)}
    AuditRun.objects.filter(pk=run.pk).update(timings=run.timings)
    if not ids:
        finish_if_complete(run.pk)
    elif inline:
        _audit_inline(run.pk, ids, progress)
    else:
        transaction.on_commit(lambda: enqueue_chunks(run, ids))
    run.refresh_from_db()
    return run


def _run_ids(run: AuditRun) -> array[int]:
    """The run's trace ids, in order. 8 bytes an id, read 10,000 at a time: a list of ints
    would hold several times that through the start, and more while it is read."""
    traces = run_traces(run).order_by("id").values_list("id", flat=True)
    return array("q", traces.iterator(chunk_size=ID_PART))


def _store_items(run: AuditRun, ids: Sequence[int]) -> None:
    """One pending item per trace id and the run's total, in one transaction: a start that
    dies on the way leaves no items at all, and the sweep's repair (`audit_run_calibrate`)
    makes them again — not a part, which it would have audited as the whole run."""
    with transaction.atomic():
        _create_items(run, ids)
        AuditRun.objects.filter(pk=run.pk).update(traces_total=len(ids))


def _uncalibrated(run_id: int) -> AuditRun | None:
    """The run if it is running and its calibration is not stored yet, else None."""
    run = AuditRun.objects.select_related("project").filter(pk=run_id).first()
    if run is None or run.status != AuditRun.Status.RUNNING or run.calibrated_at is not None:
        return None
    return run


def _item_ids(run: AuditRun) -> array[int]:
    """The run's trace ids from its items, in trace order: the ids its start read."""
    items = run.items.order_by("trace_id").values_list("trace_id", flat=True)
    return array("q", items.iterator(chunk_size=ID_PART))


def audit_run_calibrate(*, run_id: int) -> bool:
    """Calibrate a running run whose start died before its calibration was stored (making its
    items first if the start died before those), then queue its pending traces (the sweep's
    repair: its chunks leave traces with votes pending until the run is calibrated). False if
    the run is not such a run (calibrated meanwhile)."""
    run = _uncalibrated(run_id)
    if run is None:
        return False
    # its items are made all at once (`_store_items`): none means the start died before
    ids = _item_ids(run)
    if not ids:
        ids = _run_ids(run)
        _store_items(run, ids)
    if needs_calibration(run):
        run_calibrate(run, ids)
    AuditRun.objects.filter(pk=run.pk, calibrated_at=None).update(
        calibrated_at=timezone.now(), heartbeat_at=timezone.now()
    )
    pending = list(
        run.items.filter(status=AuditItem.Status.PENDING).values_list("trace_id", flat=True)
    )
    if pending:
        enqueue_chunks(run, pending)
    else:
        finish_if_complete(run.pk)
    return True


#: Traces per chunk of an inline audit: its chunks run one after the other in this process, so
#: only a chunk's traces and items are held (a whole run at once is a query with a parameter
#: per trace and all their Trace objects in memory), and the read-ahead restarts once per chunk.
INLINE_CHUNK_TRACES = 2000


def _audit_inline(run_id: int, ids: Sequence[int], progress: Progress | None) -> None:
    for start in range(0, len(ids), INLINE_CHUNK_TRACES):
        chunk = list(ids[start : start + INLINE_CHUNK_TRACES])
        # the bar counts the run's traces, not the chunk's
        step = None if progress is None else _offset(progress, start, len(ids))
        audit_chunk_process(run_id=run_id, trace_ids=chunk, progress=step)


def _offset(progress: Progress, before: int, total: int) -> Progress:
    return lambda done, _chunk_total: progress(before + done, total)


def _create_items(run: AuditRun, ids: Sequence[int]) -> None:
    """One pending item per trace id (kept where one exists: a second start). On PostgreSQL the
    server makes them from an array parameter of ID_PART ids (a whole run's ids in one array
    grow the worker with the run's size while psycopg sends them); as model objects, items
    cost the start serial time and memory per item."""
    if connection.vendor == "postgresql":
        table = connection.ops.quote_name(AuditItem._meta.db_table)
        with connection.cursor() as cur:
            for start in range(0, len(ids), ID_PART):
                cur.execute(
                    f"INSERT INTO {table} (run_id, trace_id, status, error, attempts) "
                    "SELECT %s, t, %s, '', 0 FROM unnest(%s::bigint[]) AS t "
                    "ON CONFLICT (run_id, trace_id) DO NOTHING",
                    [run.pk, AuditItem.Status.PENDING, list(ids[start : start + ID_PART])],
                )
        return
    for start in range(0, len(ids), ID_PART):
        AuditItem.objects.bulk_create(
            [AuditItem(run=run, trace_id=i) for i in ids[start : start + ID_PART]],
            ignore_conflicts=True,
        )


# --- retrying and resuming -------------------------------------------------------------------


def audit_run_retry_errors(*, run: AuditRun) -> int:
    """Queue the traces that failed again; the run goes back to running until they are done."""
    ids = list(run.items.filter(status=AuditItem.Status.ERROR).values_list("trace_id", flat=True))
    if not ids:
        return 0
    with transaction.atomic():
        n = AuditItem.objects.filter(
            run=run, trace_id__in=ids, status=AuditItem.Status.ERROR
        ).update(status=AuditItem.Status.PENDING, error="")
        # traces_done counts the items out of pending (the workers add theirs per batch)
        AuditRun.objects.filter(pk=run.pk).update(
            status=AuditRun.Status.RUNNING,
            finished_at=None,
            heartbeat_at=timezone.now(),
            traces_done=Greatest(F("traces_done") - n, 0),
        )
        transaction.on_commit(lambda: enqueue_chunks(run, ids))
    return len(ids)


def audit_runs_resume_stale(*, older_than: float | None = None) -> list[int]:
    """Queue the pending traces of running runs nobody has reported on for a while — after a
    worker was killed — and start runs still pending (their start message was lost while the
    broker was down). Duplicated work is harmless (results are idempotent)."""
    cutoff = stale_cutoff(older_than)
    for run_id in stale_pending(AuditRun, cutoff).values_list("pk", flat=True):
        _enqueue_start(run_id)
    resumed = []
    for run in stale_running(AuditRun, cutoff):
        if not AuditRun.objects.filter(pk=run.pk, heartbeat_at__lt=cutoff).update(
            heartbeat_at=timezone.now()
        ):
            continue  # another worker resumed it first
        if stalls.check_progress(run):
            continue  # failed: the same failure too many times
        if run.calibrated_at is None:  # its start died before the calibration was stored
            enqueue_calibrate(run.pk)
            resumed.append(run.pk)
            continue
        ids = list(
            run.items.filter(status=AuditItem.Status.PENDING).values_list("trace_id", flat=True)
        )
        if ids:
            enqueue_chunks(run, ids)
        else:
            finish_if_complete(run.pk)
        resumed.append(run.pk)
    return resumed
