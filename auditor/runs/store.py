"""Writing audit results: the one module that writes `AuditResult` rows.

`store_results` inserts a batch. On PostgreSQL the rows go in with one COPY: Django's
multi-row INSERT quotes every jsonb value client-side in Python (psycopg's array dumper), which
cost a run about as much as the four policies themselves. The JSON is encoded with orjson;
jsonb stores the same value whichever encoder wrote the text. COPY has no ON CONFLICT: a
redelivered chunk racing its original can hit the (run, trace, policy) constraint, so the COPY
runs in a savepoint and, on that conflict only, the batch is written again the idempotent way
(INSERT … ON CONFLICT DO NOTHING). On SQLite the batch is that ORM insert alone.

`change_results` changes stored results after their batch (a human verdict, a re-replay) and
makes the run's summary again from the rows, so the summary never lags its results.

A guarded trajectory is stored as the suffix from where it leaves the trace's stored events
(`split_trajectory`), with its start: a full copy repeats events the database already holds,
for a long trace most of its bytes. `AuditResult.full_trajectory` rebuilds the whole.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from operator import itemgetter
from typing import Any

import orjson
from django.db import IntegrityError, connection, transaction
from django.utils import timezone

from auditor.runs.models import DECISION_FIELDS, AuditResult, AuditRun
from auditor.runs.summary import audit_run_summary
from policies import PolicyResult
from policies.jsonsafe import json_safe

#: The columns a result row is written with, in COPY order.
COLUMNS = (
    "run_id",
    "trace_id",
    "policy",
    *DECISION_FIELDS,
    "guarded_trajectory",
    "guarded_from",
    "created_at",
)
_JSON_COLUMNS = frozenset({"record", "guarded_trajectory"})
# orjson writes NaN and ±Infinity as null and tuples as arrays: the text `json_safe` would have
# given, so a policy's own values are written without its copy (see `policy_row`).
_DUMPS = orjson.OPT_NON_STR_KEYS | orjson.OPT_SERIALIZE_NUMPY
_PLAIN = (bool, str, int, type(None))


def result_row(
    run_id: int, trace_id: int, name: str, d: Mapping[str, Any], events: Sequence[Any]
) -> dict[str, Any]:
    """One policy's `PolicyResult.to_dict()` as the values of a result row (no created_at).
    ``events``: the trace's stored event payloads in order (`traces.selectors.load_events`):
    the guarded trajectory is stored as its suffix after their common prefix."""
    start, suffix = split_trajectory(events, d["guarded_trajectory"])
    return {
        "run_id": run_id,
        "trace_id": trace_id,
        "policy": name,
        "guarded_trajectory": suffix,
        "guarded_from": start,
        **{f: d[f] for f in DECISION_FIELDS},
    }


def split_trajectory(
    events: Sequence[Any], trajectory: list[Any] | None
) -> tuple[int | None, list[Any] | None]:
    """(k, suffix) with ``trajectory == events[:k] + suffix``; (None, None) for no trajectory
    (the guarded trajectory is the actor's). k is the longest common prefix with the trace's
    *stored* events (not the events the auditor saw, which may carry labels the run applied):
    the prefix read back is then the trajectory's own by construction."""
    if trajectory is None:
        return None, None
    k, n = 0, min(len(events), len(trajectory))
    while k < n and trajectory[k] == events[k]:
        k += 1
    return k, trajectory[k:]


def policy_row(
    run_id: int, trace_id: int, res: PolicyResult, events: Sequence[Any]
) -> dict[str, Any]:
    """`result_row` of a `PolicyResult` itself, without `PolicyResult.to_dict`'s strict-JSON copy
    of the record and the whole trajectory (a fifth of the batch's own work): the
    record and the trajectory's suffix stay the policy's objects, `store_results` writes them
    as the copy's text. The common prefix is found on the policy's own events, which are the
    stored ones (policies.replay keeps each event's dict): an identity test per event."""
    fields = {f: getattr(res, f) for f in (*DECISION_FIELDS, "guarded_trajectory")}
    row = result_row(run_id, trace_id, res.policy, fields, events)
    for f in DECISION_FIELDS:  # a numpy bool or float from a policy's statistics, as to_dict has it
        if f != "record" and not isinstance(row[f], _PLAIN):
            row[f] = json_safe(row[f])
    return row


def store_results(rows: Sequence[dict[str, Any]]) -> None:
    """Insert the result rows; rows already stored for (run, trace, policy) are kept as they
    are. Call inside the batch's transaction (the items are marked done in the same one)."""
    if not rows:
        return
    if connection.vendor != "postgresql":
        _insert_ignoring_conflicts(rows)
        return
    try:
        with transaction.atomic():  # a savepoint: the conflict below must not end the batch
            copy_results(rows)
    except IntegrityError:
        _insert_ignoring_conflicts(rows)


def copy_results(rows: Sequence[dict[str, Any]]) -> None:
    """Insert the rows with one COPY (PostgreSQL). A row already stored raises IntegrityError
    and leaves the transaction aborted: `store_results` rolls back to its savepoint."""
    if not rows:
        return
    now = timezone.now()
    table = connection.ops.quote_name(AuditResult._meta.db_table)
    cols = ", ".join(connection.ops.quote_name(c) for c in COLUMNS)
    values = itemgetter(*COLUMNS[:-1])  # all but created_at, in COPY order, read in C
    # The raw psycopg cursor (Django's has no COPY): its errors are mapped to Django's by hand,
    # so a conflict arrives as the IntegrityError store_results handles.
    with connection.cursor() as cur, connection.wrap_database_errors:
        with cur.cursor.copy(f"COPY {table} ({cols}) FROM STDIN") as copy:
            for row in rows:
                line = list(values(row))
                for i in _JSON_POSITIONS:
                    line[i] = json_text(line[i])
                line.append(now)
                copy.write_row(line)


_JSON_POSITIONS = tuple(i for i, c in enumerate(COLUMNS) if c in _JSON_COLUMNS)


def json_text(value: Any) -> str | None:
    """A record's or trajectory's JSON text as it is stored; None is SQL NULL (a missing
    trajectory, as the JSONField stores None, not JSON null)."""
    if value is None:
        return None
    try:
        return orjson.dumps(value, option=_DUMPS).decode()
    except TypeError:  # what orjson cannot encode takes json_safe's walk
        return orjson.dumps(json_safe(value), option=_DUMPS).decode()


def _insert_ignoring_conflicts(rows: Sequence[dict[str, Any]]) -> None:
    # The JSONField's encoder is the stdlib's, which writes NaN: strict JSON first (`policy_row`).
    safe = [{k: json_safe(v) if k in _JSON_COLUMNS else v for k, v in r.items()} for r in rows]
    AuditResult.objects.bulk_create(
        [AuditResult(**row) for row in safe], ignore_conflicts=True, batch_size=500
    )


def change_results(run_id: int, changes: Sequence[tuple[int, str, Mapping[str, Any]]]) -> None:
    """Change stored results of a run — each (trace id, policy, {field: value}) — and make the
    run's summary again from its rows, in one transaction: the one way results change after
    their batch, so a run's summary always holds its results."""
    with transaction.atomic():
        for trace_id, policy, values in changes:
            AuditResult.objects.filter(run_id=run_id, trace_id=trace_id, policy=policy).update(
                **values
            )
        run = AuditRun.objects.get(pk=run_id)
        AuditRun.objects.filter(pk=run_id).update(summary=audit_run_summary(run))
