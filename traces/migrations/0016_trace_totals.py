from django.db import migrations, models


def backfill(apps, schema_editor):  # type: ignore[no-untyped-def]
    from traces.totals_backfill import totals_backfill

    totals_backfill(apps.get_model("traces", "Trace"), apps.get_model("traces", "Event"))


class Migration(migrations.Migration):
    """Per-trace duration, tokens and cost (traces.totals), filled from the stored events."""

    dependencies = [("traces", "0015_upload_dismissed")]

    operations = [
        migrations.AddField(
            model_name="trace", name="started_at", field=models.DateTimeField(blank=True, null=True)
        ),
        migrations.AddField(
            model_name="trace", name="duration_ms", field=models.FloatField(blank=True, null=True)
        ),
        migrations.AddField(
            model_name="trace",
            name="input_tokens",
            field=models.BigIntegerField(blank=True, null=True),
        ),
        migrations.AddField(
            model_name="trace",
            name="output_tokens",
            field=models.BigIntegerField(blank=True, null=True),
        ),
        migrations.AddField(
            model_name="trace",
            name="total_tokens",
            field=models.BigIntegerField(blank=True, null=True),
        ),
        migrations.AddField(
            model_name="trace", name="cost_usd", field=models.FloatField(blank=True, null=True)
        ),
        migrations.RunPython(backfill, migrations.RunPython.noop, elidable=True),
    ]
