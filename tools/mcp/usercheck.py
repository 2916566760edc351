"""The system check of per-user credentials (registered in tools/apps.py): an mcp.json entry with
`"auth"` or `${user:NAME}` needs APTIX_SECRETS_KEY, since users' tokens and secrets are stored
encrypted with it; without it `manage.py check`, `aptix_serve` and `aptix_worker` stop at start-up
saying so, instead of failing each user's first call."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.conf import settings
from django.core import checks

from connections.sealing import MISSING_KEY

from .config import McpConfigError, load_config


def check_secrets_key(app_configs: Any = None, **kwargs: Any) -> list[checks.CheckMessage]:
    if settings.APTIX_SECRETS_KEY or not settings.APTIX_MCP_AUTOSTART:
        return []
    path = Path(settings.APTIX_MCP_CONFIG)
    if not path.exists():
        return []
    try:
        config = load_config(path)
    except McpConfigError:
        return []  # the mcp.json check reports it
    per_user = [server.name for server in config.servers if server.per_user]
    if not per_user:
        return []
    names = ", ".join(f'"{name}"' for name in per_user)
    return [checks.Error(f"{MISSING_KEY} Servers with per-user credentials: {names}.", id="aptix.E003")]
