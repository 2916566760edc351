"""Users' MCP credentials at rest: sealed with APTIX_SECRETS_KEY (the database holds no token text,
keys rotate), audited when connected, disconnected or refused, deleted with a deactivated user, and
never shown by a string form or the admin."""

from __future__ import annotations

import pytest
from cryptography.fernet import Fernet
from django.contrib.auth import get_user_model
from django.db import connection

from connections.models import ConnectionEvent, Credential
from connections.sealing import SealBroken, SecretsKeyMissing, reseal, unseal
from connections.store import (
    connections_of,
    disconnect,
    refresh_failed,
    secrets_get,
    secrets_save,
    tokens_get,
    tokens_save,
)

TOKEN = "gho_access-token-text-0123456789"
REFRESH = "refresh-token-text-9876543210"
SECRET = "ghp_personal-secret-abcdef"
pytestmark = pytest.mark.django_db


@pytest.fixture
def key(settings):
    settings.APTIX_SECRETS_KEY = [Fernet.generate_key().decode()]
    return settings


@pytest.fixture
def alice():
    return get_user_model().objects.create_user("alice", password="pw-alice-123")


def every_stored_text() -> str:
    """Every value of every row of the credentials table, as the database returns it."""
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT * FROM {Credential._meta.db_table}")
        return repr(cursor.fetchall())


def test_the_database_holds_no_token_or_secret_text(key, alice):
    tokens_save(user=alice, server="linear", tokens={"access_token": TOKEN, "refresh_token": REFRESH})
    secrets_save(user=alice, server="github", values={"GITHUB_TOKEN": SECRET})
    stored = every_stored_text()
    assert "linear" in stored and "github" in stored  # the rows are there
    for text in (TOKEN, REFRESH, SECRET, "access_token", "GITHUB_TOKEN"):
        assert text not in stored
    assert tokens_get(user_id=alice.pk, server="linear")["access_token"] == TOKEN
    assert secrets_get(user_id=alice.pk, server="github") == {"GITHUB_TOKEN": SECRET}


def test_a_credential_never_shows_its_value(key, alice):
    tokens_save(user=alice, server="linear", tokens={"access_token": TOKEN})
    row = Credential.objects.get()
    assert row.sealed not in (str(row) + repr(row))
    assert TOKEN not in str(row) + repr(row)


def test_keys_rotate_the_first_encrypts_every_one_decrypts(key, alice):
    tokens_save(user=alice, server="linear", tokens={"access_token": TOKEN})
    old_key = key.APTIX_SECRETS_KEY[0]
    sealed = Credential.objects.get().sealed
    key.APTIX_SECRETS_KEY = [Fernet.generate_key().decode(), old_key]
    assert tokens_get(user_id=alice.pk, server="linear")["access_token"] == TOKEN
    rotated = reseal(sealed)
    key.APTIX_SECRETS_KEY = key.APTIX_SECRETS_KEY[:1]  # the old key dropped: the resealed value still opens
    assert unseal(rotated)["access_token"] == TOKEN
    with pytest.raises(SealBroken) as refused:
        unseal(sealed)
    assert TOKEN not in str(refused.value)


def test_without_a_key_nothing_is_stored(settings, alice):
    settings.APTIX_SECRETS_KEY = []
    with pytest.raises(SecretsKeyMissing, match="APTIX_SECRETS_KEY is not set"):
        tokens_save(user=alice, server="linear", tokens={"access_token": TOKEN})
    assert not Credential.objects.exists()


def test_secrets_are_write_only_an_empty_field_keeps_the_saved_value(key, alice):
    secrets_save(user=alice, server="github", values={"GITHUB_TOKEN": SECRET, "ORG": "acme"})
    secrets_save(user=alice, server="github", values={"GITHUB_TOKEN": "", "ORG": "other"})
    assert secrets_get(user_id=alice.pk, server="github") == {"GITHUB_TOKEN": SECRET, "ORG": "other"}
    assert connections_of(user_id=alice.pk) == {"github": {"oauth": None, "secrets": ["GITHUB_TOKEN", "ORG"]}}


def test_connect_refresh_and_disconnect_are_audited_and_disconnect_deletes(key, alice):
    tokens_save(user=alice, server="linear", tokens={"access_token": TOKEN}, account="alice@example.com")
    tokens_save(user=alice, server="linear", tokens={"access_token": "refreshed"})  # a refresh: not audited
    assert connections_of(user_id=alice.pk)["linear"]["oauth"] == "alice@example.com"
    assert disconnect(user=alice, server="linear")
    assert tokens_get(user_id=alice.pk, server="linear") is None
    assert not disconnect(user=alice, server="linear")  # nothing left: nothing audited
    tokens_save(user=alice, server="linear", tokens={"access_token": TOKEN})
    refresh_failed(user=alice, server="linear")
    assert tokens_get(user_id=alice.pk, server="linear") is None
    actions = list(ConnectionEvent.objects.order_by("id").values_list("username", "server", "action"))
    assert actions == [
        ("alice", "linear", "connected"),
        ("alice", "linear", "disconnected"),
        ("alice", "linear", "connected"),
        ("alice", "linear", "refresh_failed"),
    ]


def test_a_deactivated_users_credentials_are_deleted(key, alice):
    bob = get_user_model().objects.create_user("bob", password="pw-bob-12345")
    tokens_save(user=alice, server="linear", tokens={"access_token": TOKEN})
    secrets_save(user=alice, server="github", values={"GITHUB_TOKEN": SECRET})
    tokens_save(user=bob, server="linear", tokens={"access_token": "bobs"})
    alice.is_active = False
    alice.save()
    assert list(Credential.objects.values_list("user__username", flat=True)) == ["bob"]
    deactivated = ConnectionEvent.objects.filter(action="deactivated").values_list("username", "server")
    assert sorted(deactivated) == [("alice", "github"), ("alice", "linear")]


def test_auditors_read_the_connection_events_in_the_admin(key, alice, client):
    from django.contrib.auth.models import Group

    tokens_save(user=alice, server="linear", tokens={"access_token": TOKEN}, account="alice@example.com")
    auditor = get_user_model().objects.create_user("audrey", password="pw-audrey-123", is_staff=True)
    auditor.groups.add(Group.objects.get(name="Auditors"))
    client.force_login(auditor)
    page = client.get("/admin/connections/connectionevent/")
    assert page.status_code == 200
    assert b"alice@example.com" in page.content and b"linear" in page.content
    assert client.get("/admin/connections/credential/").status_code == 403  # who holds what: not theirs
