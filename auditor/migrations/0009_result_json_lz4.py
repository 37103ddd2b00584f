# The results' jsonb columns compressed with lz4 instead of PostgreSQL's default pglz.
# A run's COPY of its results spends a large share of the server's time compressing records
# (lz4 takes markedly less of it than pglz, for a few more bytes on disk), and on a machine
# whose cores the workers share with the database that time is theirs.
# Rows already stored keep their compression; new ones take lz4. Skipped where the server has
# no lz4 (built without it, or older than PostgreSQL 14) and on other databases.

from django.db import migrations

COLUMNS = ("record", "guarded_trajectory")


def _set(method: str):  # type: ignore[no-untyped-def]
    def apply(apps, schema_editor):  # type: ignore[no-untyped-def]
        conn = schema_editor.connection
        if conn.vendor != "postgresql":
            return
        with conn.cursor() as cur:
            cur.execute(
                "SELECT 1 FROM pg_settings WHERE name = 'default_toast_compression' "
                "AND %s = ANY(enumvals)",
                [method],
            )
            if cur.fetchone() is None:
                return
        table = schema_editor.quote_name("auditor_auditresult")
        alters = ", ".join(
            f"ALTER COLUMN {schema_editor.quote_name(c)} SET COMPRESSION {method}" for c in COLUMNS
        )
        schema_editor.execute(f"ALTER TABLE {table} {alters}")

    return apply


class Migration(migrations.Migration):
    dependencies = [("auditor", "0008_result_guarded_from")]

    operations = [migrations.RunPython(_set("lz4"), _set("pglz"))]
