"""`manage.py mcp_reload`: check mcp.json and ask every running web and worker process to apply it.

The MCP servers live inside the web and worker processes (tools/mcp/host.py), not in this one, so
the request goes through a file: this command touches `var/mcp-reload`, which every host polls
(tools/mcp/reload.py), and each re-reads the config and starts, stops or restarts only the servers
whose entry changed. It checks the file first and refuses one that is not usable at all (the
running servers would be kept anyway), and prints what it found per server.

A server whose code changed (or anything else the file does not show) is restarted with
`--restart <server> [<server> …]` or `--all`: the request goes through `var/mcp-restart`, and each
process applies any change to the file first, then restarts those servers.
"""

from __future__ import annotations

from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from tools.mcp.config import McpConfig, McpConfigError, load_config
from tools.mcp.reload import RELOAD_POLL, request_reload, request_restart


class Command(BaseCommand):
    help = (
        "Check mcp.json and have running web and worker processes apply it (only changed servers restart); "
        "--restart SERVER or --all also restarts servers whose entry is unchanged (their code changed)."
    )

    def add_arguments(self, parser):
        parser.add_argument(
            "--config", type=Path, default=None, help="Config file to check (default: APTIX_MCP_CONFIG, i.e. mcp.json)."
        )
        which = parser.add_mutually_exclusive_group()
        which.add_argument(
            "--restart",
            nargs="+",
            metavar="SERVER",
            default=None,
            help="Restart these servers in every running process, even if their entry did not change.",
        )
        which.add_argument(
            "--all",
            action="store_true",
            dest="all_servers",
            help="Restart every enabled server in every running process.",
        )

    def handle(self, *args, config: Path | None, restart: list[str] | None, all_servers: bool, **options):
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
        if restart is not None or all_servers:
            names = None if all_servers else _restartable(parsed, restart or [], path)
            request, _ = request_restart(Path(settings.VAR_DIR), names)
            which = "every enabled server" if names is None else ", ".join(names)
            self.stdout.write(
                f"Restart requested ({request}): running web and worker processes apply any change to {path} "
                f"and restart {which} within {RELOAD_POLL:g} s."
            )
            return
        request = request_reload(Path(settings.VAR_DIR))
        self.stdout.write(
            f"Reload requested ({request}): running web and worker processes apply {path} within "
            f"{RELOAD_POLL:g} s; only servers whose entry changed are started, stopped or restarted."
        )


def _restartable(parsed: McpConfig, names: list[str], path: Path) -> list[str]:
    """The named servers, each in the file and runnable; a CommandError naming the first that is not."""
    servers = {server.name: server for server in parsed.servers}
    for name in names:
        if name not in parsed.names:
            known = ", ".join(parsed.names) or "none"
            raise CommandError(f'MCP server "{name}" is not in {path} (its servers: {known}). Nothing was restarted.')
        if name in parsed.errors:
            raise CommandError(f"{parsed.errors[name]}: it cannot be restarted. Nothing was restarted.")
        if servers[name].disabled:
            raise CommandError(f'MCP server "{name}" is disabled in {path}. Nothing was restarted.')
    return list(dict.fromkeys(names))
