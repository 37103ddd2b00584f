"""Every finished run's summary keeps each policy's transition-matrix cells, which the run page
draws: a summary written before it did gets them counted from its results (the page's own count
of them goes)."""

from django.db import migrations
from django.db.models import Count

MATRIX_KEY = "transition_matrix"


def add_matrix(apps, schema_editor):
    AuditRun = apps.get_model("auditor", "AuditRun")
    AuditResult = apps.get_model("auditor", "AuditResult")
    for run in AuditRun.objects.exclude(summary={}).only("pk", "policies", "summary").iterator():
        summary = run.summary
        if not isinstance(summary, dict):
            continue
        lacking = [
            p
            for p in run.policies
            if isinstance(summary.get(p), dict) and MATRIX_KEY not in summary[p]
        ]
        if not lacking:
            continue
        counts = (
            AuditResult.objects.filter(run_id=run.pk, policy__in=lacking)
            .exclude(transition="not_applicable")
            .values("policy", "actor_success", "guarded_success")
            .annotate(n=Count("id"))
            .order_by("policy", "actor_success", "guarded_success")
        )
        for p in lacking:
            summary[p][MATRIX_KEY] = []
        for r in counts:
            summary[r["policy"]][MATRIX_KEY].append(
                [r["actor_success"], r["guarded_success"], r["n"]]
            )
        AuditRun.objects.filter(pk=run.pk).update(summary=summary)


class Migration(migrations.Migration):
    dependencies = [("auditor", "0021_one_path")]

    operations = [migrations.RunPython(add_matrix, migrations.RunPython.noop, elidable=True)]
