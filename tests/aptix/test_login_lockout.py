"""Login lockout (django-axes, aptix/lockout.py): wrong passwords for one user from one address lock
that pair out with 429 and Retry-After, the right password included, until the cool-off ends; the
site's login and the admin's alike. And the settings that configure it refuse nonsense."""

from __future__ import annotations

from datetime import timedelta

import pytest
from axes.models import AccessAttempt
from django.core.exceptions import ImproperlyConfigured
from django.test import Client, RequestFactory, override_settings
from django.urls import reverse
from django.utils import timezone

from aptix import settings as aptix_settings
from aptix.ratelimits import client_ip, describe_rate
from tests.helpers import ServerLikeAsyncClient, async_db

pytestmark = [
    pytest.mark.django_db,
    pytest.mark.usefixtures("_lockout_after_five"),
]
COOL_OFF = timedelta(minutes=15)


@pytest.fixture
def _lockout_after_five():
    """The defaults, stated: a developer's environment may set other APTIX_LOGIN_* values."""
    with override_settings(
        AXES_ENABLED=True,
        AXES_FAILURE_LIMIT=5,
        AXES_COOLOFF_TIME=COOL_OFF,
        AXES_LOCKOUT_PARAMETERS=[["username", "ip_address"]],
        AXES_RESET_ON_SUCCESS=True,
        APTIX_TRUSTED_PROXIES=0,
    ):
        yield


def attempt(client, url, username, password):
    return client.post(url, {"username": username, "password": password})


def signed_in(client) -> bool:
    return "_auth_user_id" in client.session


def cool_off_passes():
    """The attempt was made a cool-off (and a second) ago."""
    attempt = AccessAttempt.objects.get()
    AccessAttempt.objects.update(attempt_time=attempt.attempt_time - COOL_OFF - timedelta(seconds=1))


@pytest.mark.parametrize("url", ["/login/", "/admin/login/"])
def test_wrong_passwords_lock_out_even_the_right_password_until_the_cool_off(url, curator, password):
    client = Client()
    for _ in range(4):
        response = attempt(client, url, curator.username, "wrong")
        assert response.status_code == 200 and not signed_in(client)  # the form again, with its error
    response = attempt(client, url, curator.username, "wrong")  # the fifth: locked out
    assert response.status_code == 429 and response["Retry-After"] == str(int(COOL_OFF.total_seconds()))
    html = response.content.decode()
    assert "Too many failed logins" in html and "Try again in 15 minutes" in html and "curtis" in html
    response = attempt(client, url, curator.username, password)
    assert response.status_code == 429 and not signed_in(client)
    cool_off_passes()
    response = attempt(client, url, curator.username, password)
    assert response.status_code == 302 and signed_in(client)
    assert not AccessAttempt.objects.exists()  # a successful login forgets the failures


def test_two_hundred_wrong_passwords_are_not_two_hundred_guesses(alice, password):
    client = Client()
    statuses = [attempt(client, "/login/", "alice", f"guess-{i}").status_code for i in range(200)]
    assert statuses[:4] == [200] * 4 and set(statuses[4:]) == {429}
    assert AccessAttempt.objects.get().failures_since_start == 200  # every one counted, none checked


def test_the_lockout_is_for_that_user_from_that_address(alice, bob, password):
    attacker = Client(REMOTE_ADDR="203.0.113.9")
    for _ in range(5):
        attempt(attacker, "/login/", "alice", "wrong")
    assert attempt(attacker, "/login/", "alice", password).status_code == 429
    # alice, at her own desk, is not locked out by someone else's guesses; bob is not locked out at all
    assert attempt(Client(REMOTE_ADDR="198.51.100.7"), "/login/", "alice", password).status_code == 302
    assert attempt(attacker, "/login/", "bob", password).status_code == 302


def test_the_login_page_itself_is_not_refused(alice):
    client = Client()
    for _ in range(5):
        attempt(client, "/login/", "alice", "wrong")
    assert client.get(reverse("login")).status_code == 200


@override_settings(AXES_LOCKOUT_PARAMETERS=["ip_address", ["username", "ip_address"]], AXES_RESET_ON_SUCCESS=False)
def test_locking_out_an_address_stops_a_password_spray(alice, bob, carol, password):
    client = Client()
    for username in ["alice", "bob", "carol", "dave", "erin"]:
        attempt(client, "/login/", username, "Summer2024!")
    assert attempt(client, "/login/", "bob", password).status_code == 429


