"""How a run's work is queued: its traces in chunks (`chunk_size`), and the repair of a run
whose start died calibrating. The tasks are imported in the functions: auditor.runs.tasks
imports the services, which import this module."""

from __future__ import annotations

from collections.abc import Sequence

from django.conf import settings as django_settings

from auditor.runs.calibration import executes_code
from auditor.runs.models import AuditRun
from common.jobs import job_enqueue

#: With TA_AUDIT_CHUNK_TRACES = 0, a run is cut into about this many chunks, each of
#: CHUNK_BOUNDS traces; a run with a model into chunks of MODEL_CHUNK_TRACES.
CHUNKS_PER_RUN = 16
CHUNK_BOUNDS = (250, 1000)
MODEL_CHUNK_TRACES = 100


def chunk_size(traces: int, *, model: bool = False) -> int:
    """Traces per audit task: TA_AUDIT_CHUNK_TRACES, or by the run's size. A task's first read
    and last write wait on the database (the read-ahead and the writer of auditor.runs.lanes
    start and end with the task), so 100-trace tasks of two batches wait for half their I/O,
    and larger tasks spend a smaller share of an audit waiting (bench/audit.py measures it,
    with 1 and 2 worker processes). Sixteen chunks still spread a run over
    several worker processes, with a short tail when the last ones finish. No chunk is smaller
    than 250 traces: smaller chunks slow even a small run, such as ../shared/data, with one
    worker process (with two, each one's waits are filled by the other's work).

    A run with a model keeps the smallest chunks: its traces wait seconds each on model calls,
    and a task still running after the broker's visibility timeout (TA_VISIBILITY_TIMEOUT,
    600 s) is delivered to a second worker, which would make the same paid calls again."""
    fixed = django_settings.TA_AUDIT_CHUNK_TRACES
    if fixed:
        return int(fixed)
    if model:
        return MODEL_CHUNK_TRACES
    low, high = CHUNK_BOUNDS
    return min(high, max(low, -(-traces // CHUNKS_PER_RUN)))


def enqueue_chunks(run: AuditRun, trace_ids: Sequence[int]) -> int:
    """Queue ``trace_ids`` in chunks (`chunk_size`)."""
    from auditor.runs.tasks import audit_chunk  # lazy: see the module docstring

    size = chunk_size(len(trace_ids), model=bool(run.model_settings))
    chunks = [list(trace_ids[i : i + size]) for i in range(0, len(trace_ids), size)]
    for chunk in chunks:
        audit_chunk.delay(run.pk, chunk)
    return len(chunks)


def execution_queue(run_id: int) -> str | None:
    """The queue of the tasks that may execute code candidates (a run's start and its
    calibration): ``TA_SANDBOX_QUEUE`` when set and the run's project executes them — served by
    workers with bubblewrap (docs/sandbox.md) — else None (the task's own queue)."""
    queue = django_settings.TA_SANDBOX_QUEUE
    if not queue:
        return None
    run = AuditRun.objects.select_related("project", "project__created_by").filter(pk=run_id)
    found = run.first()
    return queue if found is not None and executes_code(found) else None


def enqueue_calibrate(run_id: int) -> None:
    from auditor.runs.tasks import calibrate_run  # lazy: see the module docstring

    job_enqueue(calibrate_run, run_id, queue=execution_queue(run_id))
