"""A server's prompts (MCP `prompts/list`), listed once its session is up and kept in its status (the
composer's `/` menu and the API list them), and `prompts/get` of one with its arguments
(McpHost.get_prompt), rendered as the text the composer inserts for the user to edit and send.

A prompt is the server's text, asked for by the user: getting one runs nothing on the user's behalf
but that request (any elicitation it triggers has nobody to ask and is cancelled, elicitation.py).
A server that acts as each user (userpool.py) is asked over the asking user's own connection."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

import mcp_types as types

logger = logging.getLogger("aptix.mcp")

MAX_LISTED = 200  # prompts kept per server
MAX_ARGUMENT_CHARS = 10_000  # of one argument's value
MAX_TEXT_CHARS = 100_000  # of the rendered text: what one message may hold (agents/turns.py)
ROLE_LABELS = {"user": "User", "assistant": "Assistant"}


@dataclass(frozen=True)
class PromptArgument:
    name: str
    description: str = ""
    required: bool = False
    title: str = ""


@dataclass(frozen=True)
class PromptInfo:
    """One prompt a server lists: its name (what `prompts/get` takes), a title and description to show,
    and its arguments (all strings, per the specification)."""

    name: str
    title: str = ""
    description: str = ""
    arguments: tuple[PromptArgument, ...] = ()

    def as_json(self, server: str) -> dict[str, Any]:
        """The API's and the composer's shape (camelCase like the rest of the API)."""
        return {
            "server": server,
            "name": self.name,
            "title": self.title or self.name,
            "description": self.description,
            "arguments": [
                {"name": a.name, "title": a.title or a.name, "description": a.description, "required": a.required}
                for a in self.arguments
            ],
        }


class PromptRefused(Exception):
    """Why a prompt could not be got: `status` as an HTTP status (404 unknown, 400 bad arguments, 409
    a per-user server the user has not connected, 502 the server failed), `field` the input at fault."""

    def __init__(self, status: int, message: str, field: str | None = None) -> None:
        super().__init__(message)
        self.status, self.message, self.field = status, message, field


def not_offered(server: str, name: str) -> PromptRefused:
    """A prompt nobody here offers (to this user): 404."""
    return PromptRefused(404, f'No MCP server here offers the prompt "{name}" of "{server}".', "name")


@dataclass(frozen=True)
class RenderedPrompt:
    """A prompt as got: its messages as the server sent them (JSON) and as one text."""

    server: str
    name: str
    description: str
    messages: list[dict[str, Any]]
    text: str

    def as_json(self) -> dict[str, Any]:
        return {
            "server": self.server,
            "name": self.name,
            "description": self.description,
            "messages": self.messages,
            "text": self.text,
        }


async def list_prompts(client: Any) -> tuple[PromptInfo, ...]:
    """The server's prompts (none when it does not declare `prompts`); a server that fails to list
    them is logged and shows none, its tools still work."""
    if client.server_capabilities.prompts is None:
        return ()
    found: list[PromptInfo] = []
    try:
        cursor = None
        while len(found) < MAX_LISTED:
            page = await client.list_prompts(cursor=cursor)
            found += [_info(prompt) for prompt in page.prompts]
            if (cursor := page.next_cursor) is None:
                break
    except Exception as exc:  # noqa: BLE001 - the prompts are extra: the server's tools go on
        logger.warning("MCP: could not list the prompts (%s: %s)", type(exc).__name__, exc)
    return tuple(found[:MAX_LISTED])


def _info(prompt: types.Prompt) -> PromptInfo:
    arguments = tuple(
        PromptArgument(a.name, (a.description or "").strip(), bool(a.required), a.title or "")
        for a in prompt.arguments or ()
    )
    return PromptInfo(prompt.name, prompt.title or "", (prompt.description or "").strip(), arguments)


def clean_arguments(prompt: PromptInfo, given: Any) -> dict[str, str]:
    """The arguments to send: an object of strings, each one the prompt takes, the required ones not
    empty. An empty optional one is left out (the server's default applies)."""
    if given is None:
        given = {}
    if not isinstance(given, dict) or not all(isinstance(v, str) for v in given.values()):
        raise PromptRefused(400, "'arguments' must be an object of strings.", "arguments")
    known = {a.name for a in prompt.arguments}
    if unknown := sorted(set(given) - known):
        message = f'The prompt "{prompt.name}" takes no argument "{unknown[0]}".'
        raise PromptRefused(400, message, f"arguments.{unknown[0]}")
    for argument in prompt.arguments:
        value = given.get(argument.name, "")
        if argument.required and not value.strip():
            raise PromptRefused(400, f'"{argument.title or argument.name}" is required.', f"arguments.{argument.name}")
        if len(value) > MAX_ARGUMENT_CHARS:
            raise PromptRefused(
                400, f"An argument holds at most {MAX_ARGUMENT_CHARS:,} characters.", f"arguments.{argument.name}"
            )
    return {name: value for name, value in given.items() if value != ""}


def rendered(server: str, prompt: PromptInfo, result: types.GetPromptResult) -> RenderedPrompt:
    """The server's answer to `prompts/get` of `prompt`, as the composer and the API show it."""
    return RenderedPrompt(
        server=server,
        name=prompt.name,
        description=(result.description or prompt.description or "").strip(),
        messages=[m.model_dump(mode="json", by_alias=True, exclude_none=True) for m in result.messages],
        text=render(result.messages),
    )


def render(messages: list[types.PromptMessage]) -> str:
    """The messages as one text: each message's content, blank lines between; labelled by role
    ("User:", "Assistant:") when both speak, so a few-shot prompt keeps its shape. Text and text
    resources are written out, anything else (images, audio, binary resources) is named."""
    labelled = len({m.role for m in messages}) > 1
    parts = []
    for message in messages:
        text = _content_text(message.content)
        parts.append(f"{ROLE_LABELS.get(message.role, message.role)}: {text}" if labelled else text)
    text = "\n\n".join(part for part in parts if part)
    return text if len(text) <= MAX_TEXT_CHARS else text[: MAX_TEXT_CHARS - 1] + "…"


def _content_text(block: Any) -> str:
    if isinstance(block, types.TextContent):
        return block.text
    if isinstance(block, types.EmbeddedResource):
        resource = block.resource
        if isinstance(resource, types.TextResourceContents):
            return f"{resource.uri}:\n\n{resource.text}"
        return f"[resource {resource.uri}{f' ({resource.mime_type})' if resource.mime_type else ''}, not shown here]"
    if isinstance(block, types.ResourceLink):
        return f"[{block.title or block.name}]({block.uri})" if block.name else str(block.uri)
    kind = getattr(block, "type", "content")
    return f"[{kind} {getattr(block, 'mime_type', '')}, not shown here]".replace(" ,", ",")
