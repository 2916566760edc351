"""Accounts from verified claims (identity/accounts.py), without a provider: keyed by issuer and `sub`,
never matched by e-mail; the rules' memberships, roles and staff groups set at every sign-in while an
admin's are left alone; a membership taken back closes the user's sockets to that team's sessions."""

from __future__ import annotations

import asyncio

import pytest
from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer
from django.contrib.auth.models import Group

from agents.web.streams import user_group
from aptix.models import Membership
from identity.accounts import SignInRefused, account_sign_in
from identity.models import ExternalIdentity, GroupRule

pytestmark = pytest.mark.django_db
ISSUER = "https://idp.example.com"


def claims(sub: str = "sub-1", groups=(), **extra):
    return {"sub": sub, "email": f"{sub}@example.com", "preferred_username": sub, "groups": list(groups), **extra}


def sign_in(**kwargs):
    return account_sign_in(issuer=ISSUER, claims=claims(**kwargs), provider_name="Test IdP")


def roles(user) -> dict[str, str]:
    return dict(Membership.objects.filter(user=user).values_list("team__slug", "role"))


def test_the_same_sub_is_the_same_account_whatever_its_email_and_another_sub_is_another():
    first = sign_in(sub="s1", email="one@example.com")
    assert sign_in(sub="s1", email="renamed@example.com") == first
    other = sign_in(sub="s2", email="two@example.com", preferred_username="s1")
    assert other != first and other.username == "s1-2"  # a username taken is not a match either


def test_a_local_account_with_the_same_username_is_not_matched(django_user_model):
    local = django_user_model.objects.create_user("nora", email="nora.local@example.com")
    user = sign_in(sub="n1", preferred_username="nora", email="nora@example.com")
    assert user != local and user.username == "nora-2"


def test_an_email_collision_with_a_local_account_is_refused_whatever_the_case(django_user_model):
    django_user_model.objects.create_user("olga", email="Olga@Example.com")
    with pytest.raises(SignInRefused, match="already exists"):
        sign_in(sub="o1", email="olga@example.com")
    assert not ExternalIdentity.objects.exists()


def test_an_admins_link_is_claimed_only_with_an_explicitly_verified_email(settings, django_user_model):
    settings.APTIX_OIDC_LINK_BY_EMAIL = True
    local = django_user_model.objects.create_user("pia", email="pia@example.com")
    ExternalIdentity.objects.create(user=local, issuer=ISSUER, subject="")
    with pytest.raises(SignInRefused):
        sign_in(sub="p1", email="pia@example.com", email_verified=False)
    with pytest.raises(SignInRefused):  # no email_verified at all (Entra ID sends none): not vouched for
        sign_in(sub="p1", email="pia@example.com")
    assert ExternalIdentity.objects.get(user=local).subject == ""
    assert sign_in(sub="p1", email="pia@example.com", email_verified=True) == local
    assert ExternalIdentity.objects.get(user=local).subject == "p1"


def test_a_new_provider_user_with_an_admins_email_does_not_take_over_the_admins_link(django_user_model):
    """The "nOAuth" pattern: a new user at the provider presents an admin's e-mail (unverified, or with no
    email_verified claim). Links are by subject only unless APTIX_OIDC_LINK_BY_EMAIL allows e-mail."""
    admin = django_user_model.objects.create_superuser("root", email="root@example.com")
    ExternalIdentity.objects.create(user=admin, issuer=ISSUER, subject="")
    for verified in ({}, {"email_verified": False}, {"email_verified": True}):  # off by default: never by e-mail
        with pytest.raises(SignInRefused, match="already exists"):
            sign_in(sub="attacker", email="ROOT@example.com", **verified)
    assert ExternalIdentity.objects.get(user=admin).subject == ""
    assert not django_user_model.objects.filter(is_superuser=True).exclude(pk=admin.pk).exists()


def test_an_admins_link_with_the_subject_is_signed_in_by_that_subject_alone(django_user_model):
    local = django_user_model.objects.create_user("quinn", email="quinn@example.com")
    ExternalIdentity.objects.create(user=local, issuer=ISSUER, subject="q-sub")
    assert sign_in(sub="q-sub", email="anything@example.com") == local


