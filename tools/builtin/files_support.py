"""What the files tools share: the session's files for the turn's user, their arguments, and text cut
to the result budget. The files themselves are read through the files services (files/), which
`tools` may import: files never imports tools or agents."""

from __future__ import annotations

import json
from typing import Any

from asgiref.sync import sync_to_async
from django.conf import settings

from aptix.ids import HEX_ID
from files.models import SessionFile
from files.project_files import session_visible_files

from ..base import InvokeResult, ToolContext

ERROR_NO_SESSION = "The files tools work inside a session; this call has none."
ERROR_NO_FILES = "This session has no files. Ask the user to attach one."


class ArgumentsError(ValueError):
    """The arguments are not what the tool takes: the message says what is."""


def arguments(arguments_json: str | None, example: str) -> dict[str, Any]:
    if arguments_json is None or not str(arguments_json).strip():
        return {}
    try:
        parsed = json.loads(arguments_json)
    except (TypeError, ValueError):
        parsed = None
    if parsed is None:
        parsed = {} if str(arguments_json).strip() == "null" else None
    if not isinstance(parsed, dict):
        raise ArgumentsError(f"The arguments must be a JSON object, e.g. {example}.")
    return parsed


async def files_for(context: ToolContext | None) -> list[SessionFile] | InvokeResult:
    """The live files of the context's session that belong to its user, then those of its project when
    the user is a member of it (files/project_files.py), or the tool error to return."""
    session_id = getattr(context, "session_id", None)
    user_id = getattr(getattr(context, "user", None), "id", None)
    if not session_id or user_id is None:
        return InvokeResult.from_error(ERROR_NO_SESSION)
    files = await sync_to_async(session_visible_files)(session_id, user_id)
    return files or InvokeResult.from_error(ERROR_NO_FILES)


def find_file(files: list[SessionFile], wanted: str) -> SessionFile | None:
    """The session's file named by id or by name (exactly, then ignoring case); None for anything
    else, someone else's id included."""
    wanted = wanted.strip()
    if HEX_ID.fullmatch(wanted):
        return next((f for f in files if f.pk == wanted), None)
    return next((f for f in files if f.name == wanted), None) or next(
        (f for f in files if f.name.lower() == wanted.lower()), None
    )


def budget() -> int:
    """Characters a result may take: the context's tool-result budget, less room for its footer."""
    return max(settings.APTIX_TOOL_RESULT_CHARS - 200, 100)


def cut(text: str, limit: int) -> tuple[str, bool]:
    """`text` within `limit` characters, cut at a line end where one is near; and whether it was cut."""
    if len(text) <= limit:
        return text, False
    head = text[:limit]
    line_end = head.rfind("\n")
    return (head[:line_end] if line_end > limit * 0.8 else head), True
