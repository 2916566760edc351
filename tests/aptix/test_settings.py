"""The settings page: password, new-session
defaults, theme, turn and inbox notifications and the user's own API tokens."""

from __future__ import annotations

import pytest
from django.urls import reverse

from agents.web.views.settings import TOKEN_GONE
from aptix.models import ApiToken, UserPreferences
from aptix.tokens import api_token_create, api_token_user

pytestmark = pytest.mark.django_db

PREFS = {"default_mode": "data-analysis", "default_execution": "agent", "theme": "dark", "notify_turns": "on"}


@pytest.fixture
def alice_client(client, alice):
    client.force_login(alice)
    return client


def test_the_page_needs_a_login_and_is_linked_from_the_header(client, alice_client):
    assert client.get(reverse("home")).content.count(b'href="/settings/"') == 1
    assert alice_client.get("/settings/").status_code == 200
    alice_client.logout()
    assert alice_client.get("/settings/")["Location"].startswith("/login/")


def test_a_password_change_keeps_this_login(alice_client, alice, password):
    data = {
        "old_password": password,
        "new_password1": "a-new-long-passphrase",
        "new_password2": "a-new-long-passphrase",
    }
    response = alice_client.post(reverse("settings-password"), data)
    assert response.status_code == 302
    alice.refresh_from_db()
    assert alice.check_password("a-new-long-passphrase")
    assert alice_client.get("/settings/").status_code == 200  # still signed in


def test_a_wrong_old_password_is_refused_with_the_reason(alice_client, alice, password):
    data = {"old_password": "nope", "new_password1": "a-new-long-passphrase", "new_password2": "a-new-long-passphrase"}
    response = alice_client.post(reverse("settings-password"), data)
    assert response.status_code == 400
    assert "Your old password was entered incorrectly" in response.content.decode()
    alice.refresh_from_db()
    assert alice.check_password(password)


def test_preferences_are_saved_and_used(alice_client, alice):
    assert alice_client.post(reverse("settings-preferences"), PREFS).status_code == 302
    saved = UserPreferences.objects.get(user=alice)
    assert (saved.default_mode, saved.default_execution, saved.theme, saved.notify_turns) == (
        "data-analysis",
        "agent",
        "dark",
        True,
    )
    home = alice_client.get(reverse("home")).content.decode()
    assert '<html lang="en" data-theme="dark">' in home
    assert 'data-notify-turns="1"' in home
    assert '<option value="data-analysis" selected>' in home  # the composer's mode picker
    assert 'name="execution" value="agent" checked' in home


def test_inbox_notifications_are_a_preference_of_their_own(alice_client, alice):
    assert 'id="id_notify_inbox"' in alice_client.get("/settings/").content.decode()
    alice_client.post(reverse("settings-preferences"), {**PREFS, "notify_inbox": "on"})
    saved = UserPreferences.objects.get(user=alice)
    assert saved.notify_inbox and saved.notify_turns
    page = alice_client.get(reverse("automations")).content.decode()
    assert 'data-notify-inbox="1"' in page  # what static/js/aptix.js reads before notifying
    alice_client.post(reverse("settings-preferences"), PREFS)
    assert not UserPreferences.objects.get(user=alice).notify_inbox


def test_without_preferences_the_catalog_default_and_the_system_theme_apply(alice_client):
    home = alice_client.get(reverse("home")).content.decode()
    assert 'data-theme="system"' in home
    assert '<option value="general" selected>' in home
    assert 'name="execution" value="ask" checked' in home
    assert "data-notify-turns" not in home


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("default_mode", "no-such-mode", "Select a valid choice. no-such-mode is not one of the available choices."),
        ("theme", "purple", "Select a valid choice. purple is not one of the available choices."),
        ("default_execution", "", "This field is required."),
    ],
)
def test_bad_preferences_are_refused_with_the_reason(alice_client, alice, field, value, message):
    response = alice_client.post(reverse("settings-preferences"), {**PREFS, field: value})
    assert response.status_code == 400
    assert message in response.content.decode()
    assert not UserPreferences.objects.filter(user=alice).exists()