@override_settings(APTIX_LOGIN_ADDRESS_LIMIT=8)
def test_a_password_spray_from_one_address_is_refused_with_the_default_lockout(alice, bob, password):
    """With the default `username+ip`, one password over many usernames from one address never locks
    a pair (each tried once): the address limit counts its failures across usernames."""
    sprayer = Client(REMOTE_ADDR="203.0.113.9")
    statuses = [attempt(sprayer, "/login/", f"user{i}", "Summer2024!").status_code for i in range(12)]
    assert statuses[:8] == [200] * 8 and set(statuses[8:]) == {429}
    assert attempt(sprayer, "/login/", "bob", password).status_code == 429  # the address, whoever logs in
    assert "Try again in 15 minutes" in attempt(sprayer, "/admin/login/", "alice", password).content.decode()
    # the users themselves, from their own addresses, are not locked out by someone else's spray
    assert attempt(Client(REMOTE_ADDR="198.51.100.7"), "/login/", "bob", password).status_code == 302
    assert attempt(Client(REMOTE_ADDR="198.51.100.8"), "/login/", "alice", password).status_code == 302


@override_settings(APTIX_LOGIN_ADDRESS_LIMIT=8)
def test_the_address_limit_ends_with_the_cool_off(alice, password):
    sprayer = Client(REMOTE_ADDR="203.0.113.9")
    for i in range(8):
        attempt(sprayer, "/login/", f"user{i}", "wrong")
    assert attempt(sprayer, "/login/", "alice", password).status_code == 429
    AccessAttempt.objects.update(attempt_time=timezone.now() - COOL_OFF - timedelta(seconds=1))
    assert attempt(sprayer, "/login/", "alice", password).status_code == 302


def test_the_client_address_comes_from_trusted_proxies_only():
    factory = RequestFactory()
    spoofed = factory.get("/", REMOTE_ADDR="10.0.0.1", HTTP_X_FORWARDED_FOR="1.2.3.4, 198.51.100.7")
    assert client_ip(spoofed) == "10.0.0.1"  # no proxy trusted: the header is the client's say-so
    with override_settings(APTIX_TRUSTED_PROXIES=1):
        assert client_ip(spoofed) == "198.51.100.7"  # what our proxy saw, not what the client wrote
        garbage = factory.get("/", REMOTE_ADDR="10.0.0.1", HTTP_X_FORWARDED_FOR="not-an-address")
        assert client_ip(garbage) == "10.0.0.1"
    with override_settings(APTIX_TRUSTED_PROXIES=2):
        assert client_ip(spoofed) == "1.2.3.4"


def test_lockout_and_rate_settings_are_checked(monkeypatch):
    monkeypatch.setenv("APTIX_LOGIN_LOCKOUT_BY", "username+ip, ip")
    assert aptix_settings.env_lockout_parameters("APTIX_LOGIN_LOCKOUT_BY", "username+ip") == [
        ["username", "ip_address"],
        "ip_address",
    ]
    monkeypatch.setenv("APTIX_LOGIN_LOCKOUT_BY", "email")
    with pytest.raises(ImproperlyConfigured, match="'email' is not username, ip or username\\+ip"):
        aptix_settings.env_lockout_parameters("APTIX_LOGIN_LOCKOUT_BY", "username+ip")
    for value, rate in [("off", None), ("0", None), ("45/M", "45/m"), ("100/5m", "100/5m")]:
        monkeypatch.setenv("APTIX_RATE_TURNS", value)
        assert aptix_settings.env_rate("APTIX_RATE_TURNS", "30/m") == rate
    assert [describe_rate(r) for r in ["30/m", "100/5m", "1000/h"]] == [
        "30 per minute",
        "100 per 5 minutes",
        "1000 per hour",
    ]
    for bad in ["30", "0/m", "30 per minute", "-1/m"]:
        monkeypatch.setenv("APTIX_RATE_TURNS", bad)
        with pytest.raises(ImproperlyConfigured, match="APTIX_RATE_TURNS must be a rate"):
            aptix_settings.env_rate("APTIX_RATE_TURNS", "30/m")


@async_db
async def test_the_lockout_holds_under_asgi_too(alice, password):
    """Daphne serves Aptix: django-axes' middleware takes its async path there."""
    client = ServerLikeAsyncClient()
    statuses = [
        (await client.post("/login/", {"username": "alice", "password": "wrong"})).status_code for _ in range(5)
    ]
    assert statuses == [200, 200, 200, 200, 429]
    response = await client.post("/login/", {"username": "alice", "password": password})
    assert response.status_code == 429 and response["Retry-After"] == "900"
    assert "Logging in as <strong>alice</strong> from this address is paused" in response.content.decode()
