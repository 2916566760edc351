"""A routing case's session is nobody's to see while its turn runs: not in the sidebar, not found by
its search, not served as a page, not listed or read by the JSON API, though a session of the same
user beside it is."""

from __future__ import annotations

import json

import pytest
from django.urls import reverse

from agents.catalog_tests.cases import case_turn_start
from agents.sessions import session_create
from aptix.tokens import api_token_create

MESSAGE = "Plot the quarterly pears harvest"


@pytest.fixture
def hidden_and_visible(team_a, alice):
    hidden = case_turn_start(user=alice, team=team_a, utterance=MESSAGE, model="").session
    visible = session_create(team=team_a, user=alice, title="Pears, visible")
    return hidden, visible


def test_the_sidebar_and_its_search_leave_a_case_session_out(client, alice, password, hidden_and_visible):
    hidden, visible = hidden_and_visible
    assert hidden.catalog_test and not visible.catalog_test
    client.login(username="alice", password=password)
    listed = client.get(reverse("session-list")).content.decode()
    assert visible.id in listed and hidden.id not in listed
    found = client.get(reverse("session-list"), {"q": "pears"}).content.decode()
    assert visible.id in found and hidden.id not in found and MESSAGE not in found
    assert client.get(reverse("session-detail", args=[hidden.id])).status_code == 404


def test_the_api_neither_lists_nor_serves_a_case_session(client, alice, hidden_and_visible):
    hidden, visible = hidden_and_visible
    _, secret = api_token_create(user=alice, name="ci")
    headers = {"Authorization": f"Bearer {secret}"}
    body = json.loads(client.get("/api/v1/conversations", headers=headers).content)
    listed = json.dumps(body)
    assert visible.id in listed and hidden.id not in listed
    assert client.get(f"/api/v1/conversations/{hidden.id}", headers=headers).status_code == 404
