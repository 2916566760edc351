"""Shared fixtures: personas (alice, bob, carol, an auditor, a curator) and recording fakes."""

from __future__ import annotations

import asyncio
import contextlib
import os
from dataclasses import dataclass, field
from typing import Any

import pytest
from asgiref.sync import SyncToAsync
from django.contrib.auth.models import Group
from django.core.cache import caches
from django.core.cache.backends.locmem import LocMemCache
from django.db import connections
from django.test import override_settings

from agents.events import close_writer_connection
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
    user = _user(django_user_model, "curtis", password, is_staff=True)
    user.groups.add(Group.objects.get(name="Catalog curators"))
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
