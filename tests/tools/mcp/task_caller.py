"""A process that calls an MCP tool its server runs as a task and is then killed, as a worker dies
mid-task: `python task_caller.py <mcp.json> <tool> <arguments JSON>` starts an MCP host on that
config, calls the tool, prints the task's first state as one JSON line ({"task": id, "session":
the MCP session it was created in}) and waits for the test to kill it (no `tasks/cancel`, no end
of its session: what a SIGKILL leaves behind)."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path

import django

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "aptix.settings")
django.setup()

from tests.helpers.mcp import START_TIMEOUT, all_settled  # noqa: E402  (after django.setup)
from tools.base import CallContext  # noqa: E402
from tools.mcp.host import McpHost  # noqa: E402
from tools.mcp.tasks import TaskState, TaskWatch  # noqa: E402
from tools.registry import ToolRegistry  # noqa: E402


async def main(config: Path, tool: str, arguments: str) -> None:
    registry = ToolRegistry("mcp")
    host = McpHost(config, registry=registry)
    host.start()
    host.wait_until_sync(all_settled, START_TIMEOUT)
    told = False

    def on_status(state: TaskState) -> None:
        nonlocal told
        if not told:
            told = True
            print(json.dumps({"task": state.task_id, "session": state.session}), flush=True)

    context = CallContext.of(None, watch=TaskWatch(on_status))
    await registry.get(tool).execute(arguments, context)
    await asyncio.Event().wait()  # the test kills this process


if __name__ == "__main__":
    asyncio.run(main(Path(sys.argv[1]), sys.argv[2], sys.argv[3]))
