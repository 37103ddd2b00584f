"""A memory ceiling for processes that audit traces, and their garbage collector's settings.

A pathological trace (or a bug) must not take the machine down with it: with the ceiling, the
allocation fails with MemoryError inside that trace's audit, which records it as the trace's
error, and the run goes on. RLIMIT_DATA covers the heap and private anonymous mappings (what
Python allocates), unlike RLIMIT_AS it does not count the address space libraries reserve.
"""

from __future__ import annotations

import gc
import logging
import resource
import sys

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured

log = logging.getLogger(__name__)


def apply_memory_limit() -> None:
    mb = settings.TA_WORKER_MEMORY_MB
    if not mb:
        return
    limit = mb * 1024 * 1024
    soft, hard = resource.getrlimit(resource.RLIMIT_DATA)
    if hard != resource.RLIM_INFINITY:
        limit = min(limit, hard)
    try:
        resource.setrlimit(resource.RLIMIT_DATA, (limit, hard))
    except (ValueError, OSError) as exc:  # not allowed here: run without, but say so
        log.warning("could not set a %d MiB memory limit: %s", mb, exc)


def tune_switch_interval() -> None:
    """Hand the interpreter lock between threads every TA_SWITCH_INTERVAL_MS (Python's own: 5
    ms). An audit's reading and writing threads (auditor.runs.lanes) wake from the database
    and then wait for the lock the auditing thread holds; at 5 ms a batch's write, a handful
    of such hand-overs, comes back later than the next batch's audit, and the auditing thread
    waits for it (bench/audit.py measures the difference)."""
    ms = settings.TA_SWITCH_INTERVAL_MS
    if ms:
        sys.setswitchinterval(ms / 1000)


def tune_gc() -> None:
    """Freeze what the process has loaded so far (Django, the policies, their tables: objects
    that live as long as the process) out of the cyclic collector's view, and collect young
    objects less often (TA_GC_THRESHOLDS). An audit allocates a batch's events and results by
    the hundred thousand and frees them by reference counting; with Python's thresholds the
    collector runs every 700 of them and traverses the whole heap again and again, a large
    share of an audit's CPU time (bench/audit.py). Cyclic garbage, which reference
    counting misses, still goes, at most a few tens of thousands of objects later."""
    raw = settings.TA_GC_THRESHOLDS
    if not raw:
        return
    try:
        thresholds = [int(v) for v in raw]
        if len(thresholds) != 3 or min(thresholds) < 1:
            raise ValueError
    except ValueError:
        raise ImproperlyConfigured(
            f"TA_GC_THRESHOLDS={','.join(raw)}: expected three positive integers, e.g. 20000,50,100"
        ) from None
    # What start-up left as garbage in the young generations is freed, not frozen. Not a full
    # collection: after Django start it traverses tens of thousands of objects to free a few
    # dozen, a noticeable share of a short `manage.py audit --inline`; those few stay, frozen.
    gc.collect(1)
    gc.freeze()
    gc.set_threshold(*thresholds)


def prepare_audit_process() -> None:
    """Everything a process that audits sets up once: the memory ceiling, the collector and the
    lock hand-over (a Celery pool process at start, `manage.py audit --inline`)."""
    apply_memory_limit()
    tune_gc()
    tune_switch_interval()
