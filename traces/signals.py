"""Signals traces sends for apps that build on it (traces imports none of them)."""

from __future__ import annotations

from django.dispatch import Signal

# Sent once an upload is processed and done, with `upload`. A receiver must not fail the upload:
# it reports its own problems on the upload (the auditor's export re-import does).
upload_done = Signal()
