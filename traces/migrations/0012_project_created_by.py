import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models


def creators(apps, schema_editor):  # type: ignore[no-untyped-def]
    """A project's creator became its owner in the same transaction (traces.projects): its
    first owner membership names the creator of every project made before this field."""
    Project = apps.get_model("traces", "Project")
    Membership = apps.get_model("traces", "Membership")
    for project in Project.objects.filter(created_by__isnull=True).iterator():
        first = Membership.objects.filter(project=project, role="owner").order_by("pk").first()
        if first is not None:
            Project.objects.filter(pk=project.pk).update(created_by_id=first.user_id)


class Migration(migrations.Migration):
    dependencies = [
        ("traces", "0011_token_scopes"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.AddField(
            model_name="project",
            name="created_by",
            field=models.ForeignKey(
                blank=True,
                null=True,
                on_delete=django.db.models.deletion.SET_NULL,
                related_name="+",
                to=settings.AUTH_USER_MODEL,
            ),
        ),
        migrations.RunPython(creators, migrations.RunPython.noop),
    ]
