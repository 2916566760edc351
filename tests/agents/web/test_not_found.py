"""Every 404 of a page is Aptix's own page, which says what may have happened and leads back (it was
Django's bare "Not Found"): an unknown address, a deleted session, one that stopped being shared."""

from __future__ import annotations

import pytest
from django.urls import reverse

from agents.sessions import session_create, session_delete
from agents.sharing.services import session_share

pytestmark = pytest.mark.django_db


def assert_our_not_found(response) -> None:
    html = response.content.decode()
    assert response.status_code == 404
    assert "<title>Not found · Aptix</title>" in html and "<h1>Not found</h1>" in html
    assert f'<a href="{reverse("home")}">Back to your sessions</a>' in html
    assert "may have been deleted" in html and "stopped sharing it with your team" in html


def test_a_deleted_and_an_unshared_session_and_an_unknown_page_are_our_404(client, team_a, alice, bob):
    deleted = session_create(team=team_a, user=alice, title="Old")
    session_delete(session=deleted)
    shared = session_create(team=team_a, user=alice, title="Q3")
    session_share(session=shared, user=alice, shared=True)
    client.force_login(bob)
    assert client.get(reverse("session-detail", args=[shared.id])).status_code == 200  # a reader, while shared
    session_share(session=shared, user=alice, shared=False)
    assert_our_not_found(client.get(reverse("session-detail", args=[shared.id])))
    client.force_login(alice)
    assert_our_not_found(client.get(reverse("session-detail", args=[deleted.id])))
    assert_our_not_found(client.get("/no-such-page/"))
    client.logout()
    signed_out = client.get("/no-such-page/").content.decode()
    assert f'<a href="{reverse("login")}">Sign in</a>' in signed_out
