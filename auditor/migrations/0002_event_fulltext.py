"""Once: a GIN expression index on traces_event for full-text search. Search now belongs to
traces (traces.search; its migration 0005 drops this index where it exists and creates the search
table), so this migration does nothing; it stays so existing databases' history still matches."""

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [
        ("auditor", "0001_initial"),
        ("traces", "0002_events_append_only"),
    ]

    operations: list = []
