"""Invites (aptix/invites.py, aptix/invite_views.py): an administrator or a team's owner names an
e-mail address, a team and a role; the one-time link, valid for 7 days, lets the invitee choose a
password and makes them a member of that team in that role. Used links, expired ones and unknown
ones are refused with the reason; an owner cannot invite into someone else's team; an address that
has an account is refused clearly; opening links is rate-limited per address, like logins."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.contrib.auth import get_user_model
from django.core import mail
from django.core.exceptions import ValidationError
from django.urls import reverse
from django.utils import timezone

from aptix.email_url import CONSOLE, SMTP, email_settings
from aptix.invite_views import INVITE_GONE, NOT_AN_OWNER
from aptix.invites import (
    ERROR_EMAIL_TAKEN,
    ERROR_EXPIRED,
    ERROR_NOT_OWNER,
    ERROR_PASSWORDS_OFF,
    ERROR_REVOKED,
    ERROR_UNKNOWN,
    ERROR_USED,
    INVITE_DAYS,
    invite_create,
)
from aptix.models import Invite, Membership

pytestmark = pytest.mark.django_db
NEW_PASSWORD = "a-long-and-unusual-passphrase-42"


def link_of(html: str) -> str:
    return re.search(r'<code id="invite-link">http://testserver(/invite/[^<]+/)</code>', html).group(1)


def accept(client, path: str, password: str = NEW_PASSWORD):
    return client.post(path, {"new_password1": password, "new_password2": password})


def test_a_team_owner_invites_and_the_link_makes_a_member_once(client, alice, team_a):
    client.force_login(alice)
    response = client.post(reverse("invites"), {"email": "Dan@Example.com", "team": team_a.pk, "role": "member"})
    # Post/Redirect/Get: a reload of the page shown invites nobody twice.
    assert response.status_code == 302 and response["Location"] == reverse("invites")
    html = client.get(response["Location"]).content.decode()
    assert "Invitation e-mailed to Dan@example.com." in html
    path = link_of(html)  # shown to the inviter, once
    reloaded = client.get(reverse("invites")).content.decode()
    assert path not in reloaded and 'id="invite-link"' not in reloaded
    [message] = mail.outbox  # and e-mailed
    assert message.to == ["Dan@example.com"] and f"http://testserver{path}" in message.body
    assert "alice invited you to the team Team A" in message.body
    invite = Invite.objects.get()
    assert (invite.team, invite.role, invite.invited_by) == (team_a, "member", alice)
    assert timedelta(days=INVITE_DAYS - 1) < invite.expires_at - timezone.now() <= timedelta(days=INVITE_DAYS)
    assert path.split("/")[2] not in invite.token_hash  # only the secret's digest is stored
    assert "Dan@example.com" in client.get(reverse("invites")).content.decode()  # listed until accepted

    client.logout()
    page = client.get(path).content.decode()
    assert "Team A" in page and "Dan@example.com" in page and 'name="new_password1"' in page
    response = accept(client, path)
    assert response.status_code == 302 and response["Location"] == reverse("home")
    dan = get_user_model().objects.get(username="Dan@example.com")
    assert dan.email == "Dan@example.com" and dan.check_password(NEW_PASSWORD)
    assert Membership.objects.get(user=dan).team == team_a and Membership.objects.get(user=dan).role == "member"
    assert client.get(reverse("home")).context["user"] == dan  # signed in
    invite.refresh_from_db()
    assert invite.accepted_at is not None and invite.user == dan

    client.logout()
    again = client.get(path)
    assert again.status_code == 410 and ERROR_USED in again.content.decode()
    assert accept(client, path, "another-long-passphrase-77").status_code == 410
    assert get_user_model().objects.filter(email__iexact="dan@example.com").count() == 1


def test_an_owner_cannot_invite_into_someone_elses_team(client, alice, bob, team_b):
    client.force_login(alice)  # owner of Team A only
    response = client.post(reverse("invites"), {"email": "eve@example.com", "team": team_b.pk, "role": "owner"})
    assert response.status_code == 403 and ERROR_NOT_OWNER in response.content.decode()
    assert "Team B" not in response.content.decode().split('id="id_team"')[1].split("</select>")[0]
    assert not Invite.objects.exists() and not mail.outbox
    client.force_login(bob)  # a member, not an owner
    for response in (client.get(reverse("invites")), client.post(reverse("invites"), {"email": "x@example.com"})):
        assert response.status_code == 403 and NOT_AN_OWNER in response.content.decode()
    assert not Invite.objects.exists()


def test_an_address_that_has_an_account_is_refused_with_the_reason(client, alice, bob, team_a):
    bob.email = "bob@example.com"
    bob.save()
    client.force_login(alice)
    response = client.post(reverse("invites"), {"email": "BOB@example.com", "team": team_a.pk, "role": "member"})
    assert response.status_code == 400 and "There is already an account with this e-mail address" in (
        response.content.decode()
    )
    assert not Invite.objects.exists()
    # an account made for the address after the invite: the link says so and makes nothing
    _, secret = invite_create(inviter=alice, team=team_a, email="fay@example.com")
    get_user_model().objects.create_user(username="fay", email="fay@example.com", password="x")
    response = accept(client, reverse("invite-accept", args=[secret]))
    assert response.status_code == 409 and ERROR_EMAIL_TAKEN in response.content.decode()
    assert not Membership.objects.filter(user__username="fay").exists()


def test_expired_and_unknown_links_are_refused(client, alice, team_a):
    invite, secret = invite_create(inviter=alice, team=team_a, email="gus@example.com")
    Invite.objects.filter(pk=invite.pk).update(expires_at=timezone.now() - timedelta(seconds=1))
    path = reverse("invite-accept", args=[secret])
    for response in (client.get(path), accept(client, path)):
        assert response.status_code == 410 and ERROR_EXPIRED in response.content.decode()
    unknown = client.get(reverse("invite-accept", args=["not-a-secret"]))
    assert unknown.status_code == 404 and ERROR_UNKNOWN in unknown.content.decode()
    assert not get_user_model().objects.filter(email="gus@example.com").exists()


def test_a_weak_password_is_refused_and_the_link_still_works(client, alice, team_a):
    _, secret = invite_create(inviter=alice, team=team_a, email="hal@example.com", role="owner")
    path = reverse("invite-accept", args=[secret])
    weak = accept(client, path, "hal")
    assert weak.status_code == 400 and "too short" in weak.content.decode()
    assert accept(client, path).status_code == 302
    assert Membership.objects.get(user__username="hal@example.com").role == "owner"


def test_opening_links_is_rate_limited_per_address(client, settings):
    settings.APTIX_RATE_INVITES = "2/m"
    path = reverse("invite-accept", args=["guess"])
    assert [client.get(path).status_code for _ in range(2)] == [404, 404]
    limited = client.get(path)
    assert limited.status_code == 429 and int(limited["Retry-After"]) > 0
    assert "Too many requests to invitation links" in limited.content.decode()


def test_an_administrator_invites_in_the_admin_and_sees_the_link(client, admin_user, team_b, bob):
    bob.email = "bob@example.com"
    bob.save()
    client.force_login(admin_user)
    add = reverse("admin:aptix_invite_add")
    taken = client.post(add, {"email": "bob@example.com", "team": team_b.pk, "role": "member"})
    assert taken.status_code == 200 and "There is already an account" in taken.content.decode()
    response = client.post(add, {"email": "ida@example.com", "team": team_b.pk, "role": "owner"}, follow=True)
    html = response.content.decode()
    shown = "E-mailed to ida@example.com. The link (shown only now, valid once for 7 days): http://testserver/invite/"
    assert shown in html
    assert Invite.objects.get().team == team_b and len(mail.outbox) == 1
    assert "Team B" in client.get(reverse("invites")).content.decode()  # every team, on the page too


def test_the_settings_page_links_to_invites_for_owners_only(client, alice, bob):
    client.force_login(alice)
    assert 'href="/invites/"' in client.get(reverse("settings")).content.decode()
    client.force_login(bob)
    assert 'href="/invites/"' not in client.get(reverse("settings")).content.decode()


def test_with_password_sign_in_off_invites_make_no_accounts(client, settings, alice, admin_user, team_a):
    """With the identity provider and APTIX_LOCAL_LOGIN=false, an invite's password account could not
    sign in again (the password form is the superusers'), yet its link signed the invitee in with a
    password: the provider's group rules make accounts then, and invites say so."""
    _, secret = invite_create(inviter=alice, team=team_a, email="ivy@example.com")  # made before the switch
    settings.APTIX_OIDC_ISSUER, settings.APTIX_LOCAL_LOGIN = "https://idp.example.com", False
    path = reverse("invite-accept", args=[secret])
    for response in (client.get(path), accept(client, path)):
        assert response.status_code == 403 and ERROR_PASSWORDS_OFF in response.content.decode()
    assert not get_user_model().objects.filter(email="ivy@example.com").exists()

    client.force_login(alice)
    assert 'href="/invites/"' not in client.get(reverse("settings")).content.decode()
    for response in (
        client.get(reverse("invites")),
        client.post(reverse("invites"), {"email": "jo@example.com", "team": team_a.pk, "role": "member"}),
    ):
        assert response.status_code == 403 and ERROR_PASSWORDS_OFF in response.content.decode()
    with pytest.raises(ValidationError, match="Sign-in with a password is off"):
        invite_create(inviter=admin_user, team=team_a, email="kit@example.com")  # the admin's form checks this too
    assert not Invite.objects.filter(email__in=["jo@example.com", "kit@example.com"]).exists()

    settings.APTIX_LOCAL_LOGIN = True  # passwords and the provider side by side: invites work
    assert client.get(reverse("invites")).status_code == 200


def test_the_email_url_chooses_the_backend():
    assert email_settings(None).backend == CONSOLE
    smtp = email_settings("smtp://ap%40tix:s%3Acret@mail.example.com")
    assert (smtp.backend, smtp.host, smtp.port, smtp.user, smtp.password) == (
        SMTP, "mail.example.com", 587, "ap@tix", "s:cret",
    )  # fmt: skip
    assert (smtp.use_tls, smtp.use_ssl) == (True, False)
    assert email_settings("smtps://mail.example.com").port == 465 and email_settings("smtps://h").use_ssl
    assert email_settings("smtp+plain://localhost:2525")[1:] == ("localhost", 2525, "", "", False, False)
    with pytest.raises(ValueError, match="smtp://"):
        email_settings("http://mail.example.com")


def test_an_owner_withdraws_an_invitation_and_its_link_says_so(client, alice, bob, team_a):
    """/invites/ withdraws and sends again, and leads back to the workspace."""
    invite, secret = invite_create(inviter=alice, team=team_a, email="dan@example.com")
    path = reverse("invite-accept", args=[secret])
    client.force_login(bob)  # not an owner of Team A: not his to withdraw
    refused = client.post(reverse("invite-revoke", args=[invite.pk]))
    assert refused.status_code == 404 and INVITE_GONE in refused.content.decode()
    client.force_login(alice)
    page = client.get(reverse("invites")).content.decode()
    assert f'href="{reverse("home")}">Workspace</a>' in page and f'href="{reverse("settings")}">Settings</a>' in page
    assert reverse("invite-revoke", args=[invite.pk]) in page and reverse("invite-resend", args=[invite.pk]) in page
    assert client.get(reverse("invite-revoke", args=[invite.pk])).status_code == 405  # only a POST withdraws
    response = client.post(reverse("invite-revoke", args=[invite.pk]))
    assert response.status_code == 302 and response["Location"] == reverse("invites")
    page = client.get(reverse("invites")).content.decode()
    assert "The invitation of dan@example.com was withdrawn" in page and "No invitation is waiting." in page
    invite.refresh_from_db()
    assert invite.revoked_at is not None and invite.accepted_at is None
    client.logout()
    opened = client.get(path)
    assert opened.status_code == 410 and ERROR_REVOKED in opened.content.decode()
    assert accept(client, path).status_code == 410
    assert not get_user_model().objects.filter(email="dan@example.com").exists()
    client.force_login(alice)  # withdrawn already: nothing to withdraw or send
    assert client.post(reverse("invite-revoke", args=[invite.pk])).status_code == 404
    assert client.post(reverse("invite-resend", args=[invite.pk])).status_code == 404


def test_sending_again_makes_a_new_link_and_the_old_one_stops_working(client, alice, team_a):
    invite, old_secret = invite_create(inviter=alice, team=team_a, email="dan@example.com")
    Invite.objects.filter(pk=invite.pk).update(expires_at=timezone.now() - timedelta(hours=1))  # expired
    client.force_login(alice)
    response = client.post(reverse("invite-resend", args=[invite.pk]))
    assert response.status_code == 302 and response["Location"] == reverse("invites")
    html = client.get(response["Location"]).content.decode()
    assert "Invitation e-mailed to dan@example.com." in html
    path = link_of(html)
    [message] = mail.outbox
    assert f"http://testserver{path}" in message.body
    assert path not in client.get(reverse("invites")).content.decode()  # shown once
    invite.refresh_from_db()
    assert timedelta(days=INVITE_DAYS - 1) < invite.expires_at - timezone.now() <= timedelta(days=INVITE_DAYS)
    assert Invite.objects.count() == 1  # the same invitation, with a new link
    client.logout()
    assert client.get(reverse("invite-accept", args=[old_secret])).status_code == 404  # the old link is unknown
    assert accept(client, path).status_code == 302  # the new one works
    assert get_user_model().objects.filter(email="dan@example.com").exists()
