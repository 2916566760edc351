"""A turn drawn from its events (agents/web/timeline.py), on the page and on the live stream alike: a
stopped turn's unfinished tool call says it was stopped, and the token count of a stopped or finished
turn counts what was sent and streamed, once."""

from __future__ import annotations

import pytest

from agents.sessions import session_create
from agents.web.live import LiveRenderer
from agents.web.timeline import render_turn
from tests.helpers.turns import TOOL_CALLED, add_events, ended_turn


@pytest.fixture
def session(team_a, alice):
    return session_create(team=team_a, user=alice, title="Plans")


@pytest.mark.django_db
def test_a_stopped_turn_shows_its_unfinished_tool_call_as_stopped_on_the_page_and_the_stream(session):
    turn = ended_turn(session, step_count=1)
    stored = add_events(turn, ("step.started", {"step": 1, "tokens": 300}), TOOL_CALLED, ("turn.cancelled", {}))
    for html in (render_turn(turn, stored), LiveRenderer(session).render(turn, "turn.cancelled", {}, 3)):
        assert 'class="item tool-card tool-stopped" id="tool-call_1"' in html
        assert "running…" not in html and "not finished: the turn ended first" in html


@pytest.mark.django_db
def test_a_stream_stopped_mid_reply_counts_the_request_and_what_was_streamed(session):
    streamed = "word " * 170  # 850 characters
    turn = ended_turn(session, answer=streamed.strip())
    stored = add_events(
        turn,
        ("step.started", {"step": 1, "tokens": 300}),
        ("model.delta", {"text": streamed[:400]}),
        ("model.delta", {"text": streamed[400:]}),
        ("turn.cancelled", {}),
    )
    html = render_turn(turn, stored)
    assert "~513 tokens (estimated)" in html  # 300 sent + 850 / 4 streamed, not "0 tokens"


@pytest.mark.django_db
def test_a_reported_usage_is_not_counted_twice(session):
    turn = ended_turn(session, status="completed", answer="Hi.", prompt_tokens=40, completion_tokens=2)
    stored = add_events(
        turn,
        ("step.started", {"step": 1, "tokens": 38}),
        ("model.delta", {"text": "Hi."}),
        ("model.message", {"step": 1, "content": "Hi.", "tool_calls": [], "usage": {}}),
        ("turn.completed", {}),
    )
    html = render_turn(turn, stored)
    assert "· 42 tokens" in html and "estimated" not in html


# --- a tool card shows its result readably ------------------------------------


def card_of(result: str, **extra) -> str:
    from django.template.loader import render_to_string

    from agents.web.timeline import tool_item

    called = {"id": "call_1", "name": "files_query", "kind": "internal", "arguments": '{"sql":"select 1"}'}
    item = tool_item(called, {"ok": True, "result": result, "duration_ms": 12, **extra})
    return render_to_string("agents/_event.html", {"item": item})


def test_a_json_result_is_indented_and_a_table_result_is_a_table():
    card = card_of('{"modes":[{"key":"general","displayName":"General"}]}')
    assert '{\n  &quot;modes&quot;: [\n    {\n      &quot;key&quot;: &quot;general&quot;' in card
    table = card_of("| region | revenue |\n| --- | --- |\n| North | 10 |\n| South | 7 |\n\n2 rows")
    assert '<div class="tool-table" role="region" aria-label="Result of files_query" tabindex="0">' in table
    assert '<th scope="col">region</th><th scope="col">revenue</th>' in table
    assert "<tr><td>North</td><td>10</td></tr><tr><td>South</td><td>7</td></tr>" in table
    assert "<pre>| region" not in table
    plain = card_of("Added note 1.")
    assert "<pre>Added note 1.</pre>" in plain
    broken = card_of("{not json")
    assert "<pre>{not json</pre>" in broken


def test_a_stopped_cards_duration_and_state_sit_together_at_its_end():
    card = card_of("", stopped=True)
    meta = card.split('<span class="tool-meta">', 1)[1].split("</summary>", 1)[0]
    assert '<span class="tool-duration">12 ms</span>' in meta and "not finished: the turn ended first" in meta
