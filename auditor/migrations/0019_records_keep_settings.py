"""Decision records hold their settings again: a record stored naming its settings by content
key (``settings_ref``) gets the settings its run kept under that key (``AuditRun.
record_settings``), and the run's table goes. A record whose key the run lacks keeps its
``settings_ref`` (it was read so before); a record with settings inline is left as it is."""

from django.db import migrations

SQL = """
UPDATE {result} AS r
SET record = (r.record - 'settings_ref')
    || jsonb_build_object('settings', a.record_settings -> (r.record ->> 'settings_ref'))
FROM {run} AS a
WHERE a.id = r.run_id
  AND jsonb_typeof(r.record) = 'object'
  AND jsonb_typeof(r.record -> 'settings_ref') = 'string'
  AND a.record_settings ? (r.record ->> 'settings_ref')
"""


def inline_settings(apps, schema_editor):
    AuditRun = apps.get_model("auditor", "AuditRun")
    AuditResult = apps.get_model("auditor", "AuditResult")
    connection = schema_editor.connection
    if connection.vendor == "postgresql":
        quote = connection.ops.quote_name
        sql = SQL.format(
            result=quote(AuditResult._meta.db_table), run=quote(AuditRun._meta.db_table)
        )
        schema_editor.execute(sql)
        return
    tables = {
        pk: table
        for pk, table in AuditRun.objects.values_list("pk", "record_settings").iterator()
        if table
    }
    if not tables:
        return
    results = AuditResult.objects.filter(run_id__in=tables).only("pk", "run_id", "record")
    for result in results.iterator(chunk_size=500):
        record = result.record
        key = record.get("settings_ref") if isinstance(record, dict) else None
        table = tables[result.run_id]
        if not isinstance(key, str) or key not in table:
            continue
        record = {k: v for k, v in record.items() if k != "settings_ref"}
        record["settings"] = table[key]
        AuditResult.objects.filter(pk=result.pk).update(record=record)


class Migration(migrations.Migration):
    dependencies = [("auditor", "0018_run_stalls")]

    operations = [
        migrations.RunPython(inline_settings, migrations.RunPython.noop, elidable=True),
        migrations.RemoveField(model_name="auditrun", name="record_settings"),
    ]
