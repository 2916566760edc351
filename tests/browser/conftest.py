"""Browser tests: Playwright's async API driving Debian's Chromium (headless) against a live Daphne
server (tests/browser/live.py) on loopback.

- Without Playwright or Chromium the tests are skipped with the reason, unless
  APTIX_REQUIRE_BROWSER=1, which makes that a failure. APTIX_CHROMIUM overrides /usr/bin/chromium.
- The browser tests run in one event loop per test process (`pytest.mark.asyncio(loop_scope="session")`),
  which holds one Chromium for all of them (each test opens its pages in browser contexts of its
  own: cookies and storage are not shared) and, where a module needs one, the module's scripted
  model server; each module starts its own Daphne with the configuration it needs (fixture
  `daphne_env`).
- A failed test leaves a screenshot and the HTML of every page it opened, and the server's log,
  in var/test-artifacts/.
"""

from __future__ import annotations

import importlib.util
import os
import re
from pathlib import Path

import pytest
import pytest_asyncio
from asgiref.sync import sync_to_async

from agents.sessions import session_create
from tests.helpers import answered_turn
from tests.helpers.scripted_model import ScriptedModel, serve_on_loopback

from .live import LIVE_SECRET_KEY, LiveServer, ModelSwitchboard, artifact_name, save_artifacts

REQUIRE_BROWSER = os.environ.get("APTIX_REQUIRE_BROWSER") == "1"
CHROMIUM = Path(os.environ.get("APTIX_CHROMIUM", "/usr/bin/chromium"))
LAUNCH_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
DESKTOP = {"width": 1280, "height": 860}
EXPECT_TIMEOUT_MS = 10_000  # a 2-core machine running Chromium, Daphne and pytest at once
# Instrumentation added to every page: counts the websocket (re)connections of the htmx ws extension,
# so a test can wait until the live stream is open instead of sleeping.
STREAM_PROBE = """
document.addEventListener("htmx:wsOpen", function () {
  window.__aptixStreamOpened = (window.__aptixStreamOpened || 0) + 1;
});
"""


def _missing() -> str | None:
    if importlib.util.find_spec("playwright") is None:
        return "Playwright is not installed (pip install -e '.[test]')"
    if not (CHROMIUM.is_file() and os.access(CHROMIUM, os.X_OK)):
        return f"Chromium is not installed at {CHROMIUM} (apt-get install -y chromium)"
    return None


MISSING = _missing()
if MISSING is None:
    from playwright.async_api import async_playwright, expect

    expect.set_options(timeout=EXPECT_TIMEOUT_MS)


@pytest.hookimpl(tryfirst=True)  # before `-m "not slow"` deselects by marker
def pytest_collection_modifyitems(config, items):
    here = Path(__file__).parent
    for item in items:
        if here in Path(item.path).parents:
            item.add_marker(pytest.mark.slow)  # a real browser and a live server
    if MISSING is None or REQUIRE_BROWSER:
        return
    skip = pytest.mark.skip(reason=f"browser tests: {MISSING}; set APTIX_REQUIRE_BROWSER=1 to fail instead")
    for item in items:
        if here in Path(item.path).parents:
            item.add_marker(skip)


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_makereport(item, call):
    """Keep each phase's report on the item (`rep_setup`, `rep_call`), for the artefact fixture."""
    report = yield
    setattr(item, f"rep_{report.when}", report)
    return report


@pytest_asyncio.fixture(scope="session", loop_scope="session")
async def browser():
    """One Chromium for the test process (a pytest-xdist worker): launching Playwright's driver and
    the browser costs about two seconds, once instead of once per module."""
    if MISSING is not None:
        pytest.fail(f"APTIX_REQUIRE_BROWSER=1 but {MISSING}")
    async with async_playwright() as playwright:
        chromium = await playwright.chromium.launch(executable_path=str(CHROMIUM), args=LAUNCH_ARGS)
        yield chromium
        await chromium.close()


@pytest.fixture(scope="module")
def daphne_env() -> dict[str, str]:
    """Extra environment of the module's live server; modules override this fixture."""
    return {}


@pytest.fixture(scope="module")
def daphne_server(django_db_setup, daphne_env, tmp_path_factory):
    """Daphne on the test database, started once per module (after pytest-django created the
    database) and stopped before the database is dropped."""
    server = LiveServer(var_dir=tmp_path_factory.mktemp("live"), env=daphne_env).start()
    yield server
    server.stop()


