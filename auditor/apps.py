from django.apps import AppConfig


class AuditorConfig(AppConfig):
    name = "auditor"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # Here, not in runs: runs sits below annotation and may not import it.
        from auditor.annotation.human_gate import on_run_finished
        from auditor.runs.work import run_finished

        run_finished.connect(on_run_finished, dispatch_uid="human-gate-review-queue")
        # Connects the receiver that re-creates an uploaded export's decisions and verdicts.
        from auditor.exports import reimport  # noqa: F401
