"""The session manager: session_create and the single write path of AgentSession.mode."""

from __future__ import annotations

import itertools
import logging
import threading

import pytest
from django.core.exceptions import ValidationError
from django.db import IntegrityError, connection, transaction

from agents.models import AgentSession, Turn
from agents.sessions import SessionManager, SessionNotFoundError, session_create, session_list
from modes.catalog import ModeValidationError
from modes.models import AgentMode, ModeHistory
from tests.helpers import inline_db

pytestmark = pytest.mark.django_db


@pytest.fixture
def manager():
    return SessionManager()


@pytest.fixture
def session(team_a, alice):
    return session_create(team=team_a, user=alice)


# --- session_create ---------------------------------------------------------------------------


def test_new_session_gets_the_catalog_default(team_a, alice):
    session = session_create(team=team_a, user=alice)
    assert session.mode == "general"
    assert session.execution == "ask"
    assert len(session.id) == 32 and all(c in "0123456789abcdef" for c in session.id)


def test_new_session_follows_a_changed_default(team_a, alice):
    AgentMode.objects.update(is_default=False)
    AgentMode.objects.filter(key="data-analysis").update(is_default=True)
    assert session_create(team=team_a, user=alice).mode == "data-analysis"


@pytest.mark.parametrize(
    "requested, stored",
    [("data-analysis", "data-analysis"), ("  DDR-Authoring ", "ddr-authoring"), ("", "general"), (None, "general")],
)
def test_new_session_in_a_given_mode(team_a, alice, requested, stored):
    assert session_create(team=team_a, user=alice, mode=requested, execution="agent").mode == stored


def test_new_session_refuses_unknown_mode_and_writes_nothing(team_a, alice):
    with pytest.raises(ValidationError) as excinfo:
        session_create(team=team_a, user=alice, mode="astrology")
    assert "Valid modes: general, ddr-authoring, workflow-authoring, data-analysis" in str(excinfo.value)
    assert AgentSession.objects.count() == 0


def test_new_session_refuses_bad_execution(team_a, alice):
    with pytest.raises(ValidationError):
        session_create(team=team_a, user=alice, execution="turbo")


def test_mode_is_never_empty_in_the_database(session):
    with pytest.raises(IntegrityError), transaction.atomic():
        AgentSession.objects.filter(pk=session.pk).update(mode="")


def test_session_list_is_the_users_own(team_a, alice, bob):
    mine = session_create(team=team_a, user=alice)
    session_create(team=team_a, user=bob)
    assert list(session_list(user=alice)) == [mine]


# --- set_session_mode -------------------------------------------------------------------------


def test_change_writes_session_and_one_history_row(manager, session, team_a, alice, caplog):
    caplog.set_level(logging.INFO, logger="aptix.sessions")
    previous, new = manager.set_session_mode_sync(
        session.id, "  Data-Analysis ", "Charts needed", team_a, alice, tool_call_id="call_9"
    )
    assert (previous, new) == ("general", "data-analysis")
    session.refresh_from_db()
    assert session.mode == "data-analysis"
    [row] = ModeHistory.objects.all()
    assert (row.session_id, row.previous_mode, row.new_mode, row.reason) == (
        session.id,
        "general",
        "data-analysis",
        "Charts needed",
    )
    assert row.branch is False and row.team == team_a and row.user == alice
    assert row.tool_call_id == "call_9" and row.source == "tool"
    [record] = [r for r in caplog.records if getattr(r, "event", "") == "session.mode_changed"]
    assert record.session_id == session.id
    assert (record.previous_mode, record.new_mode, record.reason) == ("general", "data-analysis", "Charts needed")
    assert (record.org_id, record.user) == (team_a.id, "alice")


def test_a_branch_keeps_the_sessions_mode_and_records_who_asked_for_which(manager, session, team_a, alice):
    """ "New session in …" changed the mode of the session it was asked in; the new
    session has the mode, and this one's history records the request (branch set)."""
    previous, new = manager.set_session_mode_sync(
        session.id, "data-analysis", "Charts needed", team_a, alice, branch=True, tool_call_id="call_9"
    )
    assert (previous, new) == ("general", "data-analysis")
    session.refresh_from_db()
    assert session.mode == "general"
    [row] = ModeHistory.objects.all()
    assert (row.previous_mode, row.new_mode, row.branch, row.user, row.tool_call_id) == (
        "general",
        "data-analysis",
        True,
        alice,
        "call_9",
    )


