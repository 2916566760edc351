"""`manage.py runworker`: Channels' worker, with the start-up hooks run as soon as it starts.

A worker's first channel message is a turn, which must already see the MCP tools, and the orphan
sweep must not wait for a first turn either; the start-up hooks of aptix.asgi would only run on the
first scope (aptix/startup.py). This app is listed before `channels` in INSTALLED_APPS, so this
command is the one Django runs."""

from __future__ import annotations

from channels.management.commands.runworker import Command as ChannelsRunworker
from channels.worker import Worker


class StartingWorker(Worker):
    """Channels' worker, which runs the application's start-up hooks (the MCP host, the orphan
    sweep) on its loop before it listens."""

    async def handle(self) -> None:
        run_hooks = getattr(self.application, "run_hooks", None)
        if run_hooks is not None:
            run_hooks()  # idempotent: the first scope finds them run
        await super().handle()


class Command(ChannelsRunworker):
    worker_class = StartingWorker
