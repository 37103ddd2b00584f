# A run's decision records name their settings by content key, and the run holds each distinct
# settings dict once (auditor.runs.record_settings). Rows stored before keep their
# settings inline and are read as they are: no data migration.

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("auditor", "0009_result_json_lz4"),
    ]

    operations = [
        migrations.AddField(
            model_name="auditrun",
            name="record_settings",
            field=models.JSONField(blank=True, default=dict),
        ),
    ]
