"""Every ID token Aptix is handed at the callback is checked, and each bad one is refused with the login
page saying so: tampered, for another audience, from another issuer, expired, carrying another sign-in's
nonce (a replay), or signed with a key the provider does not publish; a callback without its state, or
with a state this browser never asked for, is refused before any token is looked at. The tokens are
real ones from the provider process or made here with its own key, handed over in place of the token
endpoint's answer."""

from __future__ import annotations

import base64
import json
import time

import pytest
from django.contrib.auth import get_user_model

from identity.backend import ProviderBackend
from identity.models import ExternalIdentity
from tests.helpers.oidc import sign_in, start_sign_in

pytestmark = [pytest.mark.slow, pytest.mark.django_db]
User = get_user_model()
REFUSED = "Signing in with Test IdP did not work."


@pytest.fixture
def hand_over(monkeypatch):
    """`hand_over(id_token)`: the token endpoint's answer becomes this ID token (and an access token the
    provider does not know, so the claims come from the ID token alone)."""

    def replace(id_token: str) -> None:
        monkeypatch.setattr(ProviderBackend, "get_token", lambda self, payload: {"id_token": id_token})

    return replace


def callback(client, state: str):
    return client.get("/sign-in/callback/", {"code": "any-code", "state": state})


def refused(client, response) -> bool:
    page = client.get("/login/").content.decode()
    return (
        response.status_code == 302
        and response["Location"] == "/login/"
        and REFUSED in page
        and not client.get("/settings/").wsgi_request.user.is_authenticated
        and not ExternalIdentity.objects.exists()
    )


def test_a_well_made_token_signs_in(client, signing_in, hand_over):
    """The harness itself: a token made with the provider's key and the right claims is accepted."""
    signing_in.user("lena")
    _, params = start_sign_in(client)
    hand_over(signing_in.sign_token(signing_in.id_claims("lena", nonce=params["nonce"])))
    response = callback(client, params["state"])
    assert response.status_code == 302 and response["Location"] == "/sign-in/no-team/"
    assert User.objects.filter(username="lena").exists()


def test_a_tampered_token_is_refused(client, signing_in, hand_over):
    signing_in.user("lena")
    _, params = start_sign_in(client)
    token = signing_in.sign_token(signing_in.id_claims("lena", nonce=params["nonce"]))
    header, payload, signature = token.split(".")
    claims = json.loads(base64.urlsafe_b64decode(payload + "=="))
    claims["sub"] = signing_in.user("mallory")  # someone else's account, same signature
    forged = base64.urlsafe_b64encode(json.dumps(claims).encode()).rstrip(b"=").decode()
    hand_over(f"{header}.{forged}.{signature}")
    assert refused(client, callback(client, params["state"]))


@pytest.mark.parametrize(
    "overrides",
    [
        {"aud": "another-client"},
        {"aud": ["another-client", "aptix"], "azp": "another-client"},
        {"iss": "http://127.0.0.1:1/o"},
        {"exp": int(time.time()) - 3600, "iat": int(time.time()) - 7200},
        {"sub": None},
    ],
    ids=["wrong-audience", "issued-to-another-party", "wrong-issuer", "expired", "no-subject"],
)
def test_a_token_failing_a_claim_check_is_refused(client, signing_in, hand_over, overrides):
    signing_in.user("lena")
    _, params = start_sign_in(client)
    claims = {
        k: v for k, v in signing_in.id_claims("lena", nonce=params["nonce"], **overrides).items() if v is not None
    }
    hand_over(signing_in.sign_token(claims))
    assert refused(client, callback(client, params["state"]))


def test_a_token_signed_with_a_key_the_provider_does_not_publish_is_refused(client, signing_in, hand_over):
    signing_in.user("lena")
    _, params = start_sign_in(client)
    retired = signing_in.rotate(keep_old=False)["previous"]  # the provider no longer publishes it
    hand_over(signing_in.sign_token(signing_in.id_claims("lena", nonce=params["nonce"]), pem=retired))
    assert refused(client, callback(client, params["state"]))


def test_a_token_signed_with_the_client_secret_is_refused(client, signing_in, hand_over):
    """HS256 keyed with the client secret (which the provider offers too) would let anyone who holds
    the secret mint tokens: only the provider's asymmetric keys are accepted."""
    import jwt

    signing_in.user("lena")
    _, params = start_sign_in(client)
    claims = signing_in.id_claims("lena", nonce=params["nonce"])
    hand_over(jwt.encode(claims, "aptix-test-secret" * 2, algorithm="HS256"))
    assert refused(client, callback(client, params["state"]))


def test_a_replayed_token_with_another_sign_ins_nonce_is_refused(client, signing_in, hand_over, team_a):
    """A real ID token from an earlier sign-in, handed to a later one, carries the earlier nonce."""
    signing_in.user("lena")
    _, first = start_sign_in(client)
    old_token = signing_in.sign_token(signing_in.id_claims("lena", nonce=first["nonce"]))
    _, second = start_sign_in(client)
    hand_over(old_token)
    assert refused(client, callback(client, second["state"]))


def test_a_callback_without_state_is_refused(client, signing_in):
    signing_in.user("lena")
    authorize_url, _ = start_sign_in(client)
    back = signing_in.authorize(authorize_url, "lena")
    code = back.split("code=")[1].split("&")[0]
    response = client.get("/sign-in/callback/", {"code": code})
    assert refused(client, response)


def test_a_callback_with_a_state_this_browser_never_asked_for_is_refused(client, signing_in):
    signing_in.user("lena")
    authorize_url, _ = start_sign_in(client)
    back = signing_in.authorize(authorize_url, "lena")
    assert "code=" in back  # the provider did give a code: only the state is wrong
    assert refused(client, callback(client, "a-state-from-another-browser"))


def test_a_replayed_callback_is_refused(client, signing_in):
    """The state is spent by its callback: the same callback again (a leaked URL) signs nobody in."""
    signing_in.user("lena")
    authorize_url, _ = start_sign_in(client)
    path = signing_in.authorize(authorize_url, "lena").split("testserver")[1]
    assert client.get(path)["Location"] == "/sign-in/no-team/"
    client.logout()
    response = client.get(path)
    assert response["Location"] == "/login/" and REFUSED in client.get("/login/").content.decode()
    assert not client.get("/settings/").wsgi_request.user.is_authenticated


def test_a_real_sign_in_succeeds_after_a_refused_one(client, signing_in, hand_over, monkeypatch):
    signing_in.user("lena")
    _, params = start_sign_in(client)
    hand_over("not-a-jwt")
    assert refused(client, callback(client, params["state"]))
    monkeypatch.undo()
    assert sign_in(client, signing_in, "lena")["Location"] == "/sign-in/no-team/"


def test_refused_callbacks_never_lock_the_address_out_of_signing_in(client, signing_in, hand_over, monkeypatch):
    """The password lockout counts guessed passwords; a refused callback guessed none. Counted, a few
    stale callbacks from an office behind one address would lock everybody there out."""
    signing_in.user("lena")
    for _ in range(8):  # past APTIX_LOGIN_FAILURE_LIMIT (5)
        _, params = start_sign_in(client)
        hand_over("not-a-jwt")
        assert callback(client, params["state"])["Location"] == "/login/"
        monkeypatch.undo()
    assert sign_in(client, signing_in, "lena")["Location"] == "/sign-in/no-team/"
