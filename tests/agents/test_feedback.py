"""Feedback on answers (agents/feedback/): a rating stored with what the turn ran with — its mode, the
mode's version as the run started, the model and the tools it called —, editable until the next turn,
bad values refused with nothing written; the curators' report per mode and mode version, and the
auditors' CSV."""

from __future__ import annotations

import csv
import io

import pytest
from asgiref.sync import sync_to_async
from django.core.exceptions import ValidationError
from django.urls import reverse

from agents.feedback.selectors import feedback_by_mode, feedback_by_mode_version, feedback_latest_comments
from agents.feedback.services import (
    CODE_NOT_ANSWERED,
    CODE_NOT_LATEST,
    ERROR_COMMENT,
    ERROR_NOT_LATEST,
    ERROR_RATING,
    ERROR_REASON,
    ERROR_REASON_WITH_UP,
    feedback_set,
)
from agents.models import AnswerFeedback, Turn
from agents.turns import error_code, turn_start
from modes.fingerprint import mode_fingerprint
from modes.models import AgentMode
from modes.versions import draft_save, version_publish
from tests.helpers import answered_turn, inline_db

pytestmark = inline_db

rate = sync_to_async(feedback_set)


async def _agent_turn(make_session, run_turn, model, text="Which modes are there?"):
    session = await make_session(execution="agent")
    model.reply("Looking.", tool_calls=[("agent_list_modes", "{}")])
    model.reply("There are several.")
    return await run_turn(session, text)


async def test_a_rating_is_stored_with_the_mode_its_version_the_model_and_the_tools(
    alice, make_session, run_turn, model
):
    turn = await _agent_turn(make_session, run_turn, model)
    general = await AgentMode.objects.aget(key=turn.mode)
    assert turn.trace["mode_version"] == general.version == 1  # recorded when the run started

    feedback = await rate(turn=turn, user=alice, rating="down", reason="wrong", comment="  It missed one.  ")

    row = await AnswerFeedback.objects.aget(turn=turn)
    assert (row.pk, row.user_id, row.rating, row.reason) == (feedback.pk, alice.pk, "down", "wrong")
    assert row.comment == "It missed one."  # trimmed
    assert (row.mode, row.mode_version, row.model_label) == ("general", "1", "scripted")
    assert row.tools == ["agent_list_modes"]


async def test_the_mode_version_is_the_catalog_entry_the_turn_ran_with(alice, make_session, run_turn, model):
    first = await _agent_turn(make_session, run_turn, model)
    await rate(turn=first, user=alice, rating="up")
    draft = await sync_to_async(draft_save)(mode="general", fields={"system_prompt": "One sentence."}, author=None)
    await sync_to_async(version_publish)(version=draft, by=None)
    model.reply("Two.")
    second = await run_turn(await make_session(), "How many?")
    await rate(turn=second, user=alice, rating="down")

    versions = {f.turn_id: f.mode_version async for f in AnswerFeedback.objects.all()}
    assert (versions[first.pk], versions[second.pk]) == ("1", "2")  # publishing the edit made version 2
    assert (await Turn.objects.aget(pk=first.pk)).trace["mode_version"] == 1  # the first kept its own
    assert (await Turn.objects.aget(pk=second.pk)).trace["mode_version"] == 2


def test_the_fingerprint_follows_behaviour_not_presentation(db):
    mode = AgentMode.objects.get(key="general")
    version = mode_fingerprint(mode)
    mode.display_name, mode.ordering = "Renamed", 7
    assert mode_fingerprint(mode) == version
    mode.tool_policy = ["image_gen"]
    assert mode_fingerprint(mode) != version
    assert len(version) == 12 and int(version, 16) >= 0


async def test_a_rating_changes_until_the_next_turn_then_is_final(alice, make_session, run_turn, model):
    session = await make_session()
    model.reply("Paris.")
    turn = await run_turn(session, "Capital of France?")
    await rate(turn=turn, user=alice, rating="down", reason="unsafe", comment="Hm.")
    await rate(turn=turn, user=alice, rating="up")  # changed: a 👍 carries no reason
    row = await AnswerFeedback.objects.aget(turn=turn)
    assert (row.rating, row.reason, row.comment) == ("up", "", "")

    model.reply("Berlin.")
    await run_turn(session, "And Germany?")
    with pytest.raises(ValidationError) as refused:
        await rate(turn=turn, user=alice, rating="down", reason="wrong")
    assert error_code(refused.value) == CODE_NOT_LATEST and refused.value.messages == [ERROR_NOT_LATEST]
    row = await AnswerFeedback.objects.aget(turn=turn)
    assert (row.rating, row.reason) == ("up", "")  # unchanged


def test_the_pages_buttons_keep_the_reason_of_an_unchanged_rating(alice, team_a):
    turn = answered_turn(team_a, alice, "Keep", "An answer.")
    feedback_set(turn=turn, user=alice, rating="down", reason="other", comment="Too long.")
    feedback_set(turn=turn, user=alice, rating="down", keep=True)  # 👎 pressed again
    row = AnswerFeedback.objects.get(turn=turn)
    assert (row.reason, row.comment) == ("other", "Too long.")
    feedback_set(turn=turn, user=alice, rating="down")  # the API's body replaces all three
    row.refresh_from_db()
    assert (row.reason, row.comment) == ("", "")


