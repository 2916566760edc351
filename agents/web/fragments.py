"""The htmx fragments of the session page that are not a turn: the one place that builds the
out-of-band set (composer, mode badge, tool panel, session meta and title, timeline appends), the
composer's error line and the stream cursor. Views and the live stream ask for the parts they changed;
the markup lives in templates (`agents/_oob.html` and the partials it includes)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal

from django.template.loader import render_to_string

from agents.llm import describe_provider
from agents.llm.catalog import model_for, models_config
from agents.selectors import mode_model, session_waiting, turn_replaced_ids
from files.services import session_files
from modes.catalog import modes_for_team
from modes.versions import draft_label

from .toolpanel import tool_panel

if TYPE_CHECKING:
    from agents.models import AgentSession, Turn
    from modes.models import AgentMode

ComposerState = Literal["busy", "idle"]


def session_fragments(
    session: AgentSession,
    *,
    append: str = "",
    first_turn: bool = False,
    composer: ComposerState | None = None,
    turn: Turn | None = None,
    mode_badge: bool = False,
    tools: bool = False,
    meta: bool = False,
    waiting: bool = False,
    model: bool = False,
    files: bool = False,
) -> str:
    """Out-of-band swaps for the parts of the session page named: `append` is HTML added at the end of
    the timeline; `first_turn` retitles the session (header and sidebar) and drops the empty-chat
    hint; `composer` redraws the composer busy (with the `turn` that keeps it busy) or idle;
    `waiting` the header's "waiting for your approval"; `model` the header's model; `files` the Files panel; the
    others redraw their region as stored."""
    if waiting or meta:  # both show whether a turn waits for approval: as of now, not as loaded
        session.has_waiting_turn = session_waiting(session=session)
    context = {
        "session": session,
        "append": append,
        "first_turn": first_turn,
        "composer": composer is not None,
        "busy": composer == "busy",
        "turn": turn,
        "mode_badge": mode_badge,
        "tools": tool_panel(session) if tools else None,
        "meta": meta,
        "waiting": waiting,
        "model_part": model,
        "files": session_files(session.id) if files else None,
    }
    if mode_badge:  # the badge and the popover's catalog, which marks the current mode
        context.update(mode_context(session))
    if model:
        context.update(session_model_context(session))
    return render_to_string("agents/_oob.html", context)


def files_panel(session: AgentSession, *, oob: bool = False) -> str:
    """The session's Files panel (its files, each with its download and Delete)."""
    return render_to_string("agents/_files.html", {"session": session, "files": session_files(session.id), "oob": oob})


def mode_context(session: AgentSession, catalog: list[AgentMode] | None = None) -> dict[str, Any]:
    """The catalog of the session's team and the display name of the session's mode (the key for a
    mode no longer in it), for the mode badge and its popover."""
    catalog = modes_for_team(session.team_id) if catalog is None else catalog
    name = next((m.display_name for m in catalog if m.key == session.mode), session.mode)
    # A curator's "Try it" session runs on a draft of its mode: labelled "draft vN" where the mode shows.
    return {"catalog": catalog, "mode_name": name, "mode_draft": draft_label(session.mode_draft_id, session.mode)}


def composer_error(message: str) -> str:
    """The line under the composer, replaced out of band with `message`."""
    return render_to_string("agents/_composer.html#composer-error", {"error": message, "error_oob": True})


def stream_cursor(turn_id: str, seq: int) -> str:
    """The last event the page shows (out of band): a reconnecting socket resumes after it."""
    return render_to_string(
        "agents/session_detail.html#stream-cursor", {"cursor_turn": turn_id, "cursor_seq": seq, "oob": True}
    )


def session_model_context(session: AgentSession) -> dict[str, Any]:
    """The model the session's next turn uses (its pick, else its mode's, else the default) and the
    models the user may pick from."""
    spec = model_for(session_model=session.model, mode_model=mode_model(key=session.mode))
    return {"model": describe_provider(spec), "model_key": spec.key, "models": models_config().choices}


def replaced_turns(turn: Turn) -> str:
    """The turns `turn` replaced (an edit, retry or regenerate) taken off the timeline, out of band: they
    are its earlier versions now (versions.py), for the tab that sent it again and, through the
    stream, every other tab open on the session."""
    ids = turn_replaced_ids(turn=turn)
    return render_to_string("agents/_turns_removed.html", {"removed": ids}) if ids else ""
