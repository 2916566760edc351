"""Conversation management for users: rename, pin,
archive, delete (soft: the audit trail stays), export as JSON and Markdown, sidebar paging and search
snippets. Every action is the owner's only (404 for anyone else) and bad input gets a clear 4xx."""

from __future__ import annotations

import json
import re

import pytest
from django.core.exceptions import ValidationError
from django.urls import reverse
from django.utils import timezone

from agents.models import AgentSession, Turn, TurnEvent
from agents.sessions import (
    ERROR_SESSION_BUSY,
    ERROR_TITLE_EMPTY,
    ERROR_TITLE_TOO_LONG,
    session_create,
    session_delete,
    session_manager,
)
from agents.turns import ERROR_SESSION_DELETED, turn_start
from agents.web.views.sidebar import PAGE_SIZE, snippet_of
from modes.models import ModeHistory

pytestmark = pytest.mark.django_db


@pytest.fixture
def session(team_a, alice):
    return session_create(team=team_a, user=alice, title="Revenue questions")


@pytest.fixture
def signed_in(client, alice, password):
    client.login(username="alice", password=password)
    return client


def _turn(session, index=1, *, message="Chart revenue", answer="Here it is.", status=Turn.Status.COMPLETED):
    finished = timezone.now() if status in Turn.FINAL_STATUSES else None
    return Turn.objects.create(
        session=session,
        index=index,
        user_message=message,
        mode=session.mode,
        response_mode=session.mode,
        status=status,
        answer=answer,
        finished_at=finished,
    )


def _post(client, name, session, **data):
    return client.post(reverse(name, args=[session.id]), data)


def test_the_owner_renames_and_bad_titles_are_refused_with_the_reason(signed_in, session):
    response = _post(signed_in, "session-rename", session, title="  Q3 revenue  ")
    assert response.status_code == 303 and response["Location"] == reverse("session-detail", args=[session.id])
    session.refresh_from_db()
    assert session.title == "Q3 revenue"

    for title, error in [("   ", ERROR_TITLE_EMPTY), ("x" * 201, ERROR_TITLE_TOO_LONG)]:
        refused = _post(signed_in, "session-rename", session, title=title)
        assert refused.status_code == 400 and error in refused.content.decode()
    session.refresh_from_db()
    assert session.title == "Q3 revenue"


def test_nobody_else_reaches_any_action(client, session, bob, carol, password):
    _turn(session)
    actions = [
        ("session-rename", {"title": "mine"}),
        ("session-pin", {"pinned": "1"}),
        ("session-archive", {"archived": "1"}),
        ("session-delete", {}),
    ]
    for username in ["bob", "carol"]:
        client.login(username=username, password=password)
        for name, data in actions:
            assert _post(client, name, session, **data).status_code == 404, (username, name)
        for fmt in ["json", "md"]:
            assert client.get(reverse("session-export", args=[session.id, fmt])).status_code == 404
    client.logout()
    assert _post(client, "session-delete", session).status_code == 302  # to the login page
    assert client.get(reverse("session-export", args=[session.id, "json"])).status_code == 302
    session.refresh_from_db()
    assert session.title == "Revenue questions" and not (session.pinned_at or session.archived_at or session.deleted_at)


def test_actions_are_post_only_and_flags_must_be_0_or_1(signed_in, session):
    assert signed_in.get(reverse("session-pin", args=[session.id])).status_code == 405
    refused = _post(signed_in, "session-pin", session, pinned="yes")
    assert refused.status_code == 400 and "Send pinned=1 or pinned=0." in refused.content.decode()
    assert _post(signed_in, "session-archive", session).status_code == 400


def test_a_pinned_session_heads_the_sidebar_without_reordering_by_time(signed_in, team_a, alice, session):
    newer = session_create(team=team_a, user=alice, title="Newer")
    before = AgentSession.objects.get(pk=session.pk).updated_at
    assert _post(signed_in, "session-pin", session, pinned="1").status_code == 303
    assert AgentSession.objects.get(pk=session.pk).updated_at == before
    html = signed_in.get(reverse("session-list")).content.decode()
    assert html.index("Revenue questions") < html.index("Newer") and 'title="Pinned"' in html
    _post(signed_in, "session-pin", session, pinned="0")
    html = signed_in.get(reverse("session-list")).content.decode()
    assert html.index("Newer") < html.index("Revenue questions") and newer.id in html


def test_an_archived_session_leaves_the_list_but_stays_readable(signed_in, session):
    _post(signed_in, "session-archive", session, archived="1")
    assert "Revenue questions" not in signed_in.get(reverse("session-list")).content.decode()
    archived = signed_in.get(reverse("session-list"), {"view": "archived"}).content.decode()
    assert "Revenue questions" in archived
    page = signed_in.get(reverse("session-detail", args=[session.id]))
    assert page.status_code == 200 and "Unarchive" in page.content.decode()
    _post(signed_in, "session-archive", session, archived="0")
    assert "Revenue questions" in signed_in.get(reverse("session-list")).content.decode()


