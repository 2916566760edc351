"""An API token's "last used" is written at most once a minute (a program's every call wrote it before,
an UPDATE per API turn), and always when it is older than that."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from aptix.models import ApiToken
from aptix.tokens import LAST_USED_EVERY, api_token_create, api_token_user


def updates(queries: CaptureQueriesContext) -> list[str]:
    return [q["sql"] for q in queries.captured_queries if q["sql"].startswith("UPDATE")]


@pytest.mark.django_db
def test_last_used_is_written_once_a_minute(alice):
    token, secret = api_token_create(user=alice, name="script")
    assert api_token_user(f"Bearer {secret}") == alice
    first = ApiToken.objects.get(pk=token.pk).last_used_at
    assert first is not None
    with CaptureQueriesContext(connection) as queries:
        assert api_token_user(f"Bearer {secret}") == alice
    assert updates(queries) == []
    assert ApiToken.objects.get(pk=token.pk).last_used_at == first

    ApiToken.objects.filter(pk=token.pk).update(last_used_at=timezone.now() - LAST_USED_EVERY - timedelta(seconds=1))
    assert api_token_user(f"Bearer {secret}") == alice
    assert ApiToken.objects.get(pk=token.pk).last_used_at > first