def test_a_changed_email_that_is_another_accounts_is_not_copied(django_user_model):
    admin = django_user_model.objects.create_superuser("root", email="root@example.com")
    user = sign_in(sub="m1", email="mallory@example.com")
    sign_in(sub="m1", email="Root@Example.com")  # the provider let them change it to the admin's
    user.refresh_from_db()
    assert user.email == "mallory@example.com"
    assert django_user_model.objects.filter(email__iexact="root@example.com").get() == admin
    sign_in(sub="m1", email="mallory.new@example.com", email_verified=False)  # unverified: not copied
    user.refresh_from_db()
    assert user.email == "mallory@example.com"
    sign_in(sub="m1", email="mallory.new@example.com")  # a free address follows the provider
    user.refresh_from_db()
    assert user.email == "mallory.new@example.com"


def test_a_deactivated_account_is_refused(django_user_model):
    user = sign_in(sub="q1")
    user.is_active = False
    user.save()
    with pytest.raises(SignInRefused, match="deactivated"):
        sign_in(sub="q1")


def test_an_admins_memberships_and_groups_are_left_alone(team_a, team_b, django_user_model):
    GroupRule.objects.create(claim_value="a", team=team_a, role=Membership.Role.MEMBER)
    auditors = Group.objects.get(name="Auditors")
    user = sign_in(sub="r1", groups=["a"])
    Membership.objects.create(user=user, team=team_b, role=Membership.Role.OWNER)  # by hand
    user.groups.add(auditors)
    user.is_staff = True
    user.save()
    sign_in(sub="r1", groups=[])
    user.refresh_from_db()
    assert roles(user) == {"team-b": "owner"}  # the rule's membership went, the admin's stayed
    assert list(user.groups.all()) == [auditors] and user.is_staff


def test_a_rule_does_not_take_over_a_membership_an_admin_gave(team_a):
    user = sign_in(sub="s1")
    Membership.objects.create(user=user, team=team_a, role=Membership.Role.OWNER)
    GroupRule.objects.create(claim_value="a", team=team_a, role=Membership.Role.MEMBER)
    sign_in(sub="s1", groups=["a"])
    sign_in(sub="s1", groups=[])
    assert roles(user) == {"team-a": "owner"}


def test_the_role_follows_the_rules_and_owner_wins(team_a):
    GroupRule.objects.create(claim_value="a", team=team_a, role=Membership.Role.MEMBER)
    GroupRule.objects.create(claim_value="a-leads", team=team_a, role=Membership.Role.OWNER)
    user = sign_in(sub="t1", groups=["a", "a-leads"])
    assert roles(user) == {"team-a": "owner"}
    sign_in(sub="t1", groups=["a"])
    assert roles(user) == {"team-a": "member"}


def test_a_single_valued_claim_maps_too(settings, team_a):
    settings.APTIX_OIDC_GROUPS_CLAIM = "hd"  # Google Workspace: the domain
    GroupRule.objects.create(claim_value="example.com", team=team_a)
    assert roles(sign_in(sub="u1", hd="example.com")) == {"team-a": "member"}


def test_a_removed_group_closes_the_users_sockets_to_that_team(team_a, django_capture_on_commit_callbacks):
    GroupRule.objects.create(claim_value="a", team=team_a)
    user = sign_in(sub="v1", groups=["a"])
    layer = get_channel_layer()
    channel = async_to_sync(layer.new_channel)()
    async_to_sync(layer.group_add)(user_group(user.pk), channel)

    async def next_message():
        try:
            return await asyncio.wait_for(layer.receive(channel), timeout=0.5)
        except TimeoutError:
            return None

    with django_capture_on_commit_callbacks(execute=True):
        sign_in(sub="v1", groups=[])
    message = async_to_sync(next_message)()
    assert message is not None and message["type"] == "access.check"
    assert roles(user) == {}