def test_a_deleted_session_is_gone_for_the_user_and_its_audit_stays(signed_in, session, alice):
    _turn(session)
    session_manager.set_session_mode_sync(session.id, "data-analysis", "by hand", None, alice, source="user")
    response = _post(signed_in, "session-delete", session)
    assert response.status_code == 303 and response["Location"] == reverse("home")
    assert signed_in.get(reverse("session-detail", args=[session.id])).status_code == 404
    assert signed_in.get(reverse("session-export", args=[session.id, "json"])).status_code == 404
    assert "Revenue questions" not in signed_in.get(reverse("session-list")).content.decode()
    assert _post(signed_in, "session-delete", session).status_code == 404  # once
    # The row stays (soft delete), with its turns and the mode history auditors read.
    assert AgentSession.objects.get(pk=session.pk).deleted_at is not None
    assert ModeHistory.objects.filter(session_id=session.id, new_mode="data-analysis").count() == 1
    assert Turn.objects.filter(session_id=session.id).count() == 1


def test_a_session_with_a_running_turn_is_not_deleted(signed_in, session):
    _turn(session, status=Turn.Status.RUNNING)
    refused = _post(signed_in, "session-delete", session)
    assert refused.status_code == 409 and ERROR_SESSION_BUSY in refused.content.decode()
    assert AgentSession.objects.get(pk=session.pk).deleted_at is None


IMAGE = "ab" * 16  # an image name as image_gen stores it (32 hex)


def _traced_turn(session):
    turn = _turn(session, message="Draw it", answer="Done: ![chart](/media/images/s/1.png)")
    image = json.dumps({"url": f"/media/images/{session.id}/{IMAGE}.png", "alt": "Revenue"})
    calls = [
        ("tool.called", {"id": "c1", "name": "image_gen", "kind": "internal", "arguments": '{"title": "Revenue"}'}),
        ("tool.result", {"id": "c1", "name": "image_gen", "ok": True, "duration_ms": 12.5, "result": image}),
        ("tool.called", {"id": "c2", "name": "sql__query", "kind": "mcp", "arguments": '{"sql": "select ```"}'}),
    ]
    for seq, (kind, payload) in enumerate(calls, start=1):
        TurnEvent.objects.create(turn=turn, seq=seq, type=kind, payload=payload)
    turn.trace = {"mode_version": 3}  # what the run recorded: the version of the mode it ran with
    turn.save(update_fields=["trace"])
    return turn


def test_the_json_export_holds_turns_tool_calls_mode_changes_and_image_links(signed_in, session, alice):
    turn = _traced_turn(session)
    session_manager.set_session_mode_sync(session.id, "data-analysis", "charts", None, alice, turn=turn)
    response = signed_in.get(reverse("session-export", args=[session.id, "json"]))
    assert response.status_code == 200
    assert response["Content-Disposition"] == f'attachment; filename="aptix-session-{session.id}.json"'
    data = response.json()
    assert data["format"] == "aptix.session/1" and data["session"]["title"] == "Revenue questions"
    [exported] = data["turns"]
    assert exported["message"] == "Draw it"
    assert exported["answer"] == "Done: ![chart](http://testserver/media/images/s/1.png)"
    first, second = exported["toolCalls"]
    assert first["name"] == "image_gen" and first["ok"] is True and first["durationMs"] == 12.5
    assert first["image"] == f"http://testserver/media/images/{session.id}/{IMAGE}.png"
    assert second == {"id": "c2", "name": "sql__query", "kind": "mcp", "arguments": '{"sql": "select ```"}', "ok": None}
    assert exported["modeChanges"][0]["newMode"] == "data-analysis" and exported["modeChanges"][0]["reason"] == "charts"
    assert exported["modeVersion"] == 3  # the catalog version the turn ran with
    assert exported["modeChanges"][0]["modeVersion"] == 1  # data-analysis's published version it moved to
    assert data["modeChanges"] == exported["modeChanges"]


def test_the_markdown_export_reads_as_a_transcript(signed_in, session, alice):
    turn = _traced_turn(session)
    session_manager.set_session_mode_sync(session.id, "data-analysis", "charts", None, alice, turn=turn)
    response = signed_in.get(reverse("session-export", args=[session.id, "md"]))
    assert response.status_code == 200 and response["Content-Type"] == "text/markdown; charset=utf-8"
    text = response.content.decode()
    assert text.startswith("# Revenue questions\n")
    assert "**You:**\n\nDraw it" in text and "**Aptix:**\n\nDone: ![chart](http://testserver/media" in text
    assert f"![image_gen](http://testserver/media/images/{session.id}/{IMAGE}.png)" in text
    assert '````\n{"sql": "select ```"}\n````' in text  # a fence longer than the backticks inside
    assert "`sql__query` (mcp, not finished)" in text
    assert "**Mode changed:** general → data-analysis — charts" in text
    assert "## Turn 1 · ask · general v3 · " in text


