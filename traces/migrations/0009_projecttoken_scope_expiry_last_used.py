"""Project tokens get a scope, an expiry and a last-used time.

Tokens that exist already could read their project: they keep that (`read`), so no running
agent breaks on upgrade; owners see the scope on the project page and can revoke. New tokens are
upload-only unless asked otherwise."""

from django.db import migrations, models

SCOPES = [("upload", "upload only"), ("read", "upload and read")]


class Migration(migrations.Migration):
    dependencies = [
        ("traces", "0008_upload_run_source_backfill"),
    ]

    operations = [
        migrations.AddField(
            model_name="projecttoken",
            name="expires_at",
            field=models.DateTimeField(blank=True, help_text="none: never expires", null=True),
        ),
        migrations.AddField(
            model_name="projecttoken",
            name="last_used_at",
            field=models.DateTimeField(blank=True, null=True),
        ),
        # Existing rows are filled with the default of the column as added: read.
        migrations.AddField(
            model_name="projecttoken",
            name="scope",
            field=models.CharField(choices=SCOPES, default="read", max_length=8),
        ),
        migrations.AlterField(
            model_name="projecttoken",
            name="scope",
            field=models.CharField(choices=SCOPES, default="upload", max_length=8),
        ),
    ]
