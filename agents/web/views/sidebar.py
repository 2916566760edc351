"""The sidebar's session list: filtered (text, mode, active or archived), grouped by project once any
of the user's sessions is in one (each project by name, then "No project"), pinned sessions first, in
pages of PAGE_SIZE ("Show more" fetches the next page), and for a text filter a snippet of where each
session matches."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import urlencode

from django.http import HttpRequest

from agents.selectors import (
    by_project,
    session_list_filtered,
    session_shared_with,
    sessions_grouped_by_project,
    turn_matches,
)
from aptix.teams import team_list_for_user
from modes.catalog import modes_for_teams

from ..markdown import plain_text

if TYPE_CHECKING:
    from agents.models import AgentSession

PAGE_SIZE = 100
SHARED_SHOWN = 50  # the "Shared with me" section: the most recently active
SNIPPET_BEFORE = 40
SNIPPET_AFTER = 80
ARCHIVED = "archived"


@dataclass(frozen=True)
class Snippet:
    """Where a session matches the filter text: escaped by the template, the match marked."""

    before: str
    match: str
    after: str
    where: str  # "You" (a message) or "Aptix" (an answer)


def _page_number(raw: str) -> int:
    try:
        return max(1, min(int(raw), 10_000))
    except ValueError:
        return 1


def snippet_of(text: str, q: str, where: str) -> Snippet | None:
    """The first match of `q` in `text` (case-insensitive) with some words either side, on one line."""
    found = re.search(re.escape(q), text, re.IGNORECASE)
    if found is None:
        return None
    start, end = found.span()
    before = _one_line(text[max(0, start - SNIPPET_BEFORE) : start])
    after = _one_line(text[end : end + SNIPPET_AFTER])
    before = ("…" if start > SNIPPET_BEFORE else "") + before
    after = after + ("…" if end + SNIPPET_AFTER < len(text) else "")
    return Snippet(before, found.group(0), after, where)


def _one_line(text: str) -> str:
    return re.sub(r"\s+", " ", text)


def _attach_snippets(sessions: list[AgentSession], q: str) -> None:
    """`snippet` on each session whose title does not show the match: the first turn that holds it."""
    wanted = [s for s in sessions if q.lower() not in str(s).lower()]
    turns = turn_matches(sessions=wanted, q=q)
    found: dict[str, Snippet] = {}
    for turn in turns:
        if turn.session_id not in found:
            # An answer as it reads (its Markdown is no part of what the reader sees), else as stored: the
            # match may be in the Markdown itself.
            snippet = (
                snippet_of(turn.user_message, q, "You")
                or snippet_of(plain_text(turn.answer), q, "Aptix")
                or snippet_of(turn.answer, q, "Aptix")
            )
            if snippet is not None:
                found[turn.session_id] = snippet
    for session in sessions:
        session.snippet = found.get(session.id)  # type: ignore[attr-defined]  # shown by _session_list.html


@dataclass(frozen=True)
class Group:
    """A heading of the sidebar's list: a project (its page's link) or "No project" (`project` None)."""

    project: Any


def _mark_groups(sessions: list[AgentSession], previous: AgentSession | None) -> None:
    """`group` on each session that starts a group (`previous`: the row before the first, if any)."""
    last = previous.project_id if previous is not None else ...
    for session in sessions:
        session.group = Group(session.project) if session.project_id != last else None  # type: ignore[attr-defined]
        last = session.project_id


def sidebar_context(
    request: HttpRequest, current: AgentSession | None = None, *, whole_page: bool = False
) -> dict[str, Any]:
    """The sidebar's sessions: page `?page=N` alone for "Show more" (the list item it replaces), or,
    drawn on a whole page (`whole_page`), every session through page N: that is where "Show more"'s
    link leads without JavaScript (or when it is clicked before htmx is ready), and the first page
    must not vanish there."""
    q = request.GET.get("q", "").strip()[:200]
    mode = request.GET.get("mode", "").strip()[:64]
    view = ARCHIVED if request.GET.get("view") == ARCHIVED else ""
    page = _page_number(request.GET.get("page", "1"))
    listed = session_list_filtered(user=request.user, q=q, mode=mode, archived=view == ARCHIVED)
    grouped = sessions_grouped_by_project(user=request.user)
    if grouped:
        listed = by_project(listed)
    first = 0 if whole_page else (page - 1) * PAGE_SIZE
    # With groups, the row before the page too: a page that goes on with its group draws no new heading.
    before = 1 if grouped and first else 0
    rows = list(listed[first - before : page * PAGE_SIZE + 1])
    previous, rows = (rows[0] if before and rows else None), rows[before:]
    shown = page * PAGE_SIZE - first
    sessions, more = rows[:shown], len(rows) > shown
    if grouped:
        _mark_groups(sessions, previous)
    if q:
        _attach_snippets(sessions, q)
    filters = {k: v for k, v in (("q", q), ("mode", mode), ("view", view)) if v}
    return {
        "sessions": sessions,
        "grouped": grouped,  # by project: each session's row names its group (aptix.js moves it within it)
        "filter_q": q,
        "filter_mode": mode,
        "filter_view": view,
        "page": page,
        "next_page_query": urlencode({**filters, "page": page + 1}) if more else "",
        "current": current,
        "catalog": modes_for_teams(team_list_for_user(user=request.user)),  # the filter's modes: the user's teams'
        # Drawn with the whole page only (the list's own requests filter the user's sessions).
        "shared": session_shared_with(user=request.user, limit=SHARED_SHOWN) if whole_page else [],
    }
