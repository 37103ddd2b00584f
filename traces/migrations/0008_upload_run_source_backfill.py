"""Existing uploads get the run they record, read from their traces' columns.

Trace ids of existing traces are left as they were stored: event payloads are append-only and
exports and links name traces by id. The old ids have no source part, so they cannot collide
with ids of new uploads, which have one whenever the run is known.
"""

from django.db import migrations

FIELDS = {"run_model": "model", "run_agent": "agent", "run_benchmark": "benchmark"}


def backfill(apps, schema_editor):  # type: ignore[no-untyped-def]
    Upload = apps.get_model("traces", "Upload")
    Trace = apps.get_model("traces", "Trace")
    for upload in Upload.objects.all().only("pk").iterator():
        changed = {}
        for field, column in FIELDS.items():
            values = list(
                Trace.objects.filter(upload_id=upload.pk)
                .exclude(**{column: ""})
                .values_list(column, flat=True)
                .distinct()[:2]
            )
            # Only a value every trace of the upload shares names the run.
            if len(values) == 1:
                changed[field] = values[0]
        if changed:
            Upload.objects.filter(pk=upload.pk).update(**changed)


class Migration(migrations.Migration):
    dependencies = [("traces", "0007_upload_run_source")]

    operations = [migrations.RunPython(backfill, migrations.RunPython.noop)]
