"""What the MCP authorization flow keeps between its redirect and its callback, in the database (any
web process may take the callback; a process's local-memory cache is seen by that process alone):
found after the cache is emptied, used once, worthless once expired, stored without the state or
the verifier in clear; a dynamically registered client is kept for every process, the first one kept
winning."""

from __future__ import annotations

from datetime import timedelta

import pytest
from cryptography.fernet import Fernet
from django.contrib.auth import get_user_model
from django.core.cache import cache
from django.db import connection
from django.utils import timezone

from connections.authorizations import (
    authorization_save,
    authorization_server,
    authorization_take,
    client_key,
    registered_client,
    registered_client_save,
)
from connections.models import PendingAuthorization

STATE = "state-text-0123456789abcdefghijklmnopqrstuvwxyz"
VERIFIER = "verifier-text-abcdefghijklmnopqrstuvwxyz0123456789"
pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def key(settings):
    settings.APTIX_SECRETS_KEY = [Fernet.generate_key().decode()]


@pytest.fixture
def alice():
    return get_user_model().objects.create_user("alice", password="pw-alice-123")


def save(user, seconds: int = 600) -> None:
    values = {"verifier": VERIFIER, "redirect_uri": "https://aptix.example/mcp/oauth/callback", "client_id": "c"}
    authorization_save(state=STATE, user_id=user.pk, server="mine", values=values, seconds=seconds)


def test_a_pending_authorization_outlives_the_cache_and_is_taken_once(alice):
    save(alice)
    cache.clear()  # another process's cache: empty of this flow
    assert authorization_server(state=STATE) == "mine"
    values = authorization_take(state=STATE, user_id=alice.pk, server="mine")
    assert values is not None and values["verifier"] == VERIFIER
    assert authorization_take(state=STATE, user_id=alice.pk, server="mine") is None  # one use
    assert authorization_server(state=STATE) is None


def test_an_expired_one_is_worthless_and_swept(alice):
    save(alice, seconds=600)
    PendingAuthorization.objects.update(expires_at=timezone.now() - timedelta(seconds=1))
    assert authorization_server(state=STATE) is None
    assert authorization_take(state=STATE, user_id=alice.pk, server="mine") is None
    save(alice)
    other = "another-state-0123456789"
    PendingAuthorization.objects.update(expires_at=timezone.now() - timedelta(seconds=1))
    authorization_save(state=other, user_id=alice.pk, server="mine", values={}, seconds=600)
    assert PendingAuthorization.objects.count() == 1  # the expired one went when the next was kept


def test_another_users_callback_does_not_spend_the_state(alice):
    """A callback carrying alice's state, brought by someone else (or for another server), is refused
    and leaves it: alice's own callback still completes her connect."""
    bob = get_user_model().objects.create_user("bob", password="pw-bob-123")
    save(alice)
    assert authorization_take(state=STATE, user_id=bob.pk, server="mine") is None
    assert authorization_take(state=STATE, user_id=alice.pk, server="other") is None
    values = authorization_take(state=STATE, user_id=alice.pk, server="mine")
    assert values is not None and values["verifier"] == VERIFIER


def test_the_table_holds_neither_the_state_nor_the_verifier(alice):
    save(alice)
    with connection.cursor() as cursor:
        cursor.execute("SELECT * FROM connections_pendingauthorization")
        dumped = repr(cursor.fetchall())
    assert STATE not in dumped and VERIFIER not in dumped
    assert VERIFIER not in repr(PendingAuthorization.objects.get())


def test_a_registered_client_is_kept_for_every_process_and_the_first_one_wins():
    key = client_key("mine", "https://auth.example", "https://aptix.example/mcp/oauth/callback")
    assert registered_client(key=key) is None
    assert registered_client_save(key=key, server="mine", client_id="first", client_secret="s1") == ("first", "s1")
    assert registered_client_save(key=key, server="mine", client_id="second", client_secret=None) == ("first", "s1")
    cache.clear()
    assert registered_client(key=key) == ("first", "s1")
