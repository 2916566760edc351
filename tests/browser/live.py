"""The live server of the browser tests: `manage.py aptix_serve` (Daphne, as `make run` starts it) as a
real subprocess on loopback, sharing the test database pytest-django created (its data must be committed: the tests use
`async_db`, i.e. transaction=True), plus the page helpers the tests share (open a session, send,
wait for a turn to end).

Why a subprocess: Channels' live server test case forks the test process, which hangs on database
calls after async tests and fights Playwright's event loop (STACK_NOTES "Browser tests").
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import quote

from django.conf import settings
from django.db import connection

from tests.helpers.scripted_model import ScriptedModel

try:
    from playwright.async_api import expect
except ImportError:  # conftest skips the browser tests (or fails them under APTIX_REQUIRE_BROWSER=1)
    expect = None

ROOT = Path(settings.BASE_DIR)
ARTIFACTS = ROOT / "var" / "test-artifacts"
START_TIMEOUT = 30.0
LIVE_SECRET_KEY = "browser-tests-only-secret-key"  # the live server's: sessions the tests make are signed with it
# Settings the live server must not inherit from the environment of the test run: a DATABASE_URL names
# the non-test database, a REDIS_URL would send turns to runworker processes that do not run here,
# a real provider's key would replace the model the module chose.
INHERITED_NOT = {
    "DATABASE_URL",
    "REDIS_URL",
    "OPENAI_API_KEY",
    "OPENAI_BASE_URL",
    "APTIX_LLM_MODEL",
    "APTIX_MCP_CONFIG",
    "APTIX_MCP_AUTOSTART",
    "APTIX_VAR_DIR",
    "DJANGO_SETTINGS_MODULE",
    "ALLOWED_HOSTS",
    "CSRF_TRUSTED_ORIGINS",
    "APTIX_HTTPS",
    "APTIX_DEMO_DB",
}


def live_database_url() -> str:
    """A DATABASE_URL for the database this test run uses (pytest-django's test database)."""
    s = connection.settings_dict
    if connection.vendor == "sqlite":
        name = str(s["NAME"])
        if name == ":memory:" or name.startswith("file:"):
            raise RuntimeError("The browser tests need a file-based SQLite test database (settings TEST NAME).")
        return f"sqlite:///{Path(name).resolve()}"
    if connection.vendor != "postgresql":
        raise RuntimeError(f"No live-server database URL for {connection.vendor}.")
    user = quote(s.get("USER") or "", safe="")
    password = quote(str(s.get("PASSWORD") or ""), safe="")
    credentials = f"{user}:{password}@" if password else (f"{user}@" if user else "")
    host = quote(s.get("HOST") or "", safe="")  # a socket directory becomes %2F...
    port = f":{s['PORT']}" if s.get("PORT") else ""
    return f"postgresql://{credentials}{host}{port}/{quote(s['NAME'], safe='')}"


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@dataclass
class LiveServer:
    """One Daphne process. `env` is added to a cleaned copy of this process's environment."""

    var_dir: Path
    env: dict[str, str] = field(default_factory=dict)
    port: int = 0
    process: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def log_path(self) -> Path:
        return self.var_dir / "daphne.log"

    def log_text(self) -> str:
        try:
            return self.log_path.read_text(errors="replace")
        except FileNotFoundError:
            return ""

    def start(self, port: int | None = None, *, wait_ready: bool = True) -> LiveServer:
        """Start Daphne; with `wait_ready`, wait until it answers a request (which is its first scope:
        a test of what happens before any request passes False)."""
        self.var_dir.mkdir(parents=True, exist_ok=True)
        self.port = port or free_port()
        env = {k: v for k, v in os.environ.items() if k not in INHERITED_NOT}
        env.update(
            {
                "DJANGO_SETTINGS_MODULE": "tests.browser.live_settings",
                "DATABASE_URL": live_database_url(),
                "SECRET_KEY": LIVE_SECRET_KEY,
                "DEBUG": "false",
                "ALLOWED_HOSTS": "127.0.0.1,localhost",
                "APTIX_VAR_DIR": str(self.var_dir),  # media (generated images) and static root live here
                "APTIX_MCP_AUTOSTART": "false",
                # MCP Apps framed from another host name of this same server (aptix/apps_origin.py), not
                # from a second port another test's server may be given
                "APTIX_MCP_APPS_ORIGIN": f"http://localhost:{self.port}",
                "PYTHONUNBUFFERED": "1",
                **self.env,
            }
        )
        with self.log_path.open("w") as log:
            # A session of its own, so stop() also ends the MCP servers Daphne spawned.
            self.process = subprocess.Popen(
                [sys.executable, "manage.py", "aptix_serve", "-b", "127.0.0.1", "-p", str(self.port)],
                cwd=ROOT,
                env=env,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        try:
            if wait_ready:
                self._wait_ready()
        except BaseException:
            self.stop()
            raise
        return self

    def _wait_ready(self) -> None:
        """Poll until /login/ answers 200 (Django imported, the database reachable)."""
        deadline = time.monotonic() + START_TIMEOUT
        while True:
            if self.process.poll() is not None:
                raise RuntimeError(f"Daphne exited with {self.process.returncode}:\n{self.log_text()[-4000:]}")
            try:
                with urllib.request.urlopen(f"{self.url}/login/", timeout=2) as response:
                    if response.status == 200:
                        return
            except (urllib.error.URLError, ConnectionError, TimeoutError):
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(f"Daphne did not answer within {START_TIMEOUT} s:\n{self.log_text()[-4000:]}")
            time.sleep(0.05)

    def restart(self) -> None:
        """Stop the server (and the MCP servers it spawned) and start a new one on the same port."""
        self.stop()
        self.start(self.port)

    def stop(self) -> None:
        process, self.process = self.process, None
        if process is None or process.poll() is not None:
            return
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
            process.wait(5)


def scripted_env(switchboard: ModelSwitchboard) -> dict[str, str]:
    """The live server's environment for talking to the module's scripted model."""
    return {
        "OPENAI_BASE_URL": f"{switchboard.url}/v1",
        "OPENAI_API_KEY": "test",
        "APTIX_LLM_MAX_RETRIES": "0",
        "APTIX_LLM_MODEL": "scripted-model",
        "APTIX_AUTO_TITLES": "false",  # the replies a test queues are its turns', not a title's
    }


class ModelSwitchboard:
    """The OpenAI-compatible server the live server talks to (OPENAI_BASE_URL), served once per test
    module. Each test plugs in a fresh ScriptedModel: its asyncio Events and queue belong to one test.
    With none plugged in, every request gets ScriptedModel's "no reply queued" error."""

    def __init__(self) -> None:
        self.model: ScriptedModel | None = None
        self.url = ""  # set by whoever serves it

    async def __call__(self, scope, receive, send) -> None:
        await (self.model or ScriptedModel())(scope, receive, send)


# --- page helpers ------------------------------------------------------------------------------------

SESSION_URL = re.compile(r"/sessions/([0-9a-f]{32})/$")


def session_id_of(url: str) -> str:
    match = SESSION_URL.search(url)
    assert match, f"not a session page: {url}"
    return match.group(1)


TURN_DONE_TIMEOUT_MS = 30_000


def turns(page):
    return page.locator("#timeline article.turn")


async def open_session(page, session_id: str) -> None:
    """Go to a session page and wait until its live stream is connected, as a user would see it."""
    await page.goto(f"/sessions/{session_id}/")
    await stream_open(page)


async def open_session_stream_held(page, session_id: str, until) -> None:
    """Go to a session page whose websocket reaches the server only once `until` (an asyncio.Event)
    is set: a slow network, for the moments a page is drawn but not yet streaming."""

    async def connect_late(ws):
        await until.wait()
        ws.connect_to_server()

    await page.route_web_socket("**/ws/sessions/**", connect_late)
    await page.goto(f"/sessions/{session_id}/")


async def stream_open(page) -> None:
    """Wait for the page's websocket (the probe in conftest counts the ws extension's opens)."""
    await page.wait_for_function("() => (window.__aptixStreamOpened || 0) > 0")  # a function: the CSP forbids eval


async def send(page, text: str) -> None:
    """Type a message in the composer and press Enter."""
    box = page.locator("#message")
    await expect(box).to_be_enabled()
    await box.fill(text)
    await box.press("Enter")


async def turn_ended(turn, status: str = "completed", timeout: float = TURN_DONE_TIMEOUT_MS) -> None:
    await expect(turn).to_have_class(re.compile(rf"\bstatus-{status}\b"), timeout=timeout)


def artifact_name(nodeid: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", nodeid.split("::", 1)[-1]).strip("_")[:150]


async def save_artifacts(name: str, pages: list, server: LiveServer | None = None) -> None:
    """A full-page screenshot and the HTML of each page (and the server's log) in var/test-artifacts/."""
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    for index, page in enumerate(pages):
        stem = ARTIFACTS / f"{name}-{index}"
        try:
            await page.screenshot(path=f"{stem}.png", full_page=True)
            Path(f"{stem}.html").write_text(await page.content())
        except Exception as exc:  # noqa: BLE001 - a closed or crashed page must not hide the failure
            Path(f"{stem}.txt").write_text(f"no screenshot: {exc}\n")
    if server is not None:
        (ARTIFACTS / f"{name}.server.log").write_text(server.log_text())
