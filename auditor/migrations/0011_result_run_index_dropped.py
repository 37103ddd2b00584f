# The results' index on run_id alone dropped: result_unique (run, trace, policy) and
# result_run_transition (run, policy, transition) both lead with the run, so the planner reads a
# run's results through them, and every result written paid for a third copy of its run id.

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("auditor", "0010_run_record_settings"),
    ]

    operations = [
        migrations.AlterField(
            model_name="auditresult",
            name="run",
            field=models.ForeignKey(
                db_index=False,
                on_delete=django.db.models.deletion.CASCADE,
                related_name="results",
                to="auditor.auditrun",
            ),
        ),
    ]
