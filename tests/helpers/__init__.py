"""Test helpers shared across apps."""

from __future__ import annotations

import json

import pytest
from asgiref.sync import ThreadSensitiveContext, sync_to_async
from django.db import connections
from django.test import AsyncClient

# Async tests whose database work all runs on asgiref's sync thread (the ORM's async calls, Channels'
# consumers, and the turn's event writes and live renders, which tests/conftest.py's `inline_db`
# fixture moves there: agents.events.writer.db_threads_inline) run in the test's transaction, rolled
# back afterwards like any `django_db` test: that thread is handed the test's connection.
inline_db = pytest.mark.inline_db
# Async tests that need committed rows: another process reads them (a worker, a live server), or
# threads of their own connect (a request's context under ServerLikeAsyncClient, asyncio.to_thread,
# the writer's group commit). The flush after such a test would also wipe the catalog and groups the
# migrations seeded; serialized_rollback restores them.
async_db = pytest.mark.django_db(transaction=True, serialized_rollback=True)


class ServerLikeAsyncClient(AsyncClient):
    """Django's AsyncClient, but each request runs in its own ThreadSensitiveContext as under a real
    ASGI server (Django's ASGIHandler does this; AsyncClientHandler does not). Without it the sync
    middleware of a request runs on the process-wide sync thread, which the turn runs that the
    request dispatched (detached tasks) also need: a deadlock no server would have."""

    async def request(self, **request):
        async with ThreadSensitiveContext():
            try:
                return await super().request(**request)
            finally:
                # The test client keeps Django from closing connections at the end of a request, and
                # this context's thread ends with it: close its connection, or PostgreSQL's test
                # database cannot be dropped ("being accessed by other users").
                await sync_to_async(connections.close_all)()


def mode_admin_form(mode, **changes) -> dict:
    """The catalog admin's change form for `mode` as it stands, with `changes` (None drops a field:
    an unticked checkbox)."""
    data = {
        "key": mode.key,
        "display_name": mode.display_name,
        "description": mode.description,
        "system_prompt_summary": mode.system_prompt_summary,
        "system_prompt": mode.system_prompt,
        "human_role_hints": "\n".join(mode.human_role_hints),
        "example_utterances": "\n".join(mode.example_utterances),
        "test_utterances": "\n".join(mode.test_utterances),
        "checks": json.dumps(mode.checks),
        "tool_policy": "\n".join(mode.tool_policy),
        "approval_policy": "\n".join(mode.approval_policy),
        "model": mode.model,
        "execution": mode.execution,
        "ordering": mode.ordering,
        "is_active": "on" if mode.is_active else None,
        "is_default": "on" if mode.is_default else None,
        "teams": [team.pk for team in mode.teams.all()] if mode.pk else [],
    }
    data.update(changes)
    return {k: v for k, v in data.items() if v is not None}


def answered_turn(team, user, title: str, answer: str, question: str = "A question"):
    """A new session of `user` whose one turn asked `question` and ended with `answer` (the turn)."""
    from django.utils import timezone

    from agents.models import Turn
    from agents.sessions import session_create

    session = session_create(team=team, user=user, title=title)
    return Turn.objects.create(
        session=session,
        index=1,
        user_message=question,
        mode=session.mode,
        response_mode=session.mode,
        status=Turn.Status.COMPLETED,
        answer=answer,
        finished_at=timezone.now(),
    )
