"""A memory ceiling for processes that audit traces.

A pathological trace (or a bug) must not take the machine down with it: with the ceiling, the
allocation fails with MemoryError inside that trace's audit, which records it as the trace's
error, and the run goes on. RLIMIT_DATA covers the heap and private anonymous mappings (what
Python allocates), unlike RLIMIT_AS it does not count the address space libraries reserve.
"""

from __future__ import annotations

import logging
import resource

from django.conf import settings

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
