"""Signing in against a real OpenID Connect provider process (tests/oidc_provider/, django-oauth-toolkit):
the first sign-in creates the account, the provider's groups give teams and roles and take them back,
sign-out ends the provider's session too, and the provider may rotate its key."""

from __future__ import annotations

from urllib.parse import parse_qs, urlsplit

import pytest
import requests
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group

from aptix.models import Membership
from identity.models import ExternalIdentity, GroupRule
from tests.helpers.oidc import CLIENT_ID, sign_in, start_sign_in

pytestmark = [pytest.mark.slow, pytest.mark.django_db]
User = get_user_model()


def signed_in_user(client):
    return client.get("/settings/").wsgi_request.user


def test_the_first_sign_in_creates_the_account_keyed_by_issuer_and_sub(client, signing_in, team_a):
    GroupRule.objects.create(claim_value="data-team", team=team_a, role=Membership.Role.MEMBER)
    sub = signing_in.user("dana", groups=["data-team"], email="dana@example.com", first_name="Dana", last_name="Q")
    response = sign_in(client, signing_in, "dana")
    assert response.status_code == 302 and response["Location"] == "/"
    identity = ExternalIdentity.objects.get(issuer=signing_in.issuer, subject=sub)
    user = identity.user
    assert (user.username, user.email, user.first_name, user.last_name) == ("dana", "dana@example.com", "Dana", "Q")
    assert not user.has_usable_password()
    assert signed_in_user(client) == user
    assert client.get("/").status_code == 200


def test_deactivating_a_user_ends_their_provider_session_at_once(client, signing_in, team_a):
    GroupRule.objects.create(claim_value="data-team", team=team_a)
    signing_in.user("dora", groups=["data-team"])
    sign_in(client, signing_in, "dora")
    user = signed_in_user(client)
    assert user.is_authenticated
    user.is_active = False
    user.save()
    assert not signed_in_user(client).is_authenticated
    assert client.get("/")["Location"].startswith("/login/")


def test_the_request_carries_pkce_state_and_nonce(client, signing_in):
    _, params = start_sign_in(client)
    assert params["code_challenge_method"] == "S256" and len(params["code_challenge"]) == 43
    assert len(params["state"]) >= 22 and len(params["nonce"]) >= 22  # 32 of 62 characters: 190 bits each
    assert params["state"] != params["nonce"]
    assert params["client_id"] == CLIENT_ID and params["scope"] == "openid email profile"


def test_name_and_email_follow_the_provider_at_every_sign_in(client, signing_in, team_a):
    GroupRule.objects.create(claim_value="data-team", team=team_a)
    signing_in.user("erin", groups=["data-team"], email="erin@example.com", first_name="Erin")
    sign_in(client, signing_in, "erin")
    signing_in.user("erin", groups=["data-team"], email="erin.new@example.com", first_name="Erin", last_name="Z")
    client.logout()
    sign_in(client, signing_in, "erin")
    user = User.objects.get(username="erin")
    assert (user.email, user.last_name) == ("erin.new@example.com", "Z")
    assert User.objects.filter(username__startswith="erin").count() == 1


def test_groups_give_teams_and_roles_and_a_removed_group_takes_its_team_back(client, signing_in, team_a, team_b):
    GroupRule.objects.create(claim_value="data-team", team=team_a, role=Membership.Role.MEMBER)
    GroupRule.objects.create(claim_value="data-leads", team=team_a, role=Membership.Role.OWNER)
    GroupRule.objects.create(claim_value="ops", team=team_b, role=Membership.Role.MEMBER)
    GroupRule.objects.create(claim_value="auditors", group=Group.objects.get(name="Auditors"))
    signing_in.user("gail", groups=["data-team", "data-leads", "ops", "auditors", "unmapped"])
    sign_in(client, signing_in, "gail")
    user = User.objects.get(username="gail")
    roles = dict(Membership.objects.filter(user=user).values_list("team__slug", "role"))
    assert roles == {"team-a": "owner", "team-b": "member"}
    assert user.is_staff and list(user.groups.values_list("name", flat=True)) == ["Auditors"]

    signing_in.user("gail", groups=["data-team"])  # left ops, the leads and the auditors at the provider
    client.logout()
    sign_in(client, signing_in, "gail")
    user.refresh_from_db()
    assert dict(Membership.objects.filter(user=user).values_list("team__slug", "role")) == {"team-a": "member"}
    assert not user.is_staff and not user.groups.exists()


