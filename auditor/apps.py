from typing import Any

from django.apps import AppConfig

from auditor.gcstart import start_done


def _reimport_on_upload_done(sender: Any, **kwargs: Any) -> None:
    # The export re-import (and the reader it uses) loads with the first finished upload, not
    # at every process's start: most processes (the web app, an inline audit) never need it.
    from auditor.exports.reimport import reimport_on_upload_done

    reimport_on_upload_done(sender, **kwargs)


def _review_queue_on_run_finished(sender: Any, **kwargs: Any) -> None:
    # The human gate (and the re-replay, policies and numpy it imports) loads with the first
    # finished run, not at every process's start.
    from auditor.annotation.human_gate import on_run_finished

    on_run_finished(sender, **kwargs)


class AuditorConfig(AppConfig):
    name = "auditor"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # Here, not in runs: runs sits below annotation and may not import it.
        from auditor.runs.signals import run_finished
        from traces.signals import upload_done

        run_finished.connect(_review_queue_on_run_finished, dispatch_uid="human-gate-review-queue")
        # Re-creates an uploaded export's decisions and verdicts.
        upload_done.connect(_reimport_on_upload_done, dispatch_uid="auditor.exports.reimport")
        # The last app's ready: start is over (manage.py turned the collector off for it).
        start_done()
