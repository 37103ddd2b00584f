"""Database work beside the auditing: a chunk's next batch of events is read and its last batch of
results written on threads of their own while this thread audits, so a worker process waits for
PostgreSQL only when PostgreSQL is slower than the policies (reading and writing are a large
share of an audit's wall time, spent waiting with the CPU idle).

A lane is one thread with its own database connection, kept for the life of the process: a run
is audited in chunks of a few hundred traces, and a new thread and connection per chunk cost more
than the overlap saved. Each worker process thus holds up to three connections (`shutdown`
closes the lanes' two). Another connection sees only committed rows, so inside a transaction (a
caller's `atomic`, a test's) the work runs at once in this thread instead, as part of the
chunk; so it does where the setting ``TA_AUDIT_OVERLAP`` is off (a database whose
connections are scarce). Either way a lane's error is raised to the caller, by `Future.result`.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

from django.conf import settings
from django.db import connection, connections

_lock = threading.Lock()
_lanes: dict[str, tuple[int, ThreadPoolExecutor]] = {}


def overlap_possible() -> bool:
    """Whether other connections see what this one sees: no transaction is open here (and the
    setting allows the threads)."""
    return (
        bool(settings.TA_AUDIT_OVERLAP)
        and connection.vendor == "postgresql"
        and not connection.in_atomic_block
    )


def submit[T](lane: str, threaded: bool, fn: Callable[..., T], *args: Any) -> Future[T]:
    """Run ``fn(*args)`` on the process's lane of that name, after what it was given before; or,
    not ``threaded``, here and now."""
    if threaded:
        return _executor(lane).submit(_in_lane, fn, *args)
    done: Future[T] = Future()
    try:
        done.set_result(fn(*args))
    except Exception as exc:  # noqa: BLE001 — raised to the caller by result()
        done.set_exception(exc)
    return done


def read_ahead[P, T](
    threaded: bool, fn: Callable[[P], T], parts: Sequence[P]
) -> Iterator[tuple[P, T]]:
    """``(part, fn(part))`` for each part in order, the next part's ``fn`` running on the read
    lane while the caller works on this one (not ``threaded``: read here, before the caller's
    turn, as the lane would). A part's result is let go as soon as the caller asks for the next,
    before that one is awaited: the caller's part and the one being read are all that is held."""
    reading = submit("read", threaded, fn, parts[0]) if parts else None
    for i, part in enumerate(parts):
        assert reading is not None
        result = reading.result()
        reading = submit("read", threaded, fn, parts[i + 1]) if i + 1 < len(parts) else None
        yield part, result
        del result


def _executor(lane: str) -> ThreadPoolExecutor:
    with _lock:
        pid, pool = _lanes.get(lane, (0, None))
        if pool is None or pid != os.getpid():  # threads do not survive a fork: start anew
            pool = ThreadPoolExecutor(1, thread_name_prefix=f"ta-{lane}")
            _lanes[lane] = (os.getpid(), pool)
        return pool


def _in_lane[T](fn: Callable[..., T], *args: Any) -> T:
    # As Celery's Django fix-up does for a task's own thread: a connection broken since the
    # last job (the server restarted) or past CONN_MAX_AGE is replaced, not used.
    for conn in connections.all(initialized_only=True):
        conn.close_if_unusable_or_obsolete()
    return fn(*args)


def shutdown() -> None:
    """Close the lanes' connections and stop their threads (a test before its database is
    dropped; a process about to exit need not). Lanes start again on the next use."""
    with _lock:
        lanes = [pool for pid, pool in _lanes.values() if pid == os.getpid()]
        _lanes.clear()
    for pool in lanes:
        pool.submit(connections.close_all)
        pool.shutdown(wait=True)
