"""Full-text search in trace content (event payloads).

PostgreSQL: a search table `traces_eventsearch` (event, trace, tsvector of the event's JSON
text, GIN-indexed), filled by a task after each upload is done — not an index on the events
table, whose per-row tsvector would make every ingest several times slower (bench/ingest.py
measures ingest). So an upload is searchable a moment after it becomes visible. Queried with
`plainto_tsquery('simple', …)`: all words of the query must occur in one event. The 'simple'
configuration does not stem, so identifiers, tool names and error strings match as written
(case-folded). The text is cut at N characters because a tsvector is limited to 1 MB; words
beyond the cut are not found.

SQLite (the embedded default): a LIKE per word over the payload's JSON text — a full scan,
fine at the embedded scale, and immediate.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from django.db import connection, transaction
from django.db.models import BooleanField, Exists, OuterRef, QuerySet, TextField
from django.db.models.expressions import RawSQL
from django.db.models.functions import Cast

from common.jobs import job_enqueue
from traces.models import Event, Trace

INDEXED_CHARS = 100_000
TABLE = "traces_eventsearch"  # created by migration traces 0005

_WORD = re.compile(r"\w+", re.UNICODE)


def words(q: str) -> list[str]:
    return _WORD.findall(q)[:12]


def index_traces(trace_ids: Sequence[int]) -> int:
    """Add these traces' events to the search table (PostgreSQL; a no-op elsewhere). One
    statement, computed by the server; re-running it adds nothing."""
    if connection.vendor != "postgresql" or not trace_ids:
        return 0
    with connection.cursor() as cur:
        cur.execute(
            f"INSERT INTO {TABLE} (event_id, trace_id, document) "
            f"SELECT id, trace_id, to_tsvector('simple'::regconfig, "
            f"left((payload)::text, {INDEXED_CHARS})) "
            f"FROM {Event._meta.db_table} WHERE trace_id = ANY(%s) "
            f"ON CONFLICT (event_id) DO NOTHING",
            [list(trace_ids)],
        )
        return cur.rowcount


def index_upload(upload_id: int) -> int:
    ids = list(Trace.objects.filter(upload_id=upload_id).values_list("pk", flat=True))
    done = 0
    for start in range(0, len(ids), 1000):
        done += index_traces(ids[start : start + 1000])
    return done


def index_upload_queue(upload_id: int) -> None:
    """Index a finished upload in a task of its own, so ingest stays fast; after commit, so the
    worker sees the upload done. Only PostgreSQL has a search table; SQLite searches the payloads
    directly. With the broker down the sweep (`index_missing`) indexes it later."""
    if connection.vendor != "postgresql":
        return

    def enqueue() -> None:
        # In the function: traces.tasks imports this module (its task calls index_upload).
        from traces.tasks import index_search

        job_enqueue(index_search, upload_id)

    transaction.on_commit(enqueue, robust=True)


def index_missing(limit: int = 200) -> int:
    """Index done uploads whose traces have no search rows yet (their indexing task was lost
    while the broker was down), and drop rows of deleted traces. Part of the workers' periodic
    sweep. The search table has no foreign keys on purpose: a trace's deletion stays one
    cascade of the ORM's, and Django's test flushes can truncate the traces tables."""
    if connection.vendor != "postgresql":
        return 0
    with connection.cursor() as cur:
        cur.execute(
            f"DELETE FROM {TABLE} s WHERE s.ctid IN (SELECT s2.ctid FROM {TABLE} s2 "
            f"WHERE NOT EXISTS (SELECT 1 FROM {Trace._meta.db_table} t WHERE t.id = s2.trace_id) "
            f"LIMIT 10000)"
        )
        cur.execute(
            f"SELECT DISTINCT t.upload_id FROM {Trace._meta.db_table} t "
            f"JOIN traces_upload u ON u.id = t.upload_id AND u.status = 'done' "
            f"WHERE t.event_count > 0 AND NOT EXISTS "
            f"(SELECT 1 FROM {TABLE} s WHERE s.trace_id = t.id) LIMIT %s",
            [limit],
        )
        uploads = [row[0] for row in cur.fetchall()]
    return sum(index_upload(u) for u in uploads)


def traces_matching(qs: QuerySet, q: str) -> QuerySet:
    """`qs` narrowed to traces with an event whose content contains every word of `q`."""
    ws = words(q)
    if not ws:
        return qs
    if connection.vendor == "postgresql":
        # plainto_tsquery quotes nothing the user typed into syntax; the words are passed
        # as one parameter.
        match = RawSQL(
            f"EXISTS (SELECT 1 FROM {TABLE} s WHERE s.trace_id = {Trace._meta.db_table}.id "
            f"AND s.document @@ plainto_tsquery('simple'::regconfig, %s))",
            [" ".join(ws)],
            output_field=BooleanField(),
        )
        return qs.filter(match)
    events = Event.objects.filter(trace=OuterRef("pk")).annotate(_text=Cast("payload", TextField()))
    for w in ws:
        events = events.filter(_text__icontains=w)
    return qs.filter(Exists(events))
