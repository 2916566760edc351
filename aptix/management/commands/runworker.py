"""`manage.py runworker`: Channels' worker, with the MCP host started before the first message.

A worker's first channel message is a turn, which must already see the MCP tools; the start-up
hooks of aptix.asgi only run on the first scope (aptix/startup.py), which would be too late here.
This app is listed before `channels` in INSTALLED_APPS, so this command is the one Django runs."""

from __future__ import annotations

from typing import Any

from channels.management.commands.runworker import Command as ChannelsRunworker

from tools.mcp.host import start_mcp_host


class Command(ChannelsRunworker):
    def handle(self, *args: Any, **options: Any) -> None:
        start_mcp_host()  # idempotent: the first-scope hook finds it running
        super().handle(*args, **options)
