# Guarded trajectories stored as the suffix from their divergence. Rows already
# stored keep their full copy with guarded_from NULL, which auditor.runs.trajectory reads as is.

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("auditor", "0007_run_model_settings_and_call_cache")]

    operations = [
        migrations.AddField(
            model_name="auditresult",
            name="guarded_from",
            field=models.PositiveIntegerField(blank=True, null=True),
        ),
    ]