def test_an_unknown_export_format_is_404(signed_in, session):
    assert signed_in.get(f"/sessions/{session.id}/export.pdf").status_code == 404


def test_the_sidebar_pages_beyond_its_first_hundred(signed_in, team_a, alice):
    AgentSession.objects.bulk_create(
        [AgentSession(team=team_a, user=alice, mode="general", title=f"S{i:03}") for i in range(PAGE_SIZE + 5)]
    )
    first = signed_in.get(reverse("session-list")).content.decode()
    assert first.count('<li class="') == PAGE_SIZE + 1  # the sessions and "Show more"
    more = re.search(r'hx-get="([^"]+)"', first)
    assert more and more.group(1) == reverse("session-list") + "?page=2"
    second = signed_in.get(more.group(1)).content.decode()
    assert "<ul" not in second and second.count("<li") == 5 and "Show more" not in second
    assert signed_in.get(reverse("session-list"), {"page": "x"}).status_code == 200  # a bad page is the first


def test_show_more_without_javascript_keeps_the_first_page(signed_in, team_a, alice):
    """ "Show more"'s href (followed without JavaScript, or clicked before htmx is ready: a browser test
    under load did) leads to the home page at ?page=2: it lists the first page too, not only the second."""
    AgentSession.objects.bulk_create(
        [AgentSession(team=team_a, user=alice, mode="general", title=f"S{i:03}") for i in range(PAGE_SIZE + 5)]
    )
    first = signed_in.get(reverse("home")).content.decode()
    href = re.search(r'<li class="more"><a class="button small-button" href="([^"]+)"', first)
    assert href and href.group(1) == reverse("home") + "?page=2"
    whole = signed_in.get(href.group(1)).content.decode()
    assert all(f">S{i:03}<" in whole for i in range(PAGE_SIZE + 5)) and "Show more" not in whole


def test_search_finds_answers_and_shows_where_with_a_snippet(signed_in, session):
    _turn(session, message="What sold best?", answer="Plums sold best in March, then pears in April.")
    html = signed_in.get(reverse("session-list"), {"q": "PEARS"}).content.decode()
    assert "Revenue questions" in html
    assert '<span class="muted">Aptix:</span> Plums sold best in March, then <mark>pears</mark> in April.' in html
    titled = signed_in.get(reverse("session-list"), {"q": "revenue"}).content.decode()
    assert "Revenue questions" in titled and "<mark>" not in titled  # the title shows the match


def test_an_answers_snippet_is_its_plain_text_with_the_match_marked(signed_in, session):
    """Snippets showed the answer's Markdown as stored: `**2025-12**`, ```` ```sql ````."""
    answer = (
        "Revenue peaked in **2025-12**:\n\n```sql\nSELECT month FROM orders\n```\n\n"
        "| month | total |\n|---|---|\n| 2025-12 | 9 |"
    )
    _turn(session, message="When did revenue peak?", answer=answer)
    html = signed_in.get(reverse("session-list"), {"q": "peaked"}).content.decode()
    snippet = re.search(r'<span class="snippet small">(.*?)</span>\s*(?:<|$)', html, re.S)
    assert snippet, html
    assert "<mark>peaked</mark> in 2025-12: SELECT month FROM orders month total 2025-12 9" in snippet.group(1)
    assert "**" not in snippet.group(1) and "```" not in snippet.group(1) and "|" not in snippet.group(1)
    in_markdown = signed_in.get(reverse("session-list"), {"q": "```sql"}).content.decode()
    assert "<mark>```sql</mark>" in in_markdown  # a match in the Markdown itself still shows where


def test_a_snippet_is_one_line_and_cut_with_ellipses():
    text = "a" * 100 + "\n\nthe needle\nis here " + "b" * 200
    snippet = snippet_of(text, "NEEDLE", "You")
    assert snippet is not None and snippet.match == "needle"
    assert snippet.before.startswith("…") and snippet.before.endswith("the ") and "\n" not in snippet.before
    assert snippet.after.startswith(" is here b") and snippet.after.endswith("…")
    assert snippet_of("nothing", "needle", "You") is None


@pytest.mark.django_db
def test_a_deleted_session_starts_no_turn_even_when_it_was_looked_up_before(team_a, alice):
    """The race of a message posted while another tab deletes the session: the turn's own lock sees it."""
    session = session_create(team=team_a, user=alice)
    looked_up = AgentSession.objects.get(pk=session.pk)  # what the posting request holds
    session_delete(session=session)
    with pytest.raises(ValidationError, match=ERROR_SESSION_DELETED):
        turn_start(session=looked_up, text="Hello")
    assert not looked_up.turns.exists()
