"""SQLite rebuilds a table to alter a column (0003), which drops its triggers: put the
append-only trigger of 0002 back. PostgreSQL altered the table in place and kept it."""

from django.db import migrations

SQLITE_UP = """
CREATE TRIGGER IF NOT EXISTS traces_event_no_update BEFORE UPDATE ON traces_event
BEGIN SELECT RAISE(ABORT, 'events are append-only'); END;
"""


def forwards(apps, schema_editor):  # type: ignore[no-untyped-def]
    if schema_editor.connection.vendor == "sqlite":
        schema_editor.execute(SQLITE_UP)


class Migration(migrations.Migration):
    dependencies = [("traces", "0003_event_trace_no_db_constraint")]
    operations = [migrations.RunPython(forwards, migrations.RunPython.noop)]
