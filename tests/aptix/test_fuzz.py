"""Property-based: no input, however crafted, gets a 5xx.

Hypothesis generates JSON API bodies (known and unknown fields, any JSON value, text with NUL
characters, unpaired surrogates and control characters, deep nesting, raw bytes that are not JSON)
and form posts to every workspace action (any field, any text, crafted ids in the URL). Each answer
must be below 500, and an API refusal must be the API's JSON error. The runs are derandomized, so a
failure reproduces; the offline model answers the requests that are valid.
"""

from __future__ import annotations

import json
from urllib.parse import quote as url_quote

import pytest
from django.test import override_settings
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agents.sessions import session_create
from agents.web.api import EXECUTE_FIELDS
from aptix.tokens import api_token_create

API = "/api/v1/agent/execute"
FUZZ = settings(
    max_examples=60,
    derandomize=True,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
    database=None,
)
# Limits the fuzzing must not trip (they are tested in their own tests): every example is a request.
NO_RATE_LIMITS = override_settings(APTIX_RATE_TURNS=None, APTIX_RATE_API=None, APTIX_RATE_BAD_TOKENS=None)

# Text as attackers send it: any code point, surrogates included, NUL and control characters likely.
nasty_text = st.one_of(
    st.text(
        st.one_of(
            st.characters(codec=None, exclude_categories=()), st.sampled_from(["\x00", "\ud800", "\udfff", "\u202e"])
        ),
        max_size=40,
    ),
    st.sampled_from(["<script>alert(1)</script>", "%00", "../../etc/passwd", "' OR 1=1 --", "a" * 5000]),
)
json_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    nasty_text,
)
json_values = st.recursive(
    json_scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(nasty_text, inner, max_size=4),
    max_leaves=12,
)
API_FIELDS = sorted(EXECUTE_FIELDS)
api_bodies = st.dictionaries(st.sampled_from(API_FIELDS) | nasty_text, json_values, max_size=5)
raw_bodies = st.one_of(
    api_bodies.map(lambda body: json.dumps(body).encode()),
    st.binary(max_size=60),
    st.integers(min_value=1, max_value=3000).map(lambda depth: ("[" * depth + "]" * depth).encode()),
    json_values.map(lambda value: json.dumps(value).encode()),
)


@pytest.fixture
def token(alice):
    return api_token_create(user=alice, name="fuzz")[1]


@pytest.mark.django_db
@FUZZ
@given(raw=raw_bodies)
def test_the_json_api_never_answers_5xx(client, token, raw):
    with NO_RATE_LIMITS:
        response = client.post(
            API, data=raw, content_type="application/json", headers={"Authorization": f"Bearer {token}"}
        )
    assert response.status_code < 500, (raw, response.content[:500])
    if response.status_code >= 400:
        body = json.loads(response.content)
        assert body["error"]["message"], body


FORM_FIELDS = [
    "message",
    "execution",
    "mode",
    "model",
    "team",
    "tool",
    "enabled",
    "decision",
    "scope",
    "tool_call_id",
    "choice_mode",
    "choice_branch",
    "continue",
    "reason",
    "q",
]
form_data = st.dictionaries(
    st.sampled_from(FORM_FIELDS) | nasty_text, nasty_text | st.lists(nasty_text, max_size=3), max_size=5
)
ACTIONS = [
    "turns",
    "turns/{id}/cancel",
    "turns/{id}/approvals",
    "grants/revoke",
    "mode",
    "model",
    "execution",
    "tools",
    "branch",
]


def quote(text: str) -> str:
    """Percent-encoded as a client would put it on the wire (a lone surrogate as its WTF-8 bytes)."""
    return url_quote(text.encode("utf-8", "surrogatepass"), safe="")


def form_body(data: dict[str, str | list[str]]) -> bytes:
    """An urlencoded body built from the fields' bytes (the test client refuses lone surrogates)."""
    return "&".join(f"{quote(name)}={quote(value)}" for name, value in form_pairs(data)).encode()


def form_pairs(data: dict[str, str | list[str]]) -> list[tuple[str, str]]:
    return [
        (name, value) for name, values in data.items() for value in ([values] if isinstance(values, str) else values)
    ]


FORM = "application/x-www-form-urlencoded"


@pytest.fixture
def signed_in(client, alice, team_a):
    client.force_login(alice)
    return client, session_create(team=team_a, user=alice, execution="ask")


@pytest.mark.django_db
@FUZZ
@given(action=st.sampled_from(ACTIONS), data=form_data, crafted_id=nasty_text, own_session=st.booleans())
def test_the_workspace_forms_never_answer_5xx(signed_in, action, data, crafted_id, own_session):
    client, session = signed_in
    session_id = session.id if own_session else quote(crafted_id)
    url = f"/sessions/{session_id}/" + action.format(id=quote(crafted_id)) + "/"
    with NO_RATE_LIMITS:
        response = client.post(url, form_body(data), content_type=FORM, headers={"HX-Request": "true"})
    assert response.status_code < 500, (url, data, response.content[:500])


@pytest.mark.django_db
@FUZZ
@given(data=form_data, query=nasty_text)
def test_new_sessions_and_the_session_list_never_answer_5xx(signed_in, data, query):
    client, _ = signed_in
    with NO_RATE_LIMITS:
        created = client.post("/sessions/new/", form_body(data), content_type=FORM)
        listed = client.get(f"/sessions/?q={quote(query)}")
        home = client.get(f"/?q={quote(query)}")
    assert created.status_code < 500, (data, created.content[:500])
    assert listed.status_code < 500 and home.status_code < 500, query
    if any("\x00" in name + value for name, value in form_pairs(data)):
        assert created.status_code == 400  # refused, naming the field (aptix/inputs.py)
