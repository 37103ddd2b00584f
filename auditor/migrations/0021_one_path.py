"""The run summary is made from the stored results alone and a run's VRR calibration is
computed in its start: the per-batch summary folds, the calibration's parallel parts and the
calibration's reuse key go."""

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [("auditor", "0020_trajectory_suffix")]

    operations = [
        migrations.DeleteModel(name="SummaryFold"),
        migrations.DeleteModel(name="CalibrationPart"),
        migrations.RemoveField(model_name="calibration", name="inputs"),
    ]
