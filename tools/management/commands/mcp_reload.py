"""`manage.py mcp_reload`: check mcp.json and ask every running web and worker process to apply it.

The MCP servers live inside the web and worker processes (tools/mcp/host.py), not in this one, so
the request goes through a file: this command touches `var/mcp-reload`, which every host polls
(tools/mcp/reload.py), and each re-reads the config and starts, stops or restarts only the servers
whose entry changed. It checks the file first and refuses one that is not usable at all (the
running servers would be kept anyway), and prints what it found per server.
"""

from __future__ import annotations

from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from tools.mcp.config import McpConfigError, load_config
from tools.mcp.reload import RELOAD_POLL, request_reload


class Command(BaseCommand):
    help = "Check mcp.json and have running web and worker processes apply it (only changed servers restart)."

    def add_arguments(self, parser):
        parser.add_argument(
            "--config", type=Path, default=None, help="Config file to check (default: APTIX_MCP_CONFIG, i.e. mcp.json)."
        )

    def handle(self, *args, config: Path | None, **options):
        path = config or settings.APTIX_MCP_CONFIG
        try:
            parsed = load_config(path)
        except McpConfigError as exc:
            raise CommandError(f"{exc} Nothing was reloaded.") from None
        servers = {server.name: server for server in parsed.servers}
        for name in parsed.names:
            if name in parsed.errors:
                self.stdout.write(f"{name}: invalid: {parsed.errors[name].problem}")
            else:
                self.stdout.write(f"{name}: {'disabled' if servers[name].disabled else servers[name].type}")
        request = request_reload(Path(settings.VAR_DIR))
        self.stdout.write(
            f"Reload requested ({request}): running web and worker processes apply {path} within "
            f"{RELOAD_POLL:g} s; only servers whose entry changed are started, stopped or restarted."
        )
