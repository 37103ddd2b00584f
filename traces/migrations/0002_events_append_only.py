"""Events are append-only: the database itself refuses an UPDATE of an event row, whatever code
path tries it (deletes stay possible, so a project or a crashed upload's partial rows can go)."""

from django.db import migrations

PG_UP = """
CREATE OR REPLACE FUNCTION traces_event_append_only() RETURNS trigger AS $$
BEGIN
    RAISE EXCEPTION 'events are append-only (event %% of trace %%)', OLD.seq, OLD.trace_id;
END;
$$ LANGUAGE plpgsql;
CREATE TRIGGER traces_event_no_update BEFORE UPDATE ON traces_event
    FOR EACH ROW EXECUTE FUNCTION traces_event_append_only();
"""
PG_DOWN = """
DROP TRIGGER IF EXISTS traces_event_no_update ON traces_event;
DROP FUNCTION IF EXISTS traces_event_append_only();
"""
SQLITE_UP = """
CREATE TRIGGER traces_event_no_update BEFORE UPDATE ON traces_event
BEGIN SELECT RAISE(ABORT, 'events are append-only'); END;
"""
SQLITE_DOWN = "DROP TRIGGER IF EXISTS traces_event_no_update;"


def forwards(apps, schema_editor):
    sql = PG_UP if schema_editor.connection.vendor == "postgresql" else SQLITE_UP
    # Executed with parameters, so the PL/pgSQL format placeholder is written %% above.
    schema_editor.execute(sql)


def backwards(apps, schema_editor):
    sql = PG_DOWN if schema_editor.connection.vendor == "postgresql" else SQLITE_DOWN
    schema_editor.execute(sql)


class Migration(migrations.Migration):
    dependencies = [("traces", "0001_initial")]
    operations = [migrations.RunPython(forwards, backwards)]