@pytest.mark.parametrize(
    ("values", "field", "message"),
    [
        ({"rating": "meh"}, "rating", ERROR_RATING),
        ({"rating": None}, "rating", ERROR_RATING),
        ({"rating": "down", "reason": "boring"}, "reason", ERROR_REASON),
        ({"rating": "down", "reason": 3}, "reason", ERROR_REASON),
        ({"rating": "up", "reason": "wrong"}, "reason", ERROR_REASON_WITH_UP),
        ({"rating": "down", "comment": "x" * 2001}, "comment", ERROR_COMMENT),
        ({"rating": "down", "comment": ["a list"]}, "comment", ERROR_COMMENT),
    ],
)
def test_bad_values_name_the_field_and_write_nothing(alice, team_a, values, field, message):
    turn = answered_turn(team_a, alice, "Bad", "An answer.")
    with pytest.raises(ValidationError) as refused:
        feedback_set(turn=turn, user=alice, **values)
    assert refused.value.message_dict == {field: [message]}
    assert not AnswerFeedback.objects.exists()


def test_not_helpful_is_accepted_as_spelled_in_the_issue(alice, team_a):
    turn = answered_turn(team_a, alice, "Spelling", "An answer.")
    assert feedback_set(turn=turn, user=alice, rating="down", reason="not-helpful").reason == "not_helpful"


def test_a_turn_without_an_answer_or_of_someone_else_is_not_rated(alice, bob, team_a):
    turn = answered_turn(team_a, alice, "Mine", "An answer.")
    with pytest.raises(ValidationError):
        feedback_set(turn=turn, user=bob, rating="up")
    running = turn_start(session=turn.session, text="And then?")
    with pytest.raises(ValidationError) as refused:
        feedback_set(turn=running, user=alice, rating="up")
    assert error_code(refused.value) == CODE_NOT_ANSWERED
    assert not AnswerFeedback.objects.exists()


def _rated(team, user, mode, version, rating, reason="", comment=""):
    turn = answered_turn(team, user, f"{mode} {rating}", "An answer.")
    Turn.objects.filter(pk=turn.pk).update(mode=mode, trace={"mode_version": version})
    turn.refresh_from_db()
    return feedback_set(turn=turn, user=user, rating=rating, reason=reason, comment=comment)


@pytest.fixture
def ratings(alice, team_a):
    _rated(team_a, alice, "general", "aaaa", "up")
    _rated(team_a, alice, "general", "aaaa", "down", "wrong", "Wrong year.")
    _rated(team_a, alice, "general", "bbbb", "up")
    _rated(team_a, alice, "data-analysis", "cccc", "down", "unsafe", "=HYPERLINK(\"x\")")
    return AnswerFeedback.objects.order_by("updated_at")


def test_the_report_gives_each_mode_and_version_its_share_of_bad_answers(ratings):
    assert [(g.mode, g.ratings, g.down, round(g.down_share, 2)) for g in feedback_by_mode()] == [
        ("data-analysis", 1, 1, 1.0),
        ("general", 3, 1, 0.33),
    ]
    by_version = {(g.mode, g.version): (g.ratings, g.down) for g in feedback_by_mode_version()}
    assert by_version == {("general", "aaaa"): (2, 1), ("general", "bbbb"): (1, 0), ("data-analysis", "cccc"): (1, 1)}
    assert [f.comment for f in feedback_latest_comments()] == ['=HYPERLINK("x")', "Wrong year."]  # newest first
    assert [g.mode for g in feedback_by_mode(mode="general")] == ["general"]


def test_curators_see_the_report_and_the_rated_turns_traces(client, curator, password, ratings):
    client.login(username=curator.username, password=password)
    page = client.get(reverse("admin:agents_answerfeedback_changelist"))
    assert page.status_code == 200
    html = page.content.decode()
    assert "Feedback on answers" in html and "Wrong year." in html and "33%" in html and "100%" in html
    rated = ratings.filter(comment="Wrong year.").get().turn
    assert reverse("admin:agents_turn_change", args=[rated.pk]) in html
    assert 'style="' not in html  # the CSP refuses inline styles
    assert 'id="feedback-csv"' not in html  # curators do not export
    assert client.get(reverse("admin:agents_turn_change", args=[rated.pk])).status_code == 200
    unrated = answered_turn(rated.session.team, rated.session.user, "Unrated", "An answer.")
    assert client.get(reverse("admin:agents_turn_change", args=[unrated.pk])).status_code == 403
    assert client.get(reverse("admin:agents_turn_changelist")).status_code == 403
    assert client.get(reverse("admin:agents_answerfeedback_changelist") + "?format=csv").status_code == 403


def test_auditors_export_every_rating_as_csv(client, auditor, password, ratings):
    client.login(username=auditor.username, password=password)
    page = client.get(reverse("admin:agents_answerfeedback_changelist"))
    assert 'id="feedback-csv"' in page.content.decode()
    response = client.get(reverse("admin:agents_answerfeedback_changelist") + "?format=csv")
    assert response.status_code == 200 and response["Content-Type"].startswith("text/csv")
    rows = list(csv.DictReader(io.StringIO(response.content.decode())))
    assert [(r["mode"], r["mode_version"], r["rating"], r["reason"]) for r in rows] == [
        ("general", "aaaa", "up", ""),
        ("general", "aaaa", "down", "wrong"),
        ("general", "bbbb", "up", ""),
        ("data-analysis", "cccc", "down", "unsafe"),
    ]
    assert rows[3]["comment"] == "'=HYPERLINK(\"x\")"  # no formula for the spreadsheet (csv_safe)
    assert rows[0]["user"] == "alice" and rows[0]["team"] == "Team A" and rows[0]["turn_id"] == ratings[0].turn_id


def test_the_report_is_for_curators_and_auditors_only(client, alice, bob, password):
    bob.is_staff = True
    bob.save()
    client.login(username=bob.username, password=password)
    assert client.get(reverse("admin:agents_answerfeedback_changelist")).status_code == 403
    client.login(username=alice.username, password=password)
    assert client.get(reverse("admin:agents_answerfeedback_changelist")).status_code == 302  # to the login
