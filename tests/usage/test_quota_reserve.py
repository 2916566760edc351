"""Turns sent at once against a monthly token quota: each open turn holds APTIX_QUOTA_TURN_RESERVE tokens
of it (less what it used) until it ends, and turn starts in a team take their turns, so a burst starts
only what the quota has room for. Thirty turns at once against 100 tokens were all accepted and used
450 tokens (4.5×), the quota read with nothing reserved."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import pytest
from django.core.exceptions import ValidationError
from django.db import connections

from agents.models import Turn
from agents.sessions import session_create
from agents.turns import turn_cancel_unrun, turn_start
from aptix.models import Membership
from tests.helpers import async_db
from usage.quotas import CODE_QUOTA

pytestmark = async_db


def start_at_once(sessions) -> list[str]:
    def start(session) -> str:
        try:
            turn_start(session=session, text="Summarise the quarter.")
            return "started"
        except ValidationError as refused:
            assert refused.message_dict.keys() == {"quota"}, refused
            assert refused.error_dict["quota"][0].code == CODE_QUOTA
            return refused.message_dict["quota"][0]
        finally:
            connections.close_all()  # this thread's connection

    with ThreadPoolExecutor(max_workers=len(sessions)) as pool:
        return list(pool.map(start, sessions))


@pytest.fixture
def quota_100(team_a, settings):
    settings.APTIX_QUOTA_TURN_RESERVE = 2_000
    team_a.monthly_token_quota = 100
    team_a.save()
    return team_a


def test_thirty_turns_of_one_member_at_once_start_one(quota_100, alice):
    sessions = [session_create(team=quota_100, user=alice) for _ in range(30)]
    outcomes = start_at_once(sessions)
    assert outcomes.count("started") == 1 == Turn.objects.count()
    refused = next(o for o in outcomes if o != "started")
    assert "Team A's monthly quota of 100 tokens is taken by turns open now" in refused
    assert "2,000 tokens held until they end" in refused


def test_thirty_members_at_once_start_one_and_the_next_starts_when_it_ends(quota_100, django_user_model):
    members = [django_user_model.objects.create_user(f"member{n}") for n in range(30)]
    for member in members:
        Membership.objects.create(team=quota_100, user=member)
    sessions = [session_create(team=quota_100, user=member) for member in members]
    assert start_at_once(sessions).count("started") == 1
    running = Turn.objects.get()
    assert turn_cancel_unrun(running)  # it ended having used nothing: the quota has room again
    assert start_at_once(sessions[:5]).count("started") == 1


def test_without_a_quota_nothing_is_held(team_a, alice):
    sessions = [session_create(team=team_a, user=alice) for _ in range(10)]
    assert start_at_once(sessions) == ["started"] * 10
