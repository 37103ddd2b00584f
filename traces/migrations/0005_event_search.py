"""The full-text search table moves to traces, which owns search over its events (it was created
by auditor's migrations 0002 and 0005, named `auditor_eventsearch`; those are now no-ops).

Every existing database migrates forward without losing a row: one that ran the old auditor
migrations has the table, which is renamed (its rows and indexes kept); one that stopped after
auditor 0002 has the old expression index on traces_event, which is dropped; a new database gets
the table here. PostgreSQL only; SQLite searches with LIKE (see traces.search)."""

from django.db import migrations

UP = """
DROP INDEX IF EXISTS event_payload_fts;
ALTER TABLE IF EXISTS auditor_eventsearch RENAME TO traces_eventsearch;
CREATE TABLE IF NOT EXISTS traces_eventsearch (
    event_id bigint PRIMARY KEY,
    trace_id bigint NOT NULL,
    document tsvector NOT NULL
);
CREATE INDEX IF NOT EXISTS eventsearch_document ON traces_eventsearch USING gin (document);
CREATE INDEX IF NOT EXISTS eventsearch_trace ON traces_eventsearch (trace_id);
"""
DOWN = "DROP TABLE IF EXISTS traces_eventsearch;"


def forwards(apps, schema_editor):  # type: ignore[no-untyped-def]
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(UP)


def backwards(apps, schema_editor):  # type: ignore[no-untyped-def]
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(DOWN)


class Migration(migrations.Migration):
    dependencies = [("traces", "0004_events_append_only_again")]
    operations = [migrations.RunPython(forwards, backwards, elidable=False)]
