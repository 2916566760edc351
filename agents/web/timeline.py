"""What a turn looks like on screen, built from its events — for the page (all events at once) and
for the live stream (one event at a time). Both render the same templates (`_turn.html`,
`_event.html`), so a reloaded page and a live stream end in exactly the same HTML.

Live fragments are htmx out-of-band swaps keyed by element ids:
`turn-<id>` (the whole turn), `turn-<id>-items` (its timeline), `turn-<id>-live` (the text being
streamed), `turn-<id>-status` (step and tokens, with Stop), `tool-<call id>` (a tool card),
`mode-badge`, `composer`, and `stream-cursor` (the last event the page shows, used to resume).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from django.template.loader import render_to_string

from agents.events import FINAL_EVENT_TYPES, live_payload
from agents.models import AgentSession, Turn, TurnEvent

from .markdown import render_markdown

RESULT_PREVIEW_LIMIT = 4000  # characters of a tool result shown in its card


@dataclass
class Item:
    """One entry of a turn's timeline: "text", "tool", "mode" or "notice"."""

    kind: str
    data: dict[str, Any] = field(default_factory=dict)


def tool_item(called: dict, result: dict | None) -> Item:
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


def mode_item(payload: dict) -> Item:
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


_PROPOSAL = re.compile(r"^\W*1\)\s*stay\b.*^\W*2\)\s*switch\b.*^\W*3\)\s*switch\b", re.S | re.M | re.I)
_PROPOSED = re.compile(r"\*\*([^*\n]+)\*\*")


def proposal_choices(answer: str) -> list[tuple[str, str]]:
    """The three options of a TUL-007 §4.1 proposal in an answer, as (reply sent, button label)."""
    if not answer or not _PROPOSAL.search(answer):
        return []
    found = _PROPOSED.search(answer)
    name = found[1].strip() if found else "the proposed mode"
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


# --- live fragments ------------------------------------------------------------------------------


class LiveRenderer:
    """Turns broadcast events into HTML fragments for one websocket connection. It remembers the
    tool calls it has seen so a result can redraw its card; a result whose call it did not see
    (a client that resumed between the two) reads the call from the database."""

    def __init__(self, session: AgentSession) -> None:
        self.session = session
        self._calls: dict[str, dict] = {}
        self._live: dict[str, str] = {}  # turn id → text streamed since its last model message
        self._max_steps: dict[str, int | None] = {}

    def render(self, turn: Turn, event_type: str, payload: dict, seq: int) -> str:
        """Sync (templates and, for final events, the database): call through sync_to_async."""
        payload = live_payload(payload)
        parts = [self._fragment(turn, event_type, payload, seq)]
        parts.append(f'<div id="stream-cursor" hx-swap-oob="true" data-turn="{turn.id}" data-seq="{seq}"></div>')
        return "".join(p for p in parts if p)

    def _fragment(self, turn: Turn, event_type: str, payload: dict, seq: int) -> str:
        if event_type == "turn.started" or event_type in FINAL_EVENT_TYPES:
            turn.refresh_from_db()
            # The turn as of this event: the run may have written later events already, and those
            # follow on this stream as fragments of their own (drawn here too, they would show twice).
            stored = list(turn.events.filter(seq__lte=seq).order_by("seq"))
            if event_type == "turn.started" and turn.is_finished:
                # ...and may even have ended: its end follows too, so draw it running until then.
                turn.status, turn.answer, turn.error = Turn.Status.RUNNING, "", ""
            html = render_turn(turn, stored, oob=True)
            if event_type in FINAL_EVENT_TYPES:
                self.session.refresh_from_db()
                html += render_to_string("agents/_composer.html", {"session": self.session, "busy": False, "oob": True})
                html += render_to_string("agents/_mode_badge.html", {"session": self.session, "oob": True})
                html += render_to_string("agents/_session_meta.html", {"s": self.session, "oob": True})
            return html
        if event_type == "step.started":
            self._max_steps[turn.id] = payload.get("max_steps")
            return self._status(turn, payload.get("step"), None)
        if event_type == "model.delta":
            # The text so far, as Markdown (re-rendered whole: a half-written table or list must
            # look like one as it grows, not like raw asterisks until the turn ends).
            text = self._streamed(turn, seq) + payload.get("text", "")
            self._live[turn.id] = text
            return render_to_string("agents/_event.html", {"streamed_html": render_markdown(text), "turn": turn})
        if event_type == "model.message":
            self._live.pop(turn.id, None)  # the text moves into an item (tool step) or the answer
            status = self._status(turn, payload.get("step"), (payload.get("usage") or {}).get("turn_total"))
            if not payload.get("tool_calls"):  # the answer: stays streamed until the final event redraws
                return status
            item = text_item(payload.get("content", ""))
            return status + render_to_string(
                "agents/_event.html", {"turn": turn, "item": item, "append": True, "clear_live": True}
            )
        if event_type == "tool.called":
            self._calls[payload.get("id", "")] = payload
            return render_to_string(
                "agents/_event.html", {"turn": turn, "item": tool_item(payload, None), "append": True}
            )
        if event_type == "tool.result":
            called = self._calls.pop(payload.get("id", ""), None) or self._stored_call(turn, payload.get("id"))
            return render_to_string(
                "agents/_event.html", {"turn": turn, "item": tool_item(called, payload), "replace": True}
            )
        if event_type == "mode.changed":
            self.session.refresh_from_db()
            return (
                render_to_string("agents/_event.html", {"turn": turn, "item": mode_item(payload), "append": True})
                + render_to_string("agents/_mode_badge.html", {"session": self.session, "oob": True})
                + render_to_string("agents/_session_meta.html", {"s": self.session, "oob": True})
            )
        return ""

    def _streamed(self, turn: Turn, seq: int) -> str:
        """What the turn streamed before event `seq`: remembered, or (a connection that resumed
        mid-reply, whose page already shows the start) read from the database."""
        if turn.id not in self._live:
            self._live[turn.id] = live_text(list(turn.events.filter(seq__lt=seq).order_by("seq")))
        return self._live[turn.id]

    def _status(self, turn: Turn, step: int | None, tokens: int | None) -> str:
        return render_to_string(
            "agents/_turn_status.html",
            {
                "turn": turn,
                "running": True,
                "step": step,
                "max_steps": self._max_steps.get(turn.id),
                "tokens": tokens,
                "oob": True,
            },
        )

    @staticmethod
    def _stored_call(turn: Turn, call_id: str | None) -> dict:
        for event in turn.events.filter(type="tool.called").order_by("seq"):
            if event.payload.get("id") == call_id:
                return event.payload
        return {"id": call_id or "", "name": "tool"}
