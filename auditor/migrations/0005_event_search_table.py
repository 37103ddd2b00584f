"""Once: created the full-text search table `auditor_eventsearch`. Search now belongs to traces:
traces' migration 0005 renames that table to `traces_eventsearch` where it exists and creates it
where it does not, so this migration does nothing; it stays so existing databases' history still
matches."""

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [("auditor", "0004_annotation")]
    operations: list = []
