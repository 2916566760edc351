from django.apps import AppConfig


class ModesConfig(AppConfig):
    name = "modes"
    verbose_name = "Mode catalog"
