"""The invalid-token limit per address holds under concurrent requests: of a burst of guesses, exactly
the limit's count are answered "invalid" and the rest refused (the count and the verdict are one atomic
step); valid tokens from the same address are never refused for the guesses' count."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

from django.db import connections
from django.test import RequestFactory, override_settings

from aptix.bearer import RateLimited, bearer_user
from aptix.tokens import api_token_create
from tests.helpers import async_db

GUESSES = 30
LIMIT = 20


def _guess_all(secret_of) -> list[str]:
    """GUESSES requests from one address at once; what each got: "invalid" (401), "user" or "limited" (429)."""
    barrier = threading.Barrier(GUESSES)

    def one(i: int) -> str:
        request = RequestFactory().post("/api/v1/agent/execute", HTTP_AUTHORIZATION=f"Bearer {secret_of(i)}")
        barrier.wait()
        try:
            return "invalid" if bearer_user(request) is None else "user"
        except RateLimited:
            return "limited"
        finally:
            connections.close_all()

    with ThreadPoolExecutor(GUESSES) as pool:
        return list(pool.map(one, range(GUESSES)))


@async_db  # threads need committed data
@override_settings(APTIX_RATE_BAD_TOKENS=f"{LIMIT}/m", APTIX_RATE_API=None)
def test_concurrent_guesses_are_told_invalid_at_most_the_limit():
    outcomes = _guess_all(lambda i: f"apx_guess{i}")
    assert outcomes.count("invalid") == LIMIT
    assert outcomes.count("limited") == GUESSES - LIMIT


@async_db  # threads need committed data
@override_settings(APTIX_RATE_BAD_TOKENS=f"{LIMIT}/m", APTIX_RATE_API=None)
def test_a_burst_of_valid_tokens_is_not_counted_as_guesses(alice):
    _, secret = api_token_create(user=alice)
    outcomes = _guess_all(lambda i: secret)  # more requests than the bad-token limit, all with a good token
    assert outcomes == ["user"] * GUESSES
    assert _guess_all(lambda i: f"apx_guess{i}").count("invalid") == LIMIT  # none was counted
