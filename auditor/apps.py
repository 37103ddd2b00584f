from django.apps import AppConfig


class AuditorConfig(AppConfig):
    name = "auditor"
    default_auto_field = "django.db.models.BigAutoField"
