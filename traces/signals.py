"""Signals other apps may listen to (traces knows nothing of them, SPEC §2)."""

from django.dispatch import Signal

# Sent once an upload is marked done (its traces just became visible); kwargs: upload_id.
upload_done = Signal()
