"""Traces indexed by (project, id).

The traces list reads a project's newest trace id from it to bound its newest-first scan, which
otherwise walks every newer trace of other projects first, which page 1's time grows with.
The single-column project index stays: without it the planner counted a project's traces through
the upload index instead, 0.7 s for a 100k-trace project beside a 1M-trace one."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("traces", "0009_projecttoken_scope_expiry_last_used"),
    ]

    operations = [
        migrations.AddIndex(
            model_name="trace",
            index=models.Index(fields=["project", "id"], name="trace_project_id"),
        ),
    ]
