"""A batch's results stored and its traces taken out of pending on PostgreSQL in four round
trips: the COPY (two), one statement for everything else, the commit.

Why one statement: the writing runs on a lane thread beside the auditing thread
(`auditor.runs.lanes`), and each round trip ends with that thread waiting for the interpreter
lock the auditing thread holds. A batch made ten of them — a savepoint around the COPY and its
release, the run's settings table, the items, the fold, the commit, the run's progress — and
at ≈ 45 ms a batch the writing was slower than the auditing of the next batch, which then
waited for it (issue 17: 0.6 s of a 4,000-trace run's 4.9 s, py-spy). Now the items' update,
the failed items' errors, the fold, the settings table and the progress are data-modifying
parts of one `WITH` statement, and the COPY has no savepoint of its own: a conflict (a
redelivered chunk stored some of these rows first — rare) rolls the whole batch back and it is
written again the idempotent way (`store_results`).

The run's progress (`traces_done`, `heartbeat_at`) now moves in the batch's transaction, with
its items, rather than just after it; the run's row stays locked from that statement to the
commit, one round trip, and is always the last row a batch locks (no lock-order cycle with
`audit_run_retry_errors`, which also locks items first).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from django.db import IntegrityError, connection, transaction
from django.utils import timezone

from auditor.runs.models import AuditItem, AuditRun, SummaryFold
from auditor.runs.record_settings import canonical_json
from auditor.runs.store import copy_results, settings_by_run, store_results
from policies.run_fold import FOLD_VERSION, PolicyFold, dumps

_Status = AuditItem.Status


def _finish_sql() -> str:
    item = connection.ops.quote_name(AuditItem._meta.db_table)
    fold = connection.ops.quote_name(SummaryFold._meta.db_table)
    run = connection.ops.quote_name(AuditRun._meta.db_table)
    return f"""
    WITH done AS (
        UPDATE {item} SET status = %(done_status)s, error = '', attempts = attempts + 1
        WHERE run_id = %(run)s AND status = %(pending)s AND trace_id = ANY(%(done)s::bigint[])
        RETURNING 1
    ), failed AS (
        UPDATE {item} AS i SET status = %(error_status)s, error = f.error,
            attempts = i.attempts + 1
        FROM unnest(%(failed)s::bigint[], %(errors)s::text[]) AS f(trace_id, error)
        WHERE i.run_id = %(run)s AND i.status = %(pending)s AND i.trace_id = f.trace_id
        RETURNING 1
    ), fold AS (
        INSERT INTO {fold} (run_id, first_trace, last_trace, traces, version, state)
        SELECT %(run)s, %(first)s, %(last)s, %(n)s, %(version)s, %(state)s
        WHERE %(state)s::bytea IS NOT NULL AND (SELECT count(*) FROM done) = %(n)s
        ON CONFLICT DO NOTHING
    ), progress AS (
        UPDATE {run} SET heartbeat_at = %(now)s,
            traces_done = traces_done + (SELECT count(*) FROM done) + (SELECT count(*) FROM failed),
            record_settings = CASE WHEN record_settings ?& %(keys)s::text[] THEN record_settings
                ELSE record_settings || %(settings)s::jsonb END
        WHERE id = %(run)s
    )
    SELECT (SELECT count(*) FROM done) + (SELECT count(*) FROM failed)
    """


def store_batch(
    run_id: int,
    rows: Sequence[dict[str, Any]],
    done: Sequence[int],
    failed: Sequence[tuple[int, str]],
    folds: Mapping[str, PolicyFold] | None,
) -> int:
    """Store a batch's result ``rows``, mark its ``done`` and ``failed`` (trace id, error) items
    that are still pending, store its ``folds`` if the batch itself took every done trace out
    of pending (a redelivered copy's would count traces twice), add the settings its records
    name to the run's table and move the run's progress — in one transaction. Returns how many
    items left pending here. PostgreSQL only (`auditor.runs.work` writes the ORM way elsewhere)."""
    settings = settings_by_run(rows).get(run_id, {})
    params = {
        "run": run_id,
        "done": list(done),
        "failed": [t for t, _ in failed],
        "errors": [e for _, e in failed],
        "first": min(done, default=None),
        "last": max(done, default=None),
        "n": len(done),
        "version": FOLD_VERSION,
        "state": dumps(folds) if folds is not None and done else None,
        "keys": list(settings),
        "settings": canonical_json(settings).decode(),
        "now": timezone.now(),
        "pending": _Status.PENDING,
        "done_status": _Status.DONE,
        "error_status": _Status.ERROR,
    }
    sql = _finish_sql()

    def write(store: Callable[[Sequence[dict[str, Any]]], None]) -> int:
        with transaction.atomic(), connection.cursor() as cur:
            store(rows)
            cur.execute(sql, params)
            return int(cur.fetchone()[0])

    try:
        return write(copy_results)  # no savepoint: a conflict aborts the batch's transaction
    except IntegrityError:
        # A redelivered copy of this chunk stored some of these rows first: theirs are kept.
        return write(store_results)
