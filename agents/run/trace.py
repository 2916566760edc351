"""A turn's trace: what the model was sent at each step, stored once per turn.

`Turn.trace` holds what every step of a turn shares: the system prompt, the tool schemas and the
earlier turns the request carried, by reference (their ids, the result budget they were cut to and a
SHA-256 of the messages they made), since those messages are built from rows that never change
once a turn has ended (context.py's `past_turn_messages`). Each step's `step.started` event holds
only the messages added since the step before (`messages_from` is where they start in the request;
when it is smaller than the request so far, the context budget dropped that many of the oldest
earlier-turn messages, which sit right after the system prompt). So a long session stores each
message once instead of a copy of its history in every turn.

`turn_trace(turn)` puts the requests back together for readers (the admin's turn page): each step's
messages and tool schemas exactly as sent, and whether the earlier turns rebuilt from their rows
still match the digest taken when they were sent. Turns recorded before the trace moved here (their
system prompt and schemas in turn.started, the whole first request in step 1) read the same way.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from typing import Any

from django.conf import settings

from ..models import Turn, TurnEvent
from .context import History, past_turn_messages, steps_of


def messages_digest(messages: list[dict[str, Any]]) -> str:
    """A SHA-256 of chat messages, independent of key order and whitespace."""
    text = json.dumps(messages, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()


def turn_trace_fields(
    *,
    system_prompt: str,
    tools: list[dict[str, Any]],
    history: History,
    mode_version: int | None = None,
    mode_draft: bool = False,
) -> dict[str, Any]:
    """The `Turn.trace` of a run that starts with these: written once, with turn.started. `mode_version`
    is the number of the mode's version the run started with (modes/versions.py: the published one, or
    with `mode_draft` the draft its curator tries), which the answer's feedback records
    (agents/feedback/services.py)."""
    return {
        "system_prompt": system_prompt,
        "mode_version": mode_version,
        **({"mode_draft": True} if mode_draft else {}),
        "tools": tools,
        "history": {
            "turns": history.turn_ids,
            "messages": len(history.messages),
            "result_chars": settings.APTIX_TOOL_RESULT_CHARS,
            "sha256": messages_digest(history.messages),
        },
    }


def prefix_size(history: History) -> int:
    """Messages of the first request the trace holds (system prompt and earlier turns), not step 1."""
    return 1 + len(history.messages)


@dataclass
class StepRequest:
    step: int
    messages: list[dict[str, Any]]
    tools: list[dict[str, Any]]  # the schemas offered ([] for a step without tools)
    added_from: int  # messages[added_from:] are those this step added to the request
    tokens: int | None = None


@dataclass
class TurnTrace:
    system_prompt: str
    tools: list[dict[str, Any]]
    on_demand: list[str] = field(default_factory=list)  # allowed tools found through the tool search
    history_turns: list[str] = field(default_factory=list)
    # True: the earlier turns rebuilt from their rows match what was sent; False: they do not (the rows
    # or the code that turns them into messages changed since); None: nothing to check (no history,
    # or a turn recorded whole before the trace moved to Turn.trace).
    history_verified: bool | None = None
    steps: list[StepRequest] = field(default_factory=list)
    mode_version: int | str | None = None  # the mode's version the turn ran with (a fingerprint before versions)
    mode_draft: bool = False  # a curator's "Try it" of that draft


def turn_trace(turn: Turn) -> TurnTrace:
    """Every step's request of `turn`, as the model got it (see the module's docstring)."""
    events = list(turn.events.filter(type__in=["turn.started", "step.started"]).order_by("seq"))
    stored = turn.trace or {}
    started: dict[str, Any] = next((e.payload for e in events if e.type == "turn.started"), {})
    trace = TurnTrace(
        system_prompt=stored.get("system_prompt", started.get("system_prompt", "")),
        tools=stored.get("tools", started.get("tools") or []),
        on_demand=list(started.get("tools_on_demand") or []),
        mode_version=stored.get("mode_version") or None,
        mode_draft=bool(stored.get("mode_draft")),
    )
    request: list[dict[str, Any]] = []
    if stored:
        reference = stored.get("history") or {}
        trace.history_turns = list(reference.get("turns") or [])
        earlier = history_messages(trace.history_turns, reference.get("result_chars"))
        if trace.history_turns:
            trace.history_verified = messages_digest(earlier) == reference.get("sha256")
        request = [{"role": "system", "content": trace.system_prompt}, *earlier]
    schemas = {t.get("function", {}).get("name"): t for t in trace.tools}
    for event in (e for e in events if e.type == "step.started"):
        p = event.payload
        start = p.get("messages_from", 0)
        if start < len(request):  # the context budget dropped the oldest earlier-turn messages
            request = [*request[:1], *request[1 + len(request) - start :]]
        request = [*request, *p.get("messages", [])]  # a new list: the step before keeps its own
        trace.steps.append(
            StepRequest(
                step=p.get("step", 0),
                messages=request,
                tools=[s for name in p.get("tools", []) if (s := schemas.get(name) or _found_schema(name))],
                added_from=start,
                tokens=p.get("tokens"),
            )
        )
    return trace


def _found_schema(name: str) -> dict[str, Any] | None:
    """A tool offered after the tool search found it (on demand): its schema is not in Turn.trace, which
    holds the first request's; it is the registry's (as long as its server still serves it)."""
    from tools.registry import internal_tool, mcp_registry

    tool = internal_tool(name) or mcp_registry.get(name)
    return tool.get_schema() if tool is not None else None


def history_messages(turn_ids: list[str], result_chars: int | None) -> list[dict[str, Any]]:
    """The earlier turns `turn_ids` as the request carried them, oldest first."""
    if not turn_ids:
        return []
    turns = {t.pk: t for t in Turn.objects.filter(pk__in=turn_ids).only("id", "user_message", "answer", "files")}
    steps: dict[str, list[TurnEvent]] = steps_of(list(turn_ids))
    messages: list[dict[str, Any]] = []
    for turn_id in turn_ids:
        if turn_id in turns:
            messages += past_turn_messages(turns[turn_id], steps.get(turn_id, []), result_chars=result_chars)
    return messages
