"""Run identity: an upload keeps what its uploader stated about the run (`run_stated`) and a
request key (format + stated run), unique with the content per project in place of the content
alone; a trace keeps the run part of its id (`run_source`).

Existing uploads keep a blank request key (what was stated is not known apart from what was
read; `upload_create` matches them by content, format and run). Existing traces get the run
part their upload's run names, where their id holds it.
"""

from django.db import migrations, models


def backfill(apps, schema_editor):  # type: ignore[no-untyped-def]
    Upload = apps.get_model("traces", "Upload")
    Trace = apps.get_model("traces", "Trace")
    uploads = Upload.objects.values_list("pk", "run_agent", "run_model", "run_label")
    for pk, agent, model, label in uploads.iterator():
        key = "/".join(dict.fromkeys(p for p in (agent, model, label) if p))[:120]
        if not key:
            continue
        ids = Trace.objects.filter(upload_id=pk)
        (
            ids.filter(external_id__contains=f":{key}:")
            | ids.filter(external_id__startswith=f"{key}:")
        ).update(run_source=key)


class Migration(migrations.Migration):
    dependencies = [("traces", "0013_otlp_span_buffer")]

    operations = [
        migrations.RemoveConstraint(model_name="upload", name="upload_unique_content"),
        migrations.AddField(
            model_name="trace",
            name="run_source",
            field=models.CharField(blank=True, db_index=True, max_length=200),
        ),
        migrations.AddField(
            model_name="upload",
            name="request_key",
            field=models.CharField(blank=True, max_length=64),
        ),
        migrations.AddField(
            model_name="upload",
            name="run_stated",
            field=models.JSONField(blank=True, default=dict),
        ),
        migrations.RunPython(backfill, migrations.RunPython.noop),
        migrations.AddConstraint(
            model_name="upload",
            constraint=models.UniqueConstraint(
                fields=("project", "content_hash", "request_key"), name="upload_unique_request"
            ),
        ),
    ]
