"""The share links' services (agents/sharing/links.py): each link has its own secret, of which only the
digest is kept; who a link admits; which links still work; and the reasons a link is refused."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.contrib.auth.models import AnonymousUser
from django.core.exceptions import ValidationError
from django.utils import timezone

from agents.models import ShareLink
from agents.sessions import session_create, session_delete
from agents.sharing.links import (
    ERROR_DAYS,
    ERROR_KIND,
    ERROR_PUBLIC_OFF,
    ERROR_UNKNOWN,
    share_link_admits,
    share_link_create,
    share_link_list,
    share_link_open,
    share_link_revoke,
)

pytestmark = pytest.mark.django_db


@pytest.fixture
def session(team_a, alice):
    return session_create(team=team_a, user=alice, title="Roadmap")


def test_each_link_has_its_own_secret_and_only_its_digest_is_kept(session, alice):
    first, one = share_link_create(session=session, user=alice)
    second, two = share_link_create(session=session, user=alice, days=1)
    assert one != two and len(one) >= 43 and len(two) >= 43
    assert {first.token_hash, second.token_hash}.isdisjoint({one, two})
    assert share_link_open(secret=one) == first and share_link_open(secret=two) == second


@pytest.mark.parametrize(
    ("fields", "field", "message"),
    [
        ({"kind": "anyone"}, "kind", ERROR_KIND),
        ({"days": 3}, "days", ERROR_DAYS),
        ({"kind": "public"}, "kind", ERROR_PUBLIC_OFF),
    ],
)
def test_what_is_not_offered_is_refused(session, alice, settings, fields, field, message):
    settings.APTIX_PUBLIC_LINKS = False
    with pytest.raises(ValidationError) as refused:
        share_link_create(session=session, user=alice, **fields)
    assert refused.value.message_dict == {field: [message]}
    assert not ShareLink.objects.exists()


def test_a_team_link_admits_the_teams_members_and_a_public_one_anyone(session, alice, bob, carol, settings):
    settings.APTIX_PUBLIC_LINKS = True
    team, _ = share_link_create(session=session, user=alice)
    public, _ = share_link_create(session=session, user=alice, kind="public", include_tools=True)
    assert [share_link_admits(link=team, user=u) for u in (alice, bob, carol, AnonymousUser())] == [
        True,
        True,
        False,
        False,
    ]
    assert all(share_link_admits(link=public, user=u) for u in (carol, AnonymousUser()))
    assert (public.include_tools, public.include_files) == (True, False)  # as ticked


def test_only_working_links_are_listed_and_revoked(session, alice, bob, team_a):
    working, _ = share_link_create(session=session, user=alice)
    expired, _ = share_link_create(session=session, user=alice)
    ShareLink.objects.filter(pk=expired.pk).update(expires_at=timezone.now() - timedelta(minutes=1))
    other = session_create(team=team_a, user=alice, title="Gone soon")
    deleted, _ = share_link_create(session=other, user=alice)
    session_delete(session=other)
    assert list(share_link_list(user=alice)) == [working]
    assert share_link_revoke(user=bob, link_id=working.pk) is None  # not his
    assert share_link_revoke(user=alice, link_id=expired.pk) is None
    assert share_link_revoke(user=alice, link_id=deleted.pk) is None
    assert share_link_revoke(user=alice, link_id=working.pk) == working
    assert list(share_link_list(user=alice)) == []


def test_an_unknown_secret_and_a_public_link_while_off_are_both_unknown(session, alice, settings):
    settings.APTIX_PUBLIC_LINKS = True
    _, secret = share_link_create(session=session, user=alice, kind="public")
    settings.APTIX_PUBLIC_LINKS = False
    for tried in (secret, "not-a-link"):
        with pytest.raises(ValidationError) as refused:
            share_link_open(secret=tried)
        assert refused.value.messages == [ERROR_UNKNOWN] and refused.value.code == "unknown"
