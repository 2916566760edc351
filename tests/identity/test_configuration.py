"""The provider's configuration: an http:// issuer only on loopback, a discovery document that must
name the configured issuer and https:// endpoints (checked at start-up as a system check), and without
any provider the embedded default stays local accounts with no provider button."""

from __future__ import annotations

import pytest
from django.core.checks import run_checks
from django.core.management import call_command
from django.core.management.base import SystemCheckError

from aptix import env
from aptix.envtypes import SettingError
from identity.backend import ProviderBackend
from identity.provider import ProviderError, parse_discovery

ISSUER = "https://idp.example.com/realms/staff"


def document(**overrides):
    return {
        "issuer": ISSUER,
        "authorization_endpoint": f"{ISSUER}/auth",
        "token_endpoint": f"{ISSUER}/token",
        "jwks_uri": f"{ISSUER}/certs",
        "userinfo_endpoint": f"{ISSUER}/userinfo",
        "end_session_endpoint": f"{ISSUER}/logout",
        "id_token_signing_alg_values_supported": ["RS256", "HS256"],
        **overrides,
    }


@pytest.mark.parametrize(
    "value",
    ["https://idp.example.com", "http://127.0.0.1:8080/o", "http://localhost/realms/x", "http://[::1]:9000/"],
)
def test_https_issuers_and_http_on_loopback_are_accepted(value):
    assert env.APTIX_OIDC_ISSUER.read({"APTIX_OIDC_ISSUER": value}) == value


@pytest.mark.parametrize(
    "value",
    ["http://idp.example.com", "http://10.0.0.5/o", "ftp://idp.example.com", "idp.example.com", "https://x?y=1"],
)
def test_other_issuers_are_refused_naming_the_variable(value):
    with pytest.raises(SettingError, match="APTIX_OIDC_ISSUER"):
        env.APTIX_OIDC_ISSUER.read({"APTIX_OIDC_ISSUER": value})


def test_a_discovery_document_is_read_into_the_endpoints_and_asymmetric_algorithms():
    found = parse_discovery(ISSUER, document())
    assert found.token_endpoint == f"{ISSUER}/token" and found.end_session_endpoint == f"{ISSUER}/logout"
    assert found.algorithms == ("RS256",)  # HS256 (keyed with the client secret) is never accepted


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"issuer": "https://evil.example.com"}, "not APTIX_OIDC_ISSUER"),
        ({"issuer": ISSUER + "/"}, "trailing slash"),
        ({"token_endpoint": "http://idp.example.com/token"}, "token_endpoint"),
        ({"jwks_uri": None}, "jwks_uri"),
        ({"id_token_signing_alg_values_supported": ["HS256"]}, "signs ID tokens with none of"),
    ],
)
def test_a_wrong_discovery_document_is_refused_saying_what_is_wrong(overrides, message):
    with pytest.raises(ProviderError, match=message):
        parse_discovery(ISSUER, document(**overrides))


def test_an_unreachable_provider_fails_the_start_up_check(provider_settings):
    provider_settings("http://127.0.0.1:9/o")  # the discard port: nothing answers
    errors = [e for e in run_checks(tags=["identity"], include_deployment_checks=True) if e.id == "identity.E001"]
    assert len(errors) == 1 and "Could not read the provider's discovery document" in errors[0].msg


def test_an_unreachable_provider_stops_the_serving_processes_but_not_migrate(db, provider_settings):
    """migrate runs the ordinary checks only: a database upgrade does not wait for the provider."""
    provider_settings("http://127.0.0.1:9/o")
    assert [e.id for e in run_checks()] == []
    call_command("migrate", verbosity=0)
    for command in ("aptix_serve", "aptix_worker"):
        with pytest.raises(SystemCheckError, match="discovery document"):
            call_command(command)


def test_without_a_provider_the_check_passes_and_the_login_page_has_no_provider_button(db, client):
    assert run_checks(tags=["identity"], include_deployment_checks=True) == []
    page = client.get("/login/").content.decode()
    assert "Sign in with" not in page and 'id="id_password"' in page


def test_without_a_provider_its_urls_send_back_to_the_login_page(db, client):
    assert client.post("/sign-in/start/")["Location"] == "/login/"
    assert client.get("/sign-in/callback/", {"code": "c", "state": "s"})["Location"] == "/login/"


def test_a_password_login_never_makes_the_provider_backend_call_the_provider(rf, provider_settings):
    provider_settings("http://127.0.0.1:9/o")
    request = rf.post("/login/?code=c&state=s")
    assert ProviderBackend().authenticate(request, username="x", password="y") is None
