from django.apps import AppConfig


class AutomationsConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "automations"
    verbose_name = "Automations"

    def ready(self) -> None:
        from . import receivers  # noqa: F401 - connects the turns' signals (a run paused or ended)
