"""A GIN index for full-text search in event content (PostgreSQL only; see auditor.search).

It lives in auditor because search is a feature of the audit UI; traces stays unaware of it.
SQLite gets nothing (search falls back to LIKE there)."""

from django.db import migrations

INDEX = "event_payload_fts"
CREATE = (
    f"CREATE INDEX IF NOT EXISTS {INDEX} ON traces_event USING gin "
    "(to_tsvector('simple'::regconfig, left((payload)::text, 100000)))"
)
DROP = f"DROP INDEX IF EXISTS {INDEX}"


def forwards(apps, schema_editor):  # type: ignore[no-untyped-def]
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(CREATE)


def backwards(apps, schema_editor):  # type: ignore[no-untyped-def]
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(DROP)


class Migration(migrations.Migration):
    dependencies = [
        ("auditor", "0001_initial"),
        ("traces", "0002_events_append_only"),
    ]

    operations = [migrations.RunPython(forwards, backwards, elidable=False)]
