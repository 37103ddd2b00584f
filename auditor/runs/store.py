"""Writing a batch of audit results. On PostgreSQL the rows go in with one COPY: Django's
multi-row INSERT quotes every jsonb value client-side in Python (psycopg's array dumper), which
cost a run about as much as the four policies themselves (issue 17, measured in bench/audit.py).
The JSON is encoded with orjson; jsonb stores the same value whichever encoder wrote the text.

COPY has no ON CONFLICT: a redelivered chunk racing its original can hit the (run, trace,
policy) constraint, so the COPY runs in a savepoint and, on that conflict only, the batch is
written again the idempotent way (INSERT … ON CONFLICT DO NOTHING) — rare, and still correct.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from operator import itemgetter
from typing import Any

import orjson
from django.db import IntegrityError, connection, transaction
from django.utils import timezone

from auditor.runs.models import DECISION_FIELDS, AuditResult
from auditor.runs.record_settings import remember_settings, split_settings
from auditor.runs.trajectory import split_trajectory
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
#: Not a column: {key: settings} of the row's record, which is stored naming its settings by
#: that key (auditor.runs.record_settings); `store_results` adds them to the run's table.
SETTINGS = "_settings"
# orjson writes NaN and ±Infinity as null and tuples as arrays: the text `json_safe` would have
# given, so a policy's own values are written without its copy (see `policy_row`).
_DUMPS = orjson.OPT_NON_STR_KEYS | orjson.OPT_SERIALIZE_NUMPY
_PLAIN = (bool, str, int, type(None))


def result_row(
    run_id: int, trace_id: int, name: str, d: Mapping[str, Any], events: Sequence[Any]
) -> dict[str, Any]:
    """One policy's `PolicyResult.to_dict()` as the values of a result row (no created_at).
    ``events``: the trace's stored event payloads in order (`traces.selectors.load_events`):
    the guarded trajectory is stored as its suffix after their common prefix, and the record
    without its settings, which go to the run's table (`SETTINGS`)."""
    start, suffix = split_trajectory(events, d["guarded_trajectory"])
    record, key, settings = split_settings(d["record"])
    row = {
        "run_id": run_id,
        "trace_id": trace_id,
        "policy": name,
        "guarded_trajectory": suffix,
        "guarded_from": start,
        **{f: d[f] for f in DECISION_FIELDS},
        "record": record,
    }
    if key is not None:
        row[SETTINGS] = {key: settings}
    return row


def policy_row(
    run_id: int, trace_id: int, res: PolicyResult, events: Sequence[Any]
) -> dict[str, Any]:
    """`result_row` of a `PolicyResult` itself, without `PolicyResult.to_dict`'s strict-JSON copy
    of the record and the whole trajectory (a fifth of the batch's own work, issue 17): the
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
    for run_id, settings in settings_by_run(rows).items():
        remember_settings(run_id, settings)
    if connection.vendor != "postgresql":
        _insert_ignoring_conflicts(rows)
        return
    try:
        with transaction.atomic():  # a savepoint: the conflict below must not end the batch
            copy_results(rows)
    except IntegrityError:
        _insert_ignoring_conflicts(rows)


def settings_by_run(rows: Sequence[dict[str, Any]]) -> dict[int, dict[str, Any]]:
    """{run id: {settings key: settings}} the rows' records name (`SETTINGS`)."""
    out: dict[int, dict[str, Any]] = {}
    for row in rows:
        settings = row.get(SETTINGS)
        if settings:
            out.setdefault(row["run_id"], {}).update(settings)
    return out


def copy_results(rows: Sequence[dict[str, Any]]) -> None:
    """Insert the rows with one COPY (PostgreSQL). A row already stored raises IntegrityError
    and leaves the transaction aborted: the caller rolls back to where it can retry (a
    savepoint in `store_results`, the batch's whole transaction in `auditor.runs.batch_write`)."""
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
    safe = [
        {k: json_safe(v) if k in _JSON_COLUMNS else v for k, v in r.items() if k != SETTINGS}
        for r in rows
    ]
    AuditResult.objects.bulk_create(
        [AuditResult(**row) for row in safe], ignore_conflicts=True, batch_size=500
    )
