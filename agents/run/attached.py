"""The turn's own message for the model, with what it carries: its files (agents/attachments.py
`user_message`) and its MCP resources, read here when the turn starts, on the server that lists each
(as the session's user: a per-user server reads over their connection) and given to the model within
the tool-result budget (APTIX_TOOL_RESULT_CHARS for all of a message's resources together): text as
text, an image stored for the session and shown to a vision model with the message, any other file
named. A resource that cannot be read is said so in its place (the turn goes on). A resource read is
subscribed to when its server offers subscriptions (tools/mcp/subscriptions.py): when it changes,
the message says "changed since attached" (agents/attachments.py resource_changed)."""

from __future__ import annotations

import asyncio
from typing import Any

from django.conf import settings

from tools.mcp import RichResult, mcp_host, store_attachments

from ..attachments import RESOURCES_NOTE, AttachedResource, user_message
from ..models import Turn
from .context import budgeted


async def turn_message(turn: Turn, *, vision: bool) -> dict[str, Any]:
    """The turn's user message: its text, the note on its files and the content of its resources."""
    message = user_message(turn.user_message, turn.files, vision=vision)
    if not turn.resources:
        return message
    limit = max(settings.APTIX_TOOL_RESULT_CHARS // len(turn.resources), 200)
    parts: list[str] = []
    images: list[dict[str, str]] = []
    for resource in turn.resources:
        text, found = await _read(resource, turn.session_id, turn.session.user_id)  # loaded with the turn
        parts.append(f"--- {resource['name']} ({resource['uri']}, MCP server {resource['server']}) ---\n")
        parts[-1] += budgeted(text, limit)
        images += found
    message["content"] += RESOURCES_NOTE + "\n\n".join(parts)
    if images and vision:
        message["images"] = [*message.get("images", []), *images]
    return message


async def _read(resource: AttachedResource, session_id: str, user_id: int) -> tuple[str, list[dict[str, str]]]:
    """(what the model reads of it, its images as `images` entries)."""
    host = mcp_host()
    if host is None:
        return "[It could not be read: no MCP servers run here.]", []
    result = await host.read_resource(resource["uri"], [resource["server"]], user_id=user_id)
    if not result.successful:
        return f"[It could not be read: {result.error_message}]", []
    # told when it changes (a server that offers subscriptions): the message then says so
    await host.subscribe_resource(resource["server"], resource["uri"])
    if isinstance(result, RichResult):
        stored = await asyncio.to_thread(store_attachments, result, session_id)
        images = [
            {"path": a.path, "mime": a.mime, "url": a.url} for a in stored.attachments if a.kind == "image" and a.path
        ]
        return stored.content_for_model(), images
    return result.content_for_model(), []
