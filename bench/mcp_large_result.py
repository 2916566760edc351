"""Benchmark: CPU time the MCP host spends reading one large tool result over stdio.

The host reads every server's output on one shared thread ("aptix-mcp"), so reading must be linear
in the size of a message. This calls a tool answering with 5, 20 and 40 MB of text and prints, per
size, the wall time and the CPU time of the host thread (`time.thread_time()` on that thread) for
the call. A result over the server's `max_message_mb` (default 16) is refused with a tool error, so
the server here is configured with a limit above the largest size.

    .venv/bin/python bench/mcp_large_result.py [--sizes 5 20 40]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tools.mcp.host import McpHost
from tools.registry import ToolRegistry

BIG_SERVER = (
    "from mcp.server.mcpserver import MCPServer\n"
    "server = MCPServer('bench')\n"
    "@server.tool()\n"
    "def big(megabytes: float) -> str:\n"
    "    '''Answer with that many megabytes of text.'''\n"
    "    return 'x' * int(megabytes * 1_000_000)\n"
    "server.run()\n"
)


def host_thread_cpu(host: McpHost) -> float:
    """CPU seconds of the host's thread so far, measured on that thread."""
    return asyncio.run_coroutine_threadsafe(_thread_time(), host._started_loop()).result()


async def _thread_time() -> float:
    return time.thread_time()


def main(sizes: list[float]) -> None:
    config = Path(tempfile.mkdtemp(prefix="aptix-bench-")) / "mcp.json"
    limit = max(sizes) * 2 + 16
    server = {"command": "python", "args": ["-c", BIG_SERVER], "max_message_mb": limit, "timeout": 300}
    config.write_text(json.dumps({"mcpServers": {"bench": server}}))
    registry = ToolRegistry("mcp")
    host = McpHost(config, registry=registry)
    host.start()
    try:
        host.wait_until_sync(lambda statuses: all(s.state == "ready" for s in statuses), 60)
        entry = registry.get("bench__big")
        print("mcp_large_result: one tool result of N MB over stdio; CPU = the host thread's CPU time")
        for size in sizes:
            cpu, wall = host_thread_cpu(host), time.perf_counter()
            result = asyncio.run(entry.execute(json.dumps({"megabytes": size}), None))
            cpu, wall = host_thread_cpu(host) - cpu, time.perf_counter() - wall
            assert result.successful and len(result.result) == int(size * 1_000_000), result.error_message
            print(f"  {size:5g} MB   wall {wall:6.2f} s   host CPU {cpu:6.2f} s")
    finally:
        host.stop()


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", type=float, nargs="+", default=[5, 20, 40])
    main(parser.parse_args().sizes)
