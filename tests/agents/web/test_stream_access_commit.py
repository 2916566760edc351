"""Streams are asked to check their access once the change that ended it is committed. The admin saves
a user, a membership or a session inside a transaction: a stream in another process asked before the
commit read the old row, found its access unchanged and stayed open until its periodic check (60 s)."""

from __future__ import annotations

import asyncio

import pytest
from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer
from django.db import transaction

from agents.sessions import session_create
from agents.web.streams import user_group
from aptix.models import Membership

pytestmark = pytest.mark.django_db


def _next_message(layer, channel: str) -> dict | None:
    async def receive() -> dict | None:
        try:
            return await asyncio.wait_for(layer.receive(channel), timeout=0.2)
        except TimeoutError:
            return None

    return async_to_sync(receive)()


@pytest.fixture
def users_streams(alice):
    """A channel in alice's user group, as each of her sockets is."""
    layer = get_channel_layer()
    channel = async_to_sync(layer.new_channel)()
    async_to_sync(layer.group_add)(user_group(alice.pk), channel)
    return layer, channel


def _deactivate(user) -> None:
    user.is_active = False
    user.save()


def _leave_team(user) -> None:
    Membership.objects.filter(user=user).delete()


def _delete_session(user) -> None:
    session_create(team=user.memberships.get().team, user=user).delete()


@pytest.mark.parametrize("change", [_deactivate, _leave_team, _delete_session])
def test_streams_are_asked_once_the_change_is_committed(
    alice, users_streams, change, django_capture_on_commit_callbacks
):
    layer, channel = users_streams
    with django_capture_on_commit_callbacks(execute=True), transaction.atomic():
        change(alice)
        assert _next_message(layer, channel) is None  # not while the change is uncommitted
    assert _next_message(layer, channel) == {"type": "access.check", "ended_session": None}
