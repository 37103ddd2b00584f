"""Signals of audit runs, in a module of their own: a receiver connects at every process's start
(auditor/apps.py), and importing it from `runs.work` loaded the run machinery, the policies and
numpy into processes that never audit (the web server, most `manage.py` commands)."""

from __future__ import annotations

from django.dispatch import Signal

#: Sent once, by whichever process finishes a run (``run``: the AuditRun). Annotation listens
#: (TwinCheck's human gate opens its pair queue) without runs importing annotation.
run_finished = Signal()
