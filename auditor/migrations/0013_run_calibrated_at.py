"""AuditRun.calibrated_at: when the run's start stored its VRR calibration. Runs already
started were calibrated before their chunks were queued (the order before this field), so they
are marked as calibrated when they started; runs not started yet calibrate at their start."""

from django.db import migrations, models
from django.db.models import F
from django.db.models.functions import Coalesce


def mark_started_runs(apps, schema_editor) -> None:  # type: ignore[no-untyped-def]
    run = apps.get_model("auditor", "AuditRun")
    run.objects.exclude(status="pending").update(
        calibrated_at=Coalesce(F("started_at"), F("created_at"))
    )


class Migration(migrations.Migration):
    dependencies = [
        ("auditor", "0012_summary_folds"),
    ]

    operations = [
        migrations.AddField(
            model_name="auditrun",
            name="calibrated_at",
            field=models.DateTimeField(blank=True, null=True),
        ),
        migrations.RunPython(mark_started_runs, migrations.RunPython.noop),
    ]
