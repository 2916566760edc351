"""When the MCP host starts: once, when a process serves its first scope (aptix/startup.py wraps the
ASGI application), never because aptix.asgi was imported, and not at all with APTIX_MCP_AUTOSTART
off. The process-level checks run in a subprocess, so this test process keeps no host."""

from __future__ import annotations

import gc
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.conf import settings

from agents.catalog_tests.execute import start_catalog_tests
from agents.run.runners import start_runs
from aptix.asgi import application, router
from aptix.startup import RunOnFirstScope
from aptix.tracing import TracingMiddleware
from automations.scheduler import start_automations
from files.knowledge import start_knowledge_indexer
from tools.mcp.host import start_mcp_host

pytestmark = pytest.mark.slow  # real subprocesses (servers, workers, web processes)

ROOT = Path(settings.BASE_DIR)
# Imports the application, then serves two lifespan scopes (the router refuses them, after the hooks
# ran), printing the host's status and whether its thread runs after each step.
SERVE_TWICE = """
import asyncio, threading
import aptix.asgi
from tools.mcp.host import mcp_status

def report():
    threads = [t.name for t in threading.enumerate()].count("aptix-mcp")
    print([f"{s.name}:{s.state}" for s in mcp_status()], threads, flush=True)

async def serve():
    try:
        await aptix.asgi.application({"type": "lifespan"}, None, None)
    except ValueError:
        pass

report()
asyncio.run(serve())
report()
asyncio.run(serve())
report()
"""


def serve_twice(tmp_path: Path, autostart: str) -> list[str]:
    config = tmp_path / "mcp.json"
    config.write_text(json.dumps({"mcpServers": {"archive": {"command": "archive-server", "disabled": True}}}))
    env = {
        "PATH": os.environ["PATH"],
        "DJANGO_SETTINGS_MODULE": "aptix.settings",
        "SECRET_KEY": "test-only",
        "DEBUG": "false",
        "APTIX_VAR_DIR": str(tmp_path / "var"),
        "APTIX_MCP_CONFIG": str(config),
        "APTIX_MCP_AUTOSTART": autostart,
    }
    done = subprocess.run(
        [sys.executable, "-c", SERVE_TWICE], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.splitlines()


def test_the_host_starts_on_the_first_scope_served_not_on_import(tmp_path):
    assert serve_twice(tmp_path, "true") == ["[] 0", "['archive:disabled'] 1", "['archive:disabled'] 1"]


def test_autostart_off_starts_nothing_even_when_serving(tmp_path):
    assert serve_twice(tmp_path, "false") == ["[] 0", "[] 0", "[] 0"]


def test_the_application_wraps_the_router_with_the_start_up_hooks():
    """The MCP host, the runner's orphan sweep, the taker of queued catalog test runs, the knowledge
    indexer's sweep of the documents left pending, and the automations' clock."""
    assert isinstance(application, RunOnFirstScope)
    assert isinstance(application.app, TracingMiddleware)  # the spans of requests and websockets (aptix/tracing.py)
    assert application.app.app is router
    hooks = (start_mcp_host, start_runs, start_catalog_tests, start_knowledge_indexer, start_automations)
    assert application.hooks == hooks


async def test_hooks_run_once_before_the_first_scope_is_handed_on():
    calls = []

    async def app(scope, receive, send):
        calls.append(scope["type"])

    wrapped = RunOnFirstScope(app, hooks=[lambda: calls.append("hook 1"), lambda: calls.append("hook 2")])
    assert not wrapped.started

    await wrapped({"type": "http"}, None, None)
    await wrapped({"type": "websocket"}, None, None)

    assert wrapped.started
    assert calls == ["hook 1", "hook 2", "http", "websocket"]


def test_after_the_hooks_what_start_up_made_is_frozen_out_of_the_collectors_way():
    gc.unfreeze()
    try:
        RunOnFirstScope(None, hooks=[]).run_hooks()
        assert gc.get_freeze_count() > 0  # full collections no longer walk the long-lived objects
    finally:
        gc.unfreeze()  # this test process goes on making and dropping objects


async def test_a_failing_hook_fails_the_first_scope_and_is_not_run_again():
    calls = []

    def hook():
        calls.append("hook")
        raise RuntimeError("no MCP today")

    async def app(scope, receive, send):
        calls.append(scope["type"])

    wrapped = RunOnFirstScope(app, hooks=[hook])
    with pytest.raises(RuntimeError, match="no MCP today"):
        await wrapped({"type": "http"}, None, None)
    await wrapped({"type": "http"}, None, None)

    assert calls == ["hook", "http"]
