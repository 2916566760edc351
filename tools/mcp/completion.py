"""Argument completion (MCP `completion/complete`): the values a server suggests for one argument of
one of its prompts or resource templates while the user types it (the composer's prompt form shows
them in a <datalist>). McpHost.complete checks the request against what the server lists first;
a server that does not declare `completions` suggests nothing (an empty answer, not an error).

Refusals are PromptRefused (prompts.py), with the same statuses: 404 a prompt or template the server
does not list, 400 an argument it does not take, 409 a per-user server the user has not connected,
502 the server failed."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import mcp_types as types

from .prompts import MAX_ARGUMENT_CHARS, PromptInfo, PromptRefused
from .resources import ResourceInfo

MAX_VALUES = 100  # the specification's limit of one answer
MAX_VALUE_CHARS = 1_000  # of one suggested value (longer ones are dropped)
KINDS = ("prompt", "resource")


@dataclass(frozen=True)
class Suggestions:
    """A server's answer: at most MAX_VALUES strings, and whether it has more than it sent."""

    values: tuple[str, ...] = ()
    has_more: bool = False

    def as_json(self) -> dict[str, Any]:
        return {"values": list(self.values), "hasMore": self.has_more}


NONE = Suggestions()


@dataclass(frozen=True)
class CompletionRequest:
    """What to complete: `argument` of the prompt named `target` (kind "prompt") or of the URI
    template `target` (kind "resource"), as typed so far (`value`), with the arguments already
    filled in (`context`)."""

    kind: str
    target: str
    argument: str
    value: str = ""
    context: tuple[tuple[str, str], ...] = ()

    @property
    def ref(self) -> types.PromptReference | types.ResourceTemplateReference:
        if self.kind == "prompt":
            return types.PromptReference(type="ref/prompt", name=self.target)
        return types.ResourceTemplateReference(type="ref/resource", uri=self.target)


def parse_request(body: Any) -> CompletionRequest:
    """The request the endpoints take: `{"ref": {"type": "prompt", "name"} | {"type": "resource",
    "uri"}, "argument": {"name", "value"}, "context": {"arguments": {…}}}` (context optional)."""
    if not isinstance(body, dict):
        raise PromptRefused(400, "The request body must be a JSON object.")
    ref, argument = body.get("ref"), body.get("argument")
    if not isinstance(ref, dict) or ref.get("type") not in KINDS:
        raise PromptRefused(
            400, "'ref' must be {\"type\": \"prompt\", \"name\"} or {\"type\": \"resource\", \"uri\"}.", "ref"
        )
    key = "name" if ref["type"] == "prompt" else "uri"
    target = ref.get(key)
    if not isinstance(target, str) or not target:
        raise PromptRefused(400, f"'ref.{key}' must be a non-empty string.", f"ref.{key}")
    if not isinstance(argument, dict) or not isinstance(argument.get("name"), str) or not argument["name"]:
        raise PromptRefused(400, "'argument' must be {\"name\", \"value\"} with a non-empty name.", "argument")
    value = argument.get("value", "")
    context = (body.get("context") or {}).get("arguments", {}) if isinstance(body.get("context") or {}, dict) else None
    if not isinstance(value, str) or len(value) > MAX_ARGUMENT_CHARS:
        raise PromptRefused(
            400, f"'argument.value' must be a string of at most {MAX_ARGUMENT_CHARS:,} characters.", "argument.value"
        )
    if not isinstance(context, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in context.items()):
        raise PromptRefused(400, "'context.arguments' must be an object of strings.", "context.arguments")
    return CompletionRequest(ref["type"], target, argument["name"], value, tuple(sorted(context.items())))


def template_variables(template: str) -> tuple[str, ...]:
    """The variables of a URI template (`guide://people/{name}` → ("name",)); RFC 6570 operators and
    modifiers (`{+path}`, `{?q,lang}`, `{list*}`) are stripped."""
    names: list[str] = []
    for expression in re.findall(r"\{([^}]*)\}", template):
        for variable in expression.lstrip("+#./;?&").split(","):
            name = variable.split(":")[0].rstrip("*")
            if name and name not in names:
                names.append(name)
    return tuple(names)


def check_target(
    request: CompletionRequest, prompts: tuple[PromptInfo, ...], resources: tuple[ResourceInfo, ...], server: str
) -> None:
    """Refuse (PromptRefused) a prompt or template `server` does not list, or an argument it does not take."""
    if request.kind == "prompt":
        prompt = next((p for p in prompts if p.name == request.target), None)
        if prompt is None:
            raise PromptRefused(
                404, f'No MCP server here offers the prompt "{request.target}" of "{server}".', "ref.name"
            )
        takes = tuple(a.name for a in prompt.arguments)
    else:
        template = next((r for r in resources if r.template and r.uri == request.target), None)
        if template is None:
            message = f'No MCP server here offers the resource template "{request.target}" of "{server}".'
            raise PromptRefused(404, message, "ref.uri")
        takes = template_variables(template.uri)
    if request.argument not in takes:
        message = f'The {request.kind} "{request.target}" takes no argument "{request.argument}".'
        raise PromptRefused(400, message, "argument.name")


def declares_completions(client: Any) -> bool:
    return getattr(client.server_capabilities, "completions", None) is not None


async def complete(client: Any, request: CompletionRequest) -> Suggestions:
    """`completion/complete` on a live session (NONE when the server does not declare `completions`)."""
    if not declares_completions(client):
        return NONE
    result = await client.complete(
        request.ref,
        {"name": request.argument, "value": request.value},
        context_arguments=dict(request.context) or None,
    )
    return suggestions(result.completion)


def suggestions(completion: types.Completion) -> Suggestions:
    """The server's values, strings only, each once, at most MAX_VALUES (more: has_more)."""
    values = list(dict.fromkeys(v for v in completion.values if isinstance(v, str) and len(v) <= MAX_VALUE_CHARS))
    more = bool(completion.has_more) or len(values) > MAX_VALUES
    more = more or (completion.total is not None and completion.total > len(values[:MAX_VALUES]))
    return Suggestions(tuple(values[:MAX_VALUES]), more)
