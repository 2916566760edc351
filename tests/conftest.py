"""Shared fixtures: personas (alice, bob, carol, an auditor, a curator) and recording fakes."""

from __future__ import annotations

import asyncio
import contextlib
import os
import time
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

import django_ratelimit.core
import pytest
from asgiref.sync import SyncToAsync
from django.contrib.auth.models import Group
from django.core.cache import caches
from django.core.cache.backends.locmem import LocMemCache
from django.db import DEFAULT_DB_ALIAS, connections, transaction
from django.test import override_settings

from agents.events import close_writer_connection
from agents.events.writer import db_threads_inline
from agents.web.renders import close_render_connection
from aptix.models import Membership, Team


def _own_redis_database() -> None:
    """Under pytest-xdist each worker has a Redis database of its own (1, 2, … of the server
    bin/with-redis started): the run queue, the channel layer's keys and the rate counts of one
    worker's tests never meet another's. Here, before any test module reads APTIX_TEST_REDIS_URL."""
    url, worker = os.environ.get("APTIX_TEST_REDIS_URL", ""), os.environ.get("PYTEST_XDIST_WORKER", "")
    if url and worker.startswith("gw"):
        base = url.rsplit("/", 1)[0] if url.count("/") > 2 else url
        os.environ["APTIX_TEST_REDIS_URL"] = f"{base}/{int(worker[2:]) + 1}"


_own_redis_database()


@pytest.fixture(autouse=True, scope="session")
def _no_mcp_autostart():
    """Serving aptix.asgi.application runs its start-up hooks (aptix/startup.py), which would spawn
    the MCP servers of mcp.json: tests start a host themselves when they need one
    (tests/tools/mcp/test_mcp_host.py). Session-scoped: in force before any module's fixtures."""
    with override_settings(APTIX_MCP_AUTOSTART=False, APTIX_RUN_SWEEP=False, APTIX_AUTO_TITLES=False):
        yield  # titles off: a scripted model's queued replies are each turn's (tests/agents/run/test_titles.py: on)


@pytest.fixture(autouse=True)
def _close_async_thread_connections():
    """After async tests the sync_to_async thread keeps its DB connection open; on PostgreSQL the
    test database then cannot be dropped. Close it on that thread after each test."""
    yield
    executor = getattr(SyncToAsync, "single_thread_executor", None)
    if executor is not None:
        with contextlib.suppress(Exception):  # best effort clean-up
            executor.submit(connections.close_all).result(timeout=10)
    close_writer_connection()  # the event writer's thread, likewise
    close_render_connection()  # the live renders' thread (agents/web/renders.py), likewise


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items):
    """`inline_db` (tests/helpers) is a plain `django_db` test: one transaction, rolled back."""
    for item in items:
        if item.get_closest_marker("inline_db") and not item.get_closest_marker("django_db"):
            item.add_marker(pytest.mark.django_db)


def _restores_seed_data(item) -> bool:
    """Whether the test is a `transaction=True, serialized_rollback=True` one (tests/helpers `async_db`):
    Django reloads the migrations' seed data (the catalog, the staff groups) at its start and flushes
    every table at its end."""
    marker = item.get_closest_marker("django_db")
    fixtures = getattr(item, "fixturenames", ())
    transactional = bool(marker and marker.kwargs.get("transaction")) or "transactional_db" in fixtures
    serialized = bool(marker and marker.kwargs.get("serialized_rollback"))
    serialized = serialized or "django_db_serialized_rollback" in fixtures
    return transactional and serialized


_flushed = False  # the last test was one of those: the tables are empty until they are reloaded


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item):
    """After a transactional test the database is empty; the tests that run in one transaction expect
    what the migrations left (the seed data). A single process runs those first and the transactional
    ones last (pytest-django orders them so), but a pytest-xdist worker given whole files
    (`--dist loadfile`, the slow tier) runs them in turns: reload the seed data, as the next
    transactional test would, before any other test that follows one."""
    global _flushed  # noqa: PLW0603 - one flag for this process, as the database is
    if not _flushed:
        return
    _flushed = False
    if _restores_seed_data(item):
        return  # it reloads them itself
    from pytest_django.plugin import blocking_manager_key

    with item.config.stash[blocking_manager_key].unblock():
        for connection in connections.all():
            contents = getattr(connection, "_test_serialized_contents", None)
            if contents:
                connection.creation.deserialize_db_from_string(contents)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_teardown(item, nextitem):
    global _flushed  # noqa: PLW0603
    try:
        return (yield)
    finally:
        _flushed = _flushed or _restores_seed_data(item)


@pytest.fixture(autouse=True)
def _inline_db(request, monkeypatch):
    """For `inline_db` tests: asgiref's sync thread (where the async ORM, Channels' consumers and,
    with agents.events.writer.db_threads_inline, the turn's event writes and live renders run) is
    handed this thread's connection, which holds the test's transaction. The two threads take turns:
    this one runs the event loop while the test runs. Within it:
    - Channels' `close_old_connections` around each consumer call is off (it would close the
      connection, which is not in autocommit inside the test's transaction, and lose it);
    - `transaction.on_commit` callbacks run when the outermost block of the code under test ends, as
      they would at its commit (a plain `django_db` test would drop them: broadcasts after a write)."""
    if request.node.get_closest_marker("inline_db") is None:
        yield
        return
    request.getfixturevalue("_django_db_helper")  # the test's transaction is open
    connection = connections[DEFAULT_DB_ALIAS]
    depth = len(connection.atomic_blocks)
    executor = SyncToAsync.single_thread_executor
    own = executor.submit(lambda: getattr(connections._connections, DEFAULT_DB_ALIAS, None)).result()
    connection.inc_thread_sharing()
    executor.submit(connections.__setitem__, DEFAULT_DB_ALIAS, connection).result()

    import channels.db

    monkeypatch.setattr(channels.db, "close_old_connections", lambda: None)
    _commit_callbacks_at_depth(monkeypatch, connection, depth)
    pending, connection.run_on_commit = connection.run_on_commit, []
    for _, func, _robust in pending:  # the fixtures' writes before this one: as if committed
        func()
    try:
        with db_threads_inline():
            yield
    finally:
        executor.submit(_restore_thread_connection, own).result()
        connection.dec_thread_sharing()


