"""Which projects a turn's knowledge search may read: its mode's knowledge scope (AgentMode.knowledge_scope,
modes/validators.py) resolved for the session's user.

- "project" (the default): the session's project, if it has one;
- "none": nothing (knowledge_search is not offered);
- a list of project ids or names: those projects, whatever project the session is in (a "policy Q&A"
  mode over a company-wide policy library); the word "project" in the list adds the session's own.

Whatever the scope says, only projects the user is a member of now count (projects/services.py
project_list: the whole team's or chosen members', not archived): a name or id the user cannot see
resolves to nothing, exactly like one that does not exist, so a scope never widens what a person may
read. Names match case-insensitively; a name two of the user's teams both use names both projects."""

from __future__ import annotations

from typing import Any

from modes.validators import KNOWLEDGE_NONE, KNOWLEDGE_PROJECT

from .services import project_list


def mode_knowledge_scope(mode: Any) -> Any:
    """The knowledge scope of `mode` (an AgentMode, or its draft's; None: the session's mode is gone):
    "project", the default, when there is no mode."""
    return mode.knowledge_scope if mode is not None else KNOWLEDGE_PROJECT


def searchable_projects(session: Any, scope: Any = KNOWLEDGE_PROJECT) -> list[str]:
    """The ids of the projects a turn of `session` in a mode of knowledge scope `scope` searches (its
    user's, resolved now: an archived project or one they left counts no more)."""
    return knowledge_projects(user=session.user, session_project_id=session.project_id, scope=scope)


def knowledge_projects(*, user: Any, session_project_id: str | None, scope: Any) -> list[str]:
    """The ids of the projects a search in a session of `user` (in `session_project_id`, or none) with a
    mode of knowledge scope `scope` reads, in the scope's order, each once."""
    if scope == KNOWLEDGE_NONE or not getattr(user, "is_authenticated", False):
        return []
    wanted = [KNOWLEDGE_PROJECT] if scope in (KNOWLEDGE_PROJECT, None, "") else list(scope)
    visible = list(project_list(user=user).values_list("id", "name"))
    found: list[str] = []
    for item in wanted:
        text = str(item).strip()
        if text == KNOWLEDGE_PROJECT:
            ids = [pid for pid, _ in visible if pid == session_project_id]
        else:
            ids = [pid for pid, name in visible if pid == text or name.casefold() == text.casefold()]
        found.extend(pid for pid in ids if pid not in found)
    return found