def test_a_user_whose_groups_give_no_team_sees_a_page_saying_so(client, signing_in):
    signing_in.user("hank", groups=["unmapped"])
    response = sign_in(client, signing_in, "hank")
    assert response["Location"] == "/sign-in/no-team/"
    page = client.get("/sign-in/no-team/")
    assert page.status_code == 403
    assert "none of your groups at Test IdP gives you a team" in page.content.decode()


def test_an_email_collision_with_a_local_account_is_refused_until_an_admin_links_them(
    client, signing_in, django_user_model, team_a, settings
):
    settings.APTIX_OIDC_LINK_BY_EMAIL = True  # the provider sends email_verified: true (tests/oidc_provider)
    local = django_user_model.objects.create_user("ivy-local", email="ivy@example.com", password="x")
    GroupRule.objects.create(claim_value="data-team", team=team_a)
    sub = signing_in.user("ivy", groups=["data-team"], email="ivy@example.com")
    response = sign_in(client, signing_in, "ivy")
    assert response["Location"] == "/login/"
    page = client.get("/login/").content.decode()
    assert "An Aptix account with the e-mail address ivy@example.com already exists" in page
    assert "ask an administrator to link them" in page
    assert not ExternalIdentity.objects.exists() and not signed_in_user(client).is_authenticated

    ExternalIdentity.objects.create(user=local, issuer=signing_in.issuer, subject="")  # the admin's link
    sign_in(client, signing_in, "ivy")
    assert signed_in_user(client) == local
    assert ExternalIdentity.objects.get(user=local).subject == sub


def test_sign_out_ends_the_aptix_session_and_the_providers(client, signing_in, team_a):
    GroupRule.objects.create(claim_value="data-team", team=team_a)
    signing_in.user("jack", groups=["data-team"])
    browser = requests.Session()  # the browser's cookies at the provider
    authorize_url, _ = start_sign_in(client)
    callback = urlsplit(signing_in.authorize(authorize_url, "jack", browser=browser))
    client.get(f"{callback.path}?{callback.query}")
    assert signed_in_user(client).is_authenticated

    response = client.post("/logout/")
    logout_url = response["Location"]
    assert logout_url.startswith(f"{signing_in.issuer}/logout/")
    params = parse_qs(urlsplit(logout_url).query)
    assert params["post_logout_redirect_uri"] == ["http://testserver/login/"] and params["id_token_hint"]
    assert not signed_in_user(client).is_authenticated
    at_provider = browser.get(logout_url, allow_redirects=False, timeout=10)
    assert at_provider.status_code == 302 and at_provider.headers["Location"] == "http://testserver/login/"
    # The provider's session is over: the next authorization asks for the password again.
    again, _ = start_sign_in(client)
    assert "/accounts/login/" in browser.get(again, allow_redirects=False, timeout=10).headers["Location"]


def test_a_rotated_key_is_fetched_at_once(client, signing_in, team_a):
    GroupRule.objects.create(claim_value="data-team", team=team_a)
    signing_in.user("kim", groups=["data-team"])
    sign_in(client, signing_in, "kim")
    assert signed_in_user(client).is_authenticated
    client.logout()
    signing_in.rotate(keep_old=False)  # the old key is retired at once: Aptix must fetch the new one
    response = sign_in(client, signing_in, "kim")
    assert response["Location"] == "/"
    assert signed_in_user(client).username == "kim"
