from django.apps import AppConfig


class ToolsConfig(AppConfig):
    name = "tools"
    verbose_name = "Tools"

    def ready(self) -> None:
        from django.core import checks

        from .mcp.checks import check_mcp_config
        from .mcp.usercheck import check_secrets_key

        checks.register(check_mcp_config)
        checks.register(check_secrets_key)
