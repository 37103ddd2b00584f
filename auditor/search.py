"""Full-text search in trace content (event payloads).

PostgreSQL: `to_tsvector('simple', left(payload::text, N))` backed by a GIN expression index
(migration auditor 0002), queried with `plainto_tsquery('simple', …)`: all words of the query
must occur in one event. The 'simple' configuration does not stem, so identifiers, tool names
and error strings match as written (case-folded). The payload is cut at N characters because a
tsvector is limited to 1 MB and an indexed expression that fails would make ingest of a huge
event fail; words beyond the cut are not found.

SQLite (the embedded default): a LIKE per word over the payload's JSON text — a full scan,
fine at the embedded scale.
"""

from __future__ import annotations

import re

from django.db import connection
from django.db.models import Exists, OuterRef, QuerySet, TextField
from django.db.models.functions import Cast

from traces.models import Event

# Keep in sync with the index in auditor/migrations/0002_event_fulltext.py: the planner only
# uses the index when the query's expression is the indexed one, character for character.
INDEXED_CHARS = 100_000
TSVECTOR_SQL = f"to_tsvector('simple'::regconfig, left((payload)::text, {INDEXED_CHARS}))"

_WORD = re.compile(r"\w+", re.UNICODE)


def words(q: str) -> list[str]:
    return _WORD.findall(q)[:12]


def traces_matching(qs: QuerySet, q: str) -> QuerySet:
    """`qs` narrowed to traces with an event whose content contains every word of `q`."""
    ws = words(q)
    if not ws:
        return qs
    events = Event.objects.filter(trace=OuterRef("pk"))
    if connection.vendor == "postgresql":
        # plainto_tsquery quotes nothing the user typed into syntax; the words are passed
        # as one parameter.
        events = events.extra(
            where=[f"{TSVECTOR_SQL} @@ plainto_tsquery('simple'::regconfig, %s)"],
            params=[" ".join(ws)],
        )
    else:
        events = events.annotate(_text=Cast("payload", TextField()))
        for w in ws:
            events = events.filter(_text__icontains=w)
    return qs.filter(Exists(events))
