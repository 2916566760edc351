"""`manage.py mcp_status`: start the configured MCP servers here, wait until each is up or has
failed, print one line per server (then, for each that came up, the protocol version and the
capabilities it and Aptix declared) and exit non-zero when any enabled server failed.

The servers of a running web process live in that process (tools/mcp/host.py), so this command
checks the configuration by starting its own copies: it answers "would they start, and with which
tools?", the question an operator has after editing mcp.json.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from tools.mcp.host import McpHost
from tools.mcp.supervisor import ServerStatus
from tools.registry import ToolRegistry


class Command(BaseCommand):
    help = "Start the MCP servers of mcp.json, wait until each is ready or failed, and report."

    def add_arguments(self, parser):
        parser.add_argument(
            "--config", type=Path, default=None, help="Config file (default: APTIX_MCP_CONFIG, i.e. mcp.json)."
        )
        parser.add_argument(
            "--timeout", type=float, default=90.0, help="Seconds to wait for every server to settle (default 90)."
        )
        parser.add_argument("--json", action="store_true", dest="as_json", help="Print JSON instead of a table.")

    def handle(self, *args, config: Path | None, timeout: float, as_json: bool, **options):
        if options["verbosity"] < 2:  # state changes and server stderr; failures still print
            logging.getLogger("aptix.mcp").setLevel(logging.WARNING)
        host = McpHost(config or settings.APTIX_MCP_CONFIG, registry=ToolRegistry("mcp"))
        host.start()
        try:
            statuses = host.wait_until_sync(lambda all_: all(s.settled for s in all_), timeout)
        except TimeoutError:
            statuses = host.status()
        finally:
            host.stop()
        if as_json:
            self.stdout.write(_as_json(host, statuses))
        elif host.config_error is None:
            self.stdout.write(_table(statuses))
        problems = _problems(host, statuses)
        if problems:
            raise CommandError(problems)


def _table(statuses: list[ServerStatus]) -> str:
    rows = [("SERVER", "STATE", "TOOLS", "ERROR")]
    for s in statuses:
        rows.append((s.name, s.state, str(len(s.tools)) if s.state == "ready" else "-", s.error or ""))
    widths = [max(len(row[i]) for row in rows) for i in range(3)]
    lines = ["  ".join([*(row[i].ljust(widths[i]) for i in range(3)), row[3]]).rstrip() for row in rows]
    # What each session agreed on, below the table (the table's columns stay one word each).
    agreed = [(s.name, s.handshake) for s in statuses if s.handshake is not None]
    if agreed:
        lines.append("")
        for name, handshake in agreed:
            lines.append(
                f"{name}: protocol {handshake.protocol_version}; server declared {handshake.server_summary()}; "
                f"Aptix declared {handshake.client_summary()}"
                + (f"; instructions: {len(handshake.instructions)} characters" if handshake.instructions else "")
            )
    return "\n".join(lines)


def _as_json(host: McpHost, statuses: list[ServerStatus]) -> str:
    return json.dumps(
        {"config": str(host.config_path), "error": host.config_error, "servers": [s.as_dict() for s in statuses]},
        indent=2,
    )


def _problems(host: McpHost, statuses: list[ServerStatus]) -> str:
    if host.config_error:
        return host.config_error
    failed = [s.name for s in statuses if s.state == "failed"]
    unsettled = [s.name for s in statuses if not s.settled]
    parts = []
    if failed:
        parts.append(f"{len(failed)} MCP server(s) failed: {', '.join(failed)}.")
    if unsettled:
        parts.append(f"Still not up after the timeout: {', '.join(unsettled)}.")
    return " ".join(parts)
