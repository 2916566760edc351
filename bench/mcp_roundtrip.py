"""Benchmark: MCP tool calls over the host's persistent sessions versus a server spawned per call,
and the time until the servers of the shipped mcp.json are ready.

- persistent, through the registry: `McpToolEntry.execute` of a no-op tool awaited from the
  caller's own event loop, so the figures include the hop to the host's thread and back;
- persistent, direct: `session.call_tool` on a connection owned by the caller's loop;
- spawn per call: connect (spawn + handshake), call once, disconnect;
- start-up: `McpHost.start()` until every server of mcp.json (time, sql, notes) is ready. The demo
  database is built first when tools.demo_data is available; otherwise sql is skipped.

Targets: p95 <= 10 ms per persistent call; all default servers ready <= 2 s.

    .venv/bin/python bench/mcp_roundtrip.py [--calls 1000] [--spawns 20] [--starts 5]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tools.mcp.config import load_config, parse_config
from tools.mcp.connection import connect
from tools.mcp.host import McpHost
from tools.registry import ToolRegistry

NOOP_SERVER = (
    "from mcp.server.mcpserver import MCPServer\n"
    "server = MCPServer('bench')\n"
    "@server.tool()\n"
    "def noop() -> str:\n"
    "    '''Do nothing.'''\n"
    "    return 'ok'\n"
    "server.run()\n"
)
NOOP_CONFIG = {"bench": {"command": "python", "args": ["-c", NOOP_SERVER]}}


def percentiles(samples: list[float]) -> str:
    ordered = sorted(samples)

    def ms(quantile: float) -> float:
        return ordered[min(len(ordered) - 1, int(len(ordered) * quantile))] * 1000

    return f"p50 {ms(0.5):6.2f} ms   p95 {ms(0.95):6.2f} ms   p99 {ms(0.99):6.2f} ms"


async def timed(call, count: int) -> list[float]:
    samples = []
    for _ in range(count):
        start = time.perf_counter()
        await call()
        samples.append(time.perf_counter() - start)
    return samples


def through_registry(config_path: Path, calls: int) -> list[float]:
    registry = ToolRegistry("mcp")
    host = McpHost(config_path, registry=registry)
    host.start()
    try:
        host.wait_until_sync(lambda statuses: all(s.state == "ready" for s in statuses), 60)
        entry = registry.get("bench__noop")

        async def run() -> list[float]:
            await timed(lambda: entry.execute("{}", None), 50)  # warm-up
            return await timed(lambda: entry.execute("{}", None), calls)

        return asyncio.run(run())
    finally:
        host.stop()


async def direct(server, calls: int) -> list[float]:
    async with connect(server) as connection:
        session = connection.client.session
        await timed(lambda: session.call_tool("noop", {}), 50)
        return await timed(lambda: session.call_tool("noop", {}), calls)


async def spawn_per_call(server, spawns: int) -> list[float]:
    async def once():
        async with connect(server) as connection:
            await connection.client.call_tool("noop", {})

    return await timed(once, spawns)


def default_servers_ready(starts: int) -> tuple[list[float], dict[str, int], str]:
    """Seconds from `start()` until every server is ready, for `starts` fresh hosts."""
    note = ""
    try:
        from tools.demo_data import build_demo_database

        build_demo_database(ROOT / "var" / "demo.sqlite3")
    except ImportError:
        note = " (tools.demo_data is missing: sql skipped)"
    config = ROOT / "mcp.json"
    if note:
        servers = {
            s.name: {"command": s.command, "args": list(s.args)} for s in load_config(config).servers if s.name != "sql"
        }
        config = Path(tempfile.mkdtemp(prefix="aptix-bench-")) / "mcp.json"
        config.write_text(json.dumps({"mcpServers": servers}))
    times = []
    for _ in range(starts):
        host = McpHost(config, registry=ToolRegistry("mcp"))
        start = time.perf_counter()
        host.start()
        try:
            statuses = host.wait_until_sync(lambda all_: all(s.settled for s in all_), 60)
            times.append(time.perf_counter() - start)
        finally:
            host.stop()
        failed = [f"{s.name}: {s.error}" for s in statuses if s.state != "ready"]
        if failed:
            raise SystemExit("not ready: " + "; ".join(failed))
    return times, {s.name: len(s.tools) for s in statuses}, note


def main(calls: int, spawns: int, starts: int) -> None:
    workdir = Path(tempfile.mkdtemp(prefix="aptix-bench-"))
    config_path = workdir / "mcp.json"
    config_path.write_text(json.dumps({"mcpServers": NOOP_CONFIG}))
    (server,) = parse_config({"mcpServers": NOOP_CONFIG}, path=config_path, environ={}).servers

    bridged = through_registry(config_path, calls)
    raw = asyncio.run(direct(server, calls))
    spawned = asyncio.run(spawn_per_call(server, spawns))
    ready, tools, note = default_servers_ready(starts)

    print(f"mcp_roundtrip: no-op tool call, {calls} calls per persistent variant, {spawns} spawns")
    print(f"  persistent, via registry entry   {percentiles(bridged)}   (target p95 <= 10 ms)")
    print(f"  persistent, session.call_tool    {percentiles(raw)}")
    print(
        f"  spawn per call                   mean {statistics.mean(spawned) * 1000:6.0f} ms   "
        f"p50 {statistics.median(spawned) * 1000:6.0f} ms"
    )
    servers = ", ".join(f"{name} ({count} tools)" for name, count in tools.items())
    print(
        f"  default servers ready            median {statistics.median(ready):4.2f} s   max {max(ready):4.2f} s"
        f"   over {starts} starts: {servers}{note}   (target <= 2 s)"
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", type=int, default=1000)
    parser.add_argument("--spawns", type=int, default=20)
    parser.add_argument("--starts", type=int, default=5)
    arguments = parser.parse_args()
    main(arguments.calls, arguments.spawns, arguments.starts)