def _restore_thread_connection(own) -> None:
    if own is None:
        with contextlib.suppress(AttributeError):
            delattr(connections._connections, DEFAULT_DB_ALIAS)
    else:
        connections[DEFAULT_DB_ALIAS] = own


def _commit_callbacks_at_depth(monkeypatch, connection, depth: int) -> None:
    """on_commit callbacks run as if the test's transaction were autocommit: at once outside any
    block of the code under test, else when its outermost block ends without error (a savepoint
    rolled back drops its callbacks, as Django does)."""

    def run(callbacks) -> None:
        for _, func, robust in callbacks:
            if robust:
                with contextlib.suppress(Exception):
                    func()
            else:
                func()

    original_on_commit = connection.on_commit

    def on_commit(func, robust=False):
        if len(connection.atomic_blocks) <= depth:
            run([(set(), func, robust)])
        else:
            original_on_commit(func, robust)

    monkeypatch.setattr(connection, "on_commit", on_commit)
    original_exit = transaction.Atomic.__exit__

    def exit_(self, exc_type, exc_value, traceback):
        result = original_exit(self, exc_type, exc_value, traceback)
        if (
            transaction.get_connection(self.using) is connection
            and len(connection.atomic_blocks) == depth
            and connection.run_on_commit
        ):
            callbacks, connection.run_on_commit = connection.run_on_commit, []
            if exc_type is None:
                run(callbacks)
        return result

    monkeypatch.setattr(transaction.Atomic, "__exit__", exit_)


@pytest.fixture(autouse=True)
def _fast_password_hashing(settings):
    # PBKDF2's deliberate slowness costs seconds across the suite; tests need no such protection.
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture(autouse=True)
def _fresh_rate_limits():
    """Request rate counts (aptix/ratelimits.py) live in the cache, in this process for the tests:
    users and addresses repeat from test to test, so each test starts with none counted. (A Redis
    cache, with REDIS_URL set, is left alone: clearing it would flush the whole database.)"""
    if isinstance(caches["default"], LocMemCache):
        caches["default"].clear()


@pytest.fixture(autouse=True)
def _rate_windows_stand_still(monkeypatch):
    """django-ratelimit counts in fixed windows aligned to the clock (its `_get_window`), so a test
    whose requests straddle a window's edge — a "2/m" limit reached at hh:mm:59.9 — saw its count
    start again and the third request pass (a flake under load). Its clock stands still for each test:
    no test waits for a window to end. Processes a test starts count on the real clock."""
    now = time.time()
    monkeypatch.setattr(django_ratelimit.core, "time", SimpleNamespace(time=lambda: now))


@pytest.fixture(scope="session")
def oidc_provider(tmp_path_factory):
    """A real OpenID Connect provider process (tests/oidc_provider/), started once for the run by the
    first test that asks for it (tests/helpers/oidc.py drives it)."""
    from tests.helpers.oidc import OidcProvider

    provider = OidcProvider(tmp_path_factory.mktemp("oidc-provider")).start()
    yield provider
    provider.stop()


@pytest.fixture
def password() -> str:
    return "correct-horse-battery-staple"


@pytest.fixture
def team_a(db) -> Team:
    return Team.objects.create(name="Team A", slug="team-a")


@pytest.fixture
def team_b(db) -> Team:
    return Team.objects.create(name="Team B", slug="team-b")


def _user(django_user_model, username, password, **extra):
    return django_user_model.objects.create_user(username=username, password=password, **extra)


@pytest.fixture
def alice(django_user_model, password, team_a):
    user = _user(django_user_model, "alice", password)
    Membership.objects.create(team=team_a, user=user, role=Membership.Role.OWNER)
    return user


@pytest.fixture
def bob(django_user_model, password, team_a):
    user = _user(django_user_model, "bob", password)
    Membership.objects.create(team=team_a, user=user)
    return user


@pytest.fixture
def carol(django_user_model, password, team_b):
    user = _user(django_user_model, "carol", password)
    Membership.objects.create(team=team_b, user=user)
    return user


@pytest.fixture
def auditor(django_user_model, password):
    user = _user(django_user_model, "audrey", password, is_staff=True)
    user.groups.add(Group.objects.get(name="Auditors"))
    return user


@pytest.fixture
def curator(django_user_model, password):
    """A curator who maintains the catalog: edits and publishes (an edit is live at once with review off)."""
    user = _user(django_user_model, "curtis", password, is_staff=True)
    user.groups.add(Group.objects.get(name="Catalog curators"), Group.objects.get(name="Catalog publishers"))
    return user


@dataclass
class RecordingLogger:
    """An IAdminLogger that remembers what it was told."""

    errors: list[tuple[str, dict]] = field(default_factory=list)
    exceptions: list[tuple[BaseException, str, dict]] = field(default_factory=list)

    def add_error(self, message: str, **fields: Any) -> None:
        self.errors.append((message, fields))

    def add_exception(self, exc: BaseException, tag: str, **fields: Any) -> None:
        self.exceptions.append((exc, tag, fields))


@pytest.fixture
def recording_logger() -> RecordingLogger:
    return RecordingLogger()


@pytest.fixture
def run():
    """Run a coroutine to completion from a sync test (no event loop, no database thread games)."""
    return asyncio.run