@pytest_asyncio.fixture(loop_scope="session")
async def open_page(browser, daphne_server, request):
    """`await open_page()` → a page in a fresh browser context (its own cookies) on the live server.
    After the test: artefacts of every page when it failed, no uncaught JavaScript errors and no
    Content-Security-Policy violations."""
    pages, errors = [], []

    async def open_(*, viewport: dict | None = None, color_scheme: str = "light", **context_options):
        context = await browser.new_context(
            base_url=daphne_server.url, viewport=viewport or DESKTOP, color_scheme=color_scheme, **context_options
        )
        context.set_default_timeout(EXPECT_TIMEOUT_MS)
        await context.add_init_script(STREAM_PROBE)
        page = await context.new_page()
        page.on("pageerror", lambda exc: errors.append(f"{page.url}: {exc}"))
        # The Content-Security-Policy is on (django-csp): nothing the app does may violate it. An MCP
        # App's own document (about:srcdoc, in its sandbox: tests/browser/test_mcp_apps.py) is not
        # Aptix's: its CSP refusing what the app tries is that policy working.
        page.on(
            "console",
            lambda message: (
                errors.append(f"{page.url}: {message.text}")
                if "Content Security Policy" in message.text and message.location.get("url") != "about:srcdoc"
                else None
            ),
        )
        pages.append(page)
        return page

    yield open_
    report = getattr(request.node, "rep_call", None)
    if report is None or report.failed:
        await save_artifacts(artifact_name(request.node.nodeid), pages, daphne_server)
    for page in pages:
        await page.context.close()
    assert not errors, f"uncaught JavaScript errors: {errors}"


@pytest.fixture
def make_session(team_a, alice):
    """`await make_session(**fields)`: a session of alice's in team A (modules may define their own)."""
    return sync_to_async(lambda **kwargs: session_create(team=team_a, user=alice, **kwargs))


@pytest.fixture
def answered_session(team_a, alice):
    """`await answered_session(title, answer, question)`: a session of alice's in team A whose one
    turn asked `question` and ended with `answer`."""
    return sync_to_async(lambda *args: answered_turn(team_a, alice, *args).session)


def signed_in_session(user) -> str:
    """The key of a new Django session in which `user` is signed in, as the live server's login would
    store it (its data and the user's auth hash signed with the live server's SECRET_KEY)."""
    from importlib import import_module

    from django.conf import settings
    from django.contrib.auth import BACKEND_SESSION_KEY, HASH_SESSION_KEY, SESSION_KEY
    from django.test import override_settings
    from django.utils.crypto import salted_hmac

    with override_settings(SECRET_KEY=LIVE_SECRET_KEY):
        store = import_module(settings.SESSION_ENGINE).SessionStore()
        store[SESSION_KEY] = user._meta.pk.value_to_string(user)
        store[BACKEND_SESSION_KEY] = "django.contrib.auth.backends.ModelBackend"
        store[HASH_SESSION_KEY] = salted_hmac(
            "django.contrib.auth.models.AbstractBaseUser.get_session_auth_hash",
            user.password,
            secret=LIVE_SECRET_KEY,
            algorithm="sha256",
        ).hexdigest()
        store.create()
    return store.session_key


@pytest.fixture
def sign_in(open_page, daphne_server):
    """`await sign_in(user)` → a page signed in as `user`, on the home page. The sign-in itself is the
    session the login form would make, put in the browser's cookies: each test's database is new (its
    users with it), so a module cannot keep one saved sign-in; a session costs no round trip through
    the form (tests/browser/test_workspace.py and the sign-in tests go through the form itself)."""

    async def sign_in_(user, **page_options):
        from django.conf import settings

        page = await open_page(**page_options)
        key = await sync_to_async(signed_in_session)(user)
        await page.context.add_cookies(
            [{"name": settings.SESSION_COOKIE_NAME, "value": key, "url": daphne_server.url, "httpOnly": True}]
        )
        await page.goto("/")
        await expect(page).to_have_url(re.compile(r"/$"))
        # The page's deferred scripts (the composer's listeners) run after the load starts: a test
        # acting at once (set_input_files) would otherwise outrun them.
        await page.wait_for_load_state("load")
        return page

    return sign_in_


@pytest.fixture
def sign_in_with_the_form(open_page, password):
    """`await sign_in_with_the_form(user)` → a page signed in as `user` through the real login form."""

    async def sign_in_(user, **page_options):
        page = await open_page(**page_options)
        await page.goto("/login/")
        await page.fill("#id_username", user.username)
        await page.fill("#id_password", password)
        await page.click("form button[type=submit]")
        await expect(page).to_have_url(re.compile(r"/$"))
        await page.wait_for_load_state("load")
        return page

    return sign_in_


@pytest_asyncio.fixture(scope="module", loop_scope="session")
async def switchboard():
    """A module's scripted model (`model`), served on loopback for its live server (`daphne_env`
    returns `scripted_env(switchboard)`). It runs in the browser tests' event loop, which the tests
    keep running while the browser waits (Playwright's async API)."""
    board = ModelSwitchboard()
    url, stop = await serve_on_loopback(board)
    board.url = url
    yield board
    await stop()


@pytest.fixture
def model(switchboard):
    switchboard.model = ScriptedModel()
    yield switchboard.model
    switchboard.model = None
