from django.apps import AppConfig


class FilesConfig(AppConfig):
    name = "files"
    verbose_name = "Uploaded files"
    default_auto_field = "django.db.models.BigAutoField"
