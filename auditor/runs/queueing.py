"""How a run's work is queued: its traces in chunks (`chunk_size`), the traces no calibration
touches before the loops (`segments`), the VRR calibration's parts in parallel, and the
repair of a run whose start died calibrating. The tasks are imported in the functions:
auditor.runs.tasks imports the services, which import this module."""

from __future__ import annotations

from array import array
from collections.abc import Sequence

from django.conf import settings as django_settings

from auditor.runs.calibration import executes_code, traces_with_votes
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
    start and end with the task), so 100-trace tasks of two batches waited for half their I/O:
    250-trace tasks ran a 4,000-trace audit 1.3x as fast (bench/audit.py, median of three
    alternating rounds, 1 and 2 worker processes). Sixteen chunks still spread a run over
    several worker processes, with a short tail when the last ones finish. No chunk is smaller
    than 250 traces: the 1,479 traces of ../shared/data in 100-trace chunks took 1.35-1.68 s
    with one worker process and 1.26-1.33 s in 250-trace chunks (three alternating rounds; with
    two processes 1.03-1.05 s either way, each one's waits filled by the other's work).

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


def enqueue_chunks(run: AuditRun, trace_ids: Sequence[int], *, of: int = 0) -> int:
    """Queue ``trace_ids`` in chunks sized for a run of ``of`` traces (default: these ones) —
    a run queued in two parts has the chunks it would have had in one."""
    from auditor.runs.tasks import audit_chunk  # lazy: see the module docstring

    size = chunk_size(max(of, len(trace_ids)), model=bool(run.model_settings))
    chunks = [list(trace_ids[i : i + size]) for i in range(0, len(trace_ids), size)]
    for chunk in chunks:
        audit_chunk.delay(run.pk, chunk)
    return len(chunks)


def enqueue_parts(run: AuditRun, parts: Sequence[Sequence[int]], total: int) -> None:
    for part in parts:
        enqueue_chunks(run, part, of=total)


#: At most this many runs of traces with and without votes for the start to queue those without
#: first. Why a limit: a batch's summary fold covers a range of trace ids, and the run's folds
#: merge only if their ranges do not interleave (auditor.runs.folds), so a chunk must not cross
#: from one run to the next; where loops and other traces alternate (the bench's mix), that
#: would mean tiny chunks, and everything is queued after the calibration instead.
EARLY_SEGMENTS = 16


def segments(ids: Sequence[int], votes: Sequence[int]) -> list[tuple[array[int], bool]] | None:
    """``ids`` cut into maximal runs of traces with votes and without (``(ids, has votes)``),
    or None when there is nothing to queue early or more than EARLY_SEGMENTS runs."""
    if not votes or len(votes) == len(ids):
        return None
    loops = set(votes)
    out: list[tuple[array[int], bool]] = []
    for i in ids:
        flag = i in loops
        if not out or out[-1][1] != flag:
            if len(out) == EARLY_SEGMENTS:
                return None
            out.append((array("q"), flag))
        out[-1][0].append(i)
    return out


def split_early(
    ids: Sequence[int], votes: Sequence[int]
) -> tuple[list[Sequence[int]], list[Sequence[int]]]:
    """(the runs of traces to queue before the calibration, those to queue after it): the
    traces without votes first where `segments` allows, else all after."""
    parts = segments(ids, votes)
    if parts is None:
        return [], [ids]
    return [p for p, loops in parts if not loops], [p for p, loops in parts if loops]


def queue_later(run: AuditRun, ids: Sequence[int]) -> None:
    """What the start left for after the calibration (the same cut `split_early` made), for a
    calibration that ends in another task than the start (`auditor.runs.calibration_parts`)."""
    enqueue_parts(run, split_early(ids, traces_with_votes(ids))[1], len(ids))


#: Loops per task of a calibration tallied in parallel, and at most this many tasks: below two
#: parts, the start tallies alone (a task's own start and its part's storing cost more).
PART_LOOPS = 2500
MAX_PARTS = 16


def tally_parts(votes: Sequence[int]) -> list[list[int]]:
    """The loops cut into consecutive parts for parallel tallies ([] if not worth it)."""
    n = min(MAX_PARTS, len(votes) // PART_LOOPS)
    if n < 2:
        return []
    size = -(-len(votes) // n)
    return [list(votes[i : i + size]) for i in range(0, len(votes), size)]


def enqueue_tallies(run: AuditRun, parts: Sequence[Sequence[int]], inputs: str) -> None:
    from auditor.runs.tasks import tally_calibration_part  # lazy: see the module docstring

    for index, part in enumerate(parts):
        job_enqueue(tally_calibration_part, run.pk, index, len(parts), list(part), inputs)


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
