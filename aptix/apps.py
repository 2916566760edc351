from django.apps import AppConfig


class AptixConfig(AppConfig):
    name = "aptix"
    verbose_name = "Teams"
