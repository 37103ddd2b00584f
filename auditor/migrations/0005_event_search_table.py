"""Full-text search moves from an expression index on traces_event (computed on every insert:
ingest ran five times slower) to a search table filled after each upload (auditor.search).
PostgreSQL only; SQLite searches with LIKE. No foreign keys: see auditor.search.index_missing."""

from django.db import migrations

UP = """
DROP INDEX IF EXISTS event_payload_fts;
CREATE TABLE IF NOT EXISTS auditor_eventsearch (
    event_id bigint PRIMARY KEY,
    trace_id bigint NOT NULL,
    document tsvector NOT NULL
);
CREATE INDEX IF NOT EXISTS eventsearch_document ON auditor_eventsearch USING gin (document);
CREATE INDEX IF NOT EXISTS eventsearch_trace ON auditor_eventsearch (trace_id);
"""
DOWN = "DROP TABLE IF EXISTS auditor_eventsearch;"


def forwards(apps, schema_editor):  # type: ignore[no-untyped-def]
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(UP)


def backwards(apps, schema_editor):  # type: ignore[no-untyped-def]
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(DOWN)


class Migration(migrations.Migration):
    dependencies = [("auditor", "0004_annotation")]
    operations = [migrations.RunPython(forwards, backwards, elidable=False)]
