"""Decision records stored without their repeated settings (issue 17: "decision records without
repeated settings").

Every policy writes the settings it ran with into each decision record (`record["settings"]`),
so a record read on its own says how it was decided. Stored as written, a run repeats the same
few dicts in every row — 10 % of a run's record bytes on the bench traces, encoded by the worker
and parsed by PostgreSQL for each of them. A stored record instead holds ``settings_ref``, the
content key of its settings, and the run holds each distinct settings dict once
(`AuditRun.record_settings`, key → settings). `full_record` gives the record back as the policy
wrote it; every reader of stored records goes through it.

The key is a hash of the settings' canonical JSON, not a counter: workers in several processes
store batches of one run at once, and the same settings must get the same key in each without
asking the others. VRR's settings differ per (model, verifier) group (their calibrated
parameters), so a run has a few keys per policy, not one.

Rows stored before this form hold ``settings`` inline and no ``settings_ref``; they, and records
whose settings are not a dict, are read and written as they are.
"""

from __future__ import annotations

import copy
import hashlib
from collections.abc import Iterable, Mapping
from typing import Any

import orjson
from django.db import connection

from auditor.runs.models import AuditRun
from policies.jsonsafe import json_safe

#: The record key that names its settings in the run's table.
SETTINGS_REF = "settings_ref"

# As store.py encodes records: the settings stored in the run are the text the record held.
_CANONICAL = orjson.OPT_SORT_KEYS | orjson.OPT_NON_STR_KEYS | orjson.OPT_SERIALIZE_NUMPY


def canonical_json(settings: Mapping[str, Any]) -> bytes:
    try:
        return orjson.dumps(settings, option=_CANONICAL)
    except TypeError:  # what orjson cannot encode takes json_safe's walk, as store.py's records
        return orjson.dumps(json_safe(settings), option=_CANONICAL)


def settings_key(settings: Mapping[str, Any]) -> str:
    """The content key of a settings dict: 16 hex digits of a hash of its canonical JSON."""
    return hashlib.blake2b(canonical_json(settings), digest_size=8).hexdigest()


class _Keys:
    """Keys of the settings dicts seen last, by identity. A policy puts one dict, made once per
    run, into every record it writes, so hashing it per record (6 µs, more than encoding the
    whole record) is needed only for a dict not seen yet. A copy taken with the key is compared
    with the dict each time (a C-level walk, ~10× cheaper than the hash): a dict changed in
    place gets its new key, not a stale one. Bounded: a worker serves many runs."""

    LIMIT = 64

    def __init__(self) -> None:
        self._seen: dict[int, tuple[dict[str, Any], dict[str, Any], str]] = {}

    def key(self, settings: dict[str, Any]) -> str:
        hit = self._seen.get(id(settings))
        if hit is not None and hit[0] is settings and hit[1] == settings:
            return hit[2]
        key = settings_key(settings)
        if len(self._seen) >= self.LIMIT:
            self._seen.clear()
        # the dict itself is held, so its id cannot be reused by another while cached
        self._seen[id(settings)] = (settings, copy.deepcopy(settings), key)
        return key


_KEYS = _Keys()


def split_settings(record: Any) -> tuple[Any, str | None, Any]:
    """(the record to store, its settings key, the settings) — the record as it is and no key
    when it has no settings dict. The policy's record is not changed (a shallow copy)."""
    if not isinstance(record, dict) or not isinstance(record.get("settings"), dict):
        return record, None, None
    settings = record["settings"]
    key = _KEYS.key(settings)
    stored = dict(record)  # a C-level copy: a comprehension over the keys took 4 µs a record
    del stored["settings"]
    stored[SETTINGS_REF] = key
    return stored, key, settings


def full_record(record: Any, table: Mapping[str, Any] | None) -> Any:
    """The record as its policy wrote it: ``settings_ref`` replaced by the settings from the
    run's ``table`` (`AuditRun.record_settings`). A record whose key the table lacks is
    returned as stored, its ``settings_ref`` showing what is missing, rather than with guessed
    settings. Keys come in jsonb's order (shorter first, then bytewise), the order the record
    had when its settings were stored inline, so exports are the same text as before."""
    if not isinstance(record, dict) or SETTINGS_REF not in record:
        return record
    key = record[SETTINGS_REF]
    if not isinstance(key, str) or table is None or key not in table:
        return record
    out = {k: v for k, v in record.items() if k != SETTINGS_REF}
    out["settings"] = table[key]
    return dict(sorted(out.items(), key=_jsonb_order))


def _jsonb_order(item: tuple[str, Any]) -> tuple[int, bytes]:
    raw = item[0].encode()
    return len(raw), raw


def remember_settings(run_id: int, settings: Mapping[str, Any]) -> None:
    """Add ``settings`` (key → settings) to the run's table, in the caller's transaction (the
    batch whose records name them). One statement, and a no-op without a lock when the run
    has every key already — the common case after a run's first batches; concurrent workers
    adding the same key write the same value."""
    if not settings:
        return
    if connection.vendor != "postgresql":
        run = AuditRun.objects.select_for_update().only("record_settings").get(pk=run_id)
        # strict JSON, as the PostgreSQL path's text has it (the JSONField's encoder writes NaN)
        merged = {**orjson.loads(canonical_json(settings)), **run.record_settings}
        if merged != run.record_settings:
            AuditRun.objects.filter(pk=run_id).update(record_settings=merged)
        return
    table = connection.ops.quote_name(AuditRun._meta.db_table)
    with connection.cursor() as cur:
        cur.execute(
            f"UPDATE {table} SET record_settings = record_settings || %s::jsonb "
            "WHERE id = %s AND NOT record_settings ?& %s::text[]",
            [canonical_json(settings).decode(), run_id, list(settings)],
        )


def settings_tables(run_ids: Iterable[int]) -> dict[int, dict[str, Any]]:
    """Each run's settings table, for readers of several runs' records (exports)."""
    ids = set(run_ids)
    if not ids:
        return {}
    return dict(AuditRun.objects.filter(pk__in=ids).values_list("pk", "record_settings"))