def test_unknown_mode_is_rejected_with_valid_keys_and_no_write(manager, session, team_a, alice):
    with pytest.raises(ModeValidationError) as excinfo:
        manager.set_session_mode_sync(session.id, "astrology", "why not", team_a, alice)
    assert str(excinfo.value) == (
        "Unknown or inactive mode 'astrology'. Valid modes: general, ddr-authoring, workflow-authoring, data-analysis."
    )
    assert isinstance(excinfo.value, ValueError)
    session.refresh_from_db()
    assert session.mode == "general" and ModeHistory.objects.count() == 0


def test_inactive_mode_is_rejected(manager, session, team_a, alice):
    AgentMode.objects.filter(key="ddr-authoring").update(is_active=False)
    with pytest.raises(ModeValidationError) as excinfo:
        manager.set_session_mode_sync(session.id, "ddr-authoring", "r", team_a, alice)
    assert "ddr-authoring" not in str(excinfo.value).split("Valid modes:")[1]
    assert ModeHistory.objects.count() == 0


def test_change_to_the_current_mode_succeeds_without_a_row(manager, session, team_a, alice):
    assert manager.set_session_mode_sync(session.id, "GENERAL", "same", team_a, alice) == ("general", "general")
    assert ModeHistory.objects.count() == 0


def test_other_teams_session_is_not_found_and_untouched(manager, session, team_b, carol):
    with pytest.raises(SessionNotFoundError):
        manager.set_session_mode_sync(session.id, "data-analysis", "r", team_b, carol)
    session.refresh_from_db()
    assert session.mode == "general" and ModeHistory.objects.count() == 0


def test_missing_session_is_not_found(manager, team_a, alice):
    with pytest.raises(SessionNotFoundError):
        manager.set_session_mode_sync("f" * 32, "data-analysis", "r", team_a, alice)


def test_user_source_and_turn_are_recorded(manager, session, team_a, alice):
    turn = Turn.objects.create(session=session, index=1, user_message="hi", mode="general")
    manager.set_session_mode_sync(session.id, "workflow-authoring", "picked", team_a, alice, turn=turn, source="user")
    row = ModeHistory.objects.get()
    assert row.turn == turn and row.source == "user"


@inline_db
async def test_async_api_changes_the_mode(team_a, alice):
    from asgiref.sync import sync_to_async

    session = await sync_to_async(session_create)(team=team_a, user=alice)
    result = await SessionManager().set_session_mode(session.id, "ddr-authoring", "writing a DDR", team_a, alice)
    assert result == ("general", "ddr-authoring")
    assert (await AgentSession.objects.aget(pk=session.id)).mode == "ddr-authoring"
    assert await ModeHistory.objects.filter(session_id=session.id).acount() == 1


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_concurrent_changes_leave_session_and_history_consistent(team_a, alice):
    """Many threads switching one session at once: the row lock serialises them, so the history
    is one unbroken chain that ends at the session's mode."""
    if connection.vendor != "postgresql":
        pytest.skip("row locks need PostgreSQL (SQLite serialises writers anyway)")
    session = session_create(team=team_a, user=alice)
    manager = SessionManager()
    targets = ["data-analysis", "ddr-authoring", "workflow-authoring", "general"] * 4
    barrier = threading.Barrier(len(targets))
    errors: list[BaseException] = []

    def change(target: str) -> None:
        from django.db import connections

        try:
            barrier.wait()
            manager.set_session_mode_sync(session.id, target, f"to {target}", team_a, alice)
        except BaseException as exc:  # noqa: BLE001
            errors.append(exc)
        finally:
            connections.close_all()

    threads = [threading.Thread(target=change, args=(t,)) for t in targets]
    for t in threads:
        t.start()
    for t in threads:
        t.join()

    assert errors == []
    session.refresh_from_db()
    rows = list(ModeHistory.objects.filter(session=session).order_by("id"))
    assert rows, "some changes must have happened"
    assert rows[0].previous_mode == "general"
    for before, after in itertools.pairwise(rows):
        assert after.previous_mode == before.new_mode
    assert all(r.previous_mode != r.new_mode for r in rows)
    assert rows[-1].new_mode == session.mode
