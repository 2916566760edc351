"""Every structured log line of a request or a turn carries its request id, turn id, session id and
user id where known: the request's X-Request-ID (kept when sane, made otherwise, sent back) and its
user once looked up (a turn's: tests/agents/run/test_log_ids.py)."""

from __future__ import annotations

import logging

import pytest
from django.conf import settings as django_settings
from django.http import HttpResponse
from django.test import Client, RequestFactory
from django.utils.functional import SimpleLazyObject

from aptix import logcontext
from tests.helpers.logs import json_lines


@pytest.fixture
def lines():
    with json_lines() as logged:
        yield logged


def test_the_configured_log_handler_adds_the_ids():
    console = django_settings.LOGGING["handlers"]["console"]
    assert django_settings.LOGGING["filters"][console["filters"][0]]["()"] == "aptix.logcontext.IdsFilter"
    assert django_settings.MIDDLEWARE[0] == "aptix.logcontext.RequestIds"


@pytest.mark.django_db
def test_a_sane_request_id_is_kept_and_sent_back_an_insane_one_replaced():
    client = Client()
    assert client.get("/healthz", headers={"X-Request-ID": "edge-42.a_b:c"})["X-Request-ID"] == "edge-42.a_b:c"
    for insane in ("two words", "x" * 129, "<script>", ""):
        made = client.get("/healthz", headers={"X-Request-ID": insane})["X-Request-ID"]
        assert made != insane and len(made) == 32
    assert len(client.get("/healthz")["X-Request-ID"]) == 32


@pytest.mark.django_db
def test_a_requests_log_lines_carry_its_id_and_its_user_once_looked_up(lines, alice):
    def view(request):
        logging.getLogger("aptix.test").info("before the user is looked up")
        assert request.user.is_authenticated
        logging.getLogger("aptix.test").info("after")
        return HttpResponse("ok")

    request = RequestFactory().get("/x", headers={"X-Request-ID": "req-1"})
    request.user = SimpleLazyObject(lambda: alice)  # as AuthenticationMiddleware sets it
    response = logcontext.RequestIds(view)(request)
    assert response["X-Request-ID"] == "req-1"
    logged = [line for line in lines() if line["logger"] == "aptix.test"]
    assert [line["request_id"] for line in logged] == ["req-1", "req-1"]
    assert "user_id" not in logged[0]  # logging never loads the login session itself
    assert logged[1]["user_id"] == alice.pk


def test_an_explicit_field_wins_over_the_context(lines):
    token = logcontext.bind(turn_id="from-context")
    try:
        logging.getLogger("aptix.test").warning("explicit", extra={"turn_id": "given"})
    finally:
        logcontext._ids.reset(token)
    assert [line["turn_id"] for line in lines() if line["message"] == "explicit"] == ["given"]
