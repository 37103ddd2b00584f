from django.apps import AppConfig


class AuditorConfig(AppConfig):
    name = "auditor"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # Connects the receiver that re-creates an uploaded export's decisions and verdicts.
        from auditor.exports import reimport  # noqa: F401
