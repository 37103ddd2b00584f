"""Guarded trajectories stored whole (``guarded_from`` NULL) are stored as every later one is:
the suffix from where the trajectory leaves the trace's events, with its start. The whole
read back (`AuditResult.full_trajectory`) is the trajectory that was stored."""

from django.db import migrations


def _split(events, trajectory):
    k, n = 0, min(len(events), len(trajectory))
    while k < n and trajectory[k] == events[k]:
        k += 1
    return k, trajectory[k:]


def to_suffix(apps, schema_editor):
    AuditResult = apps.get_model("auditor", "AuditResult")
    Event = apps.get_model("traces", "Event")
    whole = AuditResult.objects.filter(
        guarded_from__isnull=True, guarded_trajectory__isnull=False
    ).only("pk", "trace_id", "guarded_trajectory")
    for result in whole.iterator(chunk_size=200):
        trajectory = result.guarded_trajectory
        if not isinstance(trajectory, list):
            continue
        events = list(
            Event.objects.filter(trace_id=result.trace_id)
            .order_by("seq")
            .values_list("payload", flat=True)[: len(trajectory)]
        )
        start, suffix = _split(events, trajectory)
        AuditResult.objects.filter(pk=result.pk).update(
            guarded_from=start, guarded_trajectory=suffix
        )


class Migration(migrations.Migration):
    dependencies = [("auditor", "0019_records_keep_settings")]

    operations = [migrations.RunPython(to_suffix, migrations.RunPython.noop, elidable=True)]
