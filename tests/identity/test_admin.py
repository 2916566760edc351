"""The admin's pages for the sign-in: group rules (a team with a role, or a staff group, never both or
neither) and provider identities (a link with an empty subject for a local account)."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import Group

from identity.models import ExternalIdentity, GroupRule

pytestmark = pytest.mark.django_db


@pytest.fixture
def admin_client(client, django_user_model, password):
    client.force_login(django_user_model.objects.create_superuser("root", password=password))
    return client


def test_a_rule_names_a_team_or_a_staff_group(admin_client, team_a):
    url = "/admin/identity/grouprule/add/"
    both = {"claim_value": "x", "team": team_a.pk, "role": "member", "group": Group.objects.get(name="Auditors").pk}
    response = admin_client.post(url, both)
    assert "Choose a team (with a role) or a staff group, not both or neither." in response.content.decode()
    assert admin_client.post(url, {"claim_value": "x", "role": "member"}).status_code == 200  # neither: refused
    assert not GroupRule.objects.exists()
    assert admin_client.post(url, {"claim_value": "x", "team": team_a.pk, "role": "owner"}).status_code == 302
    assert str(GroupRule.objects.get()) == "x → Team A (owner)"


def test_an_admin_links_a_local_account_with_an_empty_subject(admin_client, settings, alice):
    settings.APTIX_OIDC_ISSUER = "https://idp.example.com"
    page = admin_client.get("/admin/identity/externalidentity/add/").content.decode()
    assert 'value="https://idp.example.com"' in page
    response = admin_client.post(
        "/admin/identity/externalidentity/add/", {"user": alice.pk, "issuer": "https://idp.example.com", "subject": ""}
    )
    assert response.status_code == 302
    assert str(ExternalIdentity.objects.get(user=alice)) == "alice at https://idp.example.com (to be linked)"