def test_a_token_is_limited_to_interfaces_and_modes_from_the_form(alice_client, alice):
    form = alice_client.get("/settings/").content.decode()
    assert 'name="interfaces" value="mcp"' in form and 'name="modes" value="data-analysis"' in form
    limited = {"name": "vscode", "interfaces": ["mcp"], "modes": ["data-analysis"]}
    assert alice_client.post(reverse("settings-token-create"), limited).status_code == 302
    token = ApiToken.objects.get(user=alice)
    assert (token.interfaces, token.modes) == (["mcp"], ["data-analysis"])
    assert "only MCP · modes data-analysis" in alice_client.get("/settings/").content.decode()
    # A mode the user has not (another team's, a made-up one) is the form's error; no token is made.
    refused = alice_client.post(reverse("settings-token-create"), {"name": "x", "modes": ["no-such-mode"]})
    assert refused.status_code == 400 and "no-such-mode is not one of the available choices" in refused.content.decode()
    assert ApiToken.objects.filter(user=alice).count() == 1


def test_a_token_is_created_its_secret_shown_once_and_it_works(alice_client, alice):
    response = alice_client.post(reverse("settings-token-create"), {"name": "laptop"})
    # Post/Redirect/Get: a reload of the page shown makes no second token.
    assert response.status_code == 302 and response["Location"] == "/settings/#tokens-heading"
    page = alice_client.get(response["Location"])
    token = ApiToken.objects.get(user=alice)
    secret = page.context["new_secret"]
    assert secret in page.content.decode() and page.context["new_token"] == token
    assert api_token_user(f"Bearer {secret}") == alice
    listed = alice_client.get("/settings/").content.decode()  # the reload: listed, its secret gone
    assert secret not in listed
    assert f"{token.key_prefix}…" in listed and "laptop" in listed
    assert ApiToken.objects.filter(user=alice).count() == 1


def test_a_too_long_token_name_is_refused(alice_client, alice):
    response = alice_client.post(reverse("settings-token-create"), {"name": "x" * 101})
    assert response.status_code == 400
    assert "Ensure this value has at most 100 characters (it has 101)." in response.content.decode()
    assert not ApiToken.objects.exists()


def test_a_user_revokes_their_own_token_only(alice_client, alice, bob):
    own, _ = api_token_create(user=alice, name="mine")
    bobs, _ = api_token_create(user=bob, name="bob's")
    assert f"{bobs.key_prefix}" not in alice_client.get("/settings/").content.decode()

    refused = alice_client.post(reverse("settings-token-revoke", args=[bobs.pk]))
    assert refused.status_code == 404
    assert TOKEN_GONE in refused.content.decode()
    assert ApiToken.objects.filter(pk=bobs.pk).exists()

    assert alice_client.post(reverse("settings-token-revoke", args=[own.pk])).status_code == 302
    assert not ApiToken.objects.filter(pk=own.pk).exists()
    assert alice_client.post(reverse("settings-token-revoke", args=[own.pk])).status_code == 404


@pytest.mark.parametrize("name", ["settings-password", "settings-preferences", "settings-token-create"])
def test_actions_take_only_post(alice_client, name):
    assert alice_client.get(reverse(name)).status_code == 405


def test_a_password_change_revokes_the_users_api_tokens_and_says_so(alice_client, alice, bob, password):
    _, old_secret = api_token_create(user=alice, name="laptop")
    api_token_create(user=alice, name="ci")
    _, bobs = api_token_create(user=bob, name="bob's")
    assert "revokes your API tokens" in alice_client.get(reverse("settings")).content.decode()
    data = {
        "old_password": password,
        "new_password1": "a-new-long-passphrase",
        "new_password2": "a-new-long-passphrase",
    }
    page = alice_client.post(reverse("settings-password"), data, follow=True).content.decode()
    assert "Your password was changed. Your 2 API tokens were revoked with it" in page
    assert api_token_user(f"Bearer {old_secret}") is None  # whoever had the old password loses the token too
    assert not ApiToken.objects.filter(user=alice).exists()
    assert api_token_user(f"Bearer {bobs}") == bob  # nobody else's


def test_a_refused_password_change_keeps_the_tokens(alice_client, alice):
    _, secret = api_token_create(user=alice)
    data = {"old_password": "nope", "new_password1": "a-new-long-passphrase", "new_password2": "a-new-long-passphrase"}
    assert alice_client.post(reverse("settings-password"), data).status_code == 400
    assert api_token_user(f"Bearer {secret}") == alice
