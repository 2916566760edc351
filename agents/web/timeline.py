"""What a turn looks like on screen, built from its events: the timeline items, the answer, the mode
proposal's choices and the status line of `_turn.html`. The page draws a turn from all its stored
events at once; the live stream (live.py) draws the same templates one event at a time.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from django.template.loader import render_to_string

from agents.events import FINAL_EVENT_TYPES
from agents.models import Turn, TurnEvent
from modes.proposal import find_proposal

from .markdown import render_markdown

RESULT_PREVIEW_LIMIT = 4000  # characters of a tool result shown in its card


@dataclass
class Item:
    """One entry of a turn's timeline: "text", "tool" or "mode"."""

    kind: str
    data: dict[str, Any] = field(default_factory=dict)


def tool_item(called: Mapping[str, Any], result: Mapping[str, Any] | None) -> Item:
    arguments = called.get("arguments") or ""
    try:
        pretty = json.dumps(json.loads(arguments), indent=2, ensure_ascii=False) if arguments.strip() else "{}"
    except ValueError:
        pretty = arguments
    data: dict[str, Any] = {
        "id": called.get("id", ""),
        "name": called.get("name", ""),
        "kind": called.get("kind", ""),
        "arguments": pretty,
        "state": "running",
    }
    if result is not None:
        data["state"] = "ok" if result.get("ok") else "error"
        data["duration_ms"] = result.get("duration_ms")
        data["error"] = result.get("error") or ""
        text = result.get("result") or ""
        data["result"] = text[:RESULT_PREVIEW_LIMIT] + ("…" if len(text) > RESULT_PREVIEW_LIMIT else "")
        data["image"] = _image_of(called.get("name", ""), text)
    return Item("tool", data)


def _image_of(name: str, text: str) -> dict | None:
    if name != "image_gen" or not text:
        return None
    try:
        data = json.loads(text)
    except ValueError:
        return None
    url = data.get("url") if isinstance(data, dict) else None
    if isinstance(url, str) and url.startswith("/media/images/"):
        return {"url": url, "alt": str(data.get("alt") or "image")}
    return None


def text_item(content: str) -> Item | None:
    return Item("text", {"html": render_markdown(content)}) if content and content.strip() else None


def mode_item(payload: Mapping[str, Any]) -> Item:
    return Item(
        "mode",
        {
            "previous": payload.get("previousMode"),
            "new": payload.get("newMode"),
            "reason": payload.get("reason", ""),
            "branch": bool(payload.get("branch")),
        },
    )


def turn_items(turn: Turn, events: Iterable[TurnEvent]) -> list[Item]:
    """The timeline of a turn from its stored events. For a finished turn the final answer is shown
    as the answer block, so the model message that produced it is not repeated as an item."""
    items: list[Item] = []
    cards: dict[str, int] = {}
    calls: dict[str, dict] = {}
    for event in events:
        p = event.payload
        if event.type == "model.message" and (p.get("tool_calls") or not turn.is_finished):
            if item := text_item(p.get("content", "")):
                items.append(item)
        elif event.type == "tool.called":
            calls[p.get("id", "")] = p
            cards[p.get("id", "")] = len(items)
            items.append(tool_item(p, None))
        elif event.type == "tool.result" and p.get("id") in cards:
            item = items[cards[p["id"]]] = tool_item(calls[p["id"]], p)
            image = item.data.get("image")
            if image and image["url"] in turn.answer:
                item.data["image"] = None  # the answer shows it
        elif event.type == "mode.changed":
            items.append(mode_item(p))
    return items


def last_seq(events: Iterable[TurnEvent]) -> int:
    return max((e.seq for e in events), default=0)


def proposal_choices(answer: str) -> list[tuple[str, str]]:
    """The three options of a TUL-007 §4.1 proposal in an answer, as (reply sent, button label)."""
    proposal = find_proposal(answer)
    if proposal is None:
        return []
    name = proposal.display_name
    return [
        ("1) Stay in the current mode", "Stay in the current mode"),
        (f"2) Switch this session to {name}", f"Switch this session to {name}"),
        (f"3) Switch to {name} and start a new session", f"New session in {name}"),
    ]


def live_text(events: list[TurnEvent]) -> str:
    """Text streamed since the last model message (what a running turn is typing right now)."""
    parts: list[str] = []
    for event in events:
        if event.type == "model.delta":
            parts.append(event.payload.get("text", ""))
        elif event.type == "model.message":
            parts = []
    return "".join(parts)


def turn_context(turn: Turn, events: list[TurnEvent], *, latest: bool = False) -> dict[str, Any]:
    started: dict[str, Any] = next((e.payload for e in events if e.type == "turn.started"), {})
    steps = [e.payload for e in events if e.type == "step.started"]
    final = next((e.payload for e in reversed(events) if e.type in FINAL_EVENT_TYPES), None)
    completed = turn.status == Turn.Status.COMPLETED
    return {
        "turn": turn,
        "items": turn_items(turn, events),
        "answer_html": render_markdown(turn.answer) if turn.is_finished else "",
        "live_html": "" if turn.is_finished else render_markdown(live_text(events)),
        "proposal": proposal_choices(turn.answer) if completed and latest else [],
        "tokens": turn.prompt_tokens + turn.completion_tokens,
        "seq": last_seq(events),
        "step": steps[-1].get("step") if steps else 0,
        "max_steps": started.get("max_steps") or (steps[-1].get("max_steps") if steps else None),
        "limit": final.get("message") if final and final.get("limit") else "",
        "branch": (final or {}).get("branch") if completed and latest else None,
    }


def render_turn(
    turn: Turn,
    events: list[TurnEvent],
    *,
    oob: bool = False,
    latest: bool = True,
    if_absent: bool = False,
    request=None,
) -> str:
    context = {**turn_context(turn, events, latest=latest), "oob": oob, "if_absent": if_absent}
    return render_to_string("agents/_turn.html", context, request=request)
