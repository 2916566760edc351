"""What a turn looks like on screen, built from its events: the timeline items, the answer, the mode
proposal's choices and the status line of `_turn.html`. The page draws a turn from all its stored
events at once, each through its type's items view (registered here with `@shows`,
event_views.py); the live stream (live.py) runs the same views one event at a time.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Final, Literal

from django.template.loader import render_to_string
from django.utils import timezone

from agents.approvals import DECLINED_CONNECT, DECLINED_MODE_CHANGE, DENIED_TOOL, requested_mode
from agents.branching import branch_child
from agents.conversations import AGAIN_FROM
from agents.events import FINAL_EVENT_TYPES
from agents.events.payloads import (
    ApprovalDecided,
    ApprovalRequested,
    DocumentUpdated,
    ModelMessage,
    ToolCalled,
    ToolProgress,
    ToolResult,
    ToolTask,
)
from agents.llm.protocol import estimate_tokens
from agents.models import Turn, TurnEvent
from agents.run.progress import progress_of, task_progress
from agents.selectors import mode_display_name, mode_proposed
from agents.state import ModeChange
from modes.proposal import find_proposal
from tools.media import is_site_file, is_site_image
from tools.registry import result_image
from tools.tables import parse_markdown_table

from .event_views import EVENT_VIEWS, Item, TurnItems, shows
from .markdown import render_markdown, render_user_message
from .questions import answer_label, card_fields
from .rating import feedback_context
from .versions import VersionNav, nav_looked_up

RESULT_PREVIEW_LIMIT = 4000  # characters of a tool result shown in its card
RESULT_TABLE_ROWS = 50  # rows of a table result shown in its card


def _pretty(arguments: str) -> str:
    try:
        return json.dumps(json.loads(arguments), indent=2, ensure_ascii=False) if arguments.strip() else "{}"
    except ValueError:
        return arguments


def tool_item(
    called: Mapping[str, Any], result: Mapping[str, Any] | None, progress: Mapping[str, Any] | None = None
) -> Item:
    pretty = _pretty(called.get("arguments") or "")
    data: dict[str, Any] = {
        "id": called.get("id", ""),
        "name": called.get("name", ""),
        "kind": called.get("kind", ""),
        "arguments": pretty,
        "state": "running",
        "progress": progress_of(progress),
        "by_app": called.get("by") == "app",  # an MCP App shown in the turn called it (agents/mcp_apps)
    }
    if result is not None:
        # "blocked": the user denied the call (it never ran), told apart from a tool that failed
        blocked = result.get("error") in (DENIED_TOOL, DECLINED_MODE_CHANGE, DECLINED_CONNECT)
        data["state"] = (
            "stopped" if result.get("stopped") else "ok" if result.get("ok") else "blocked" if blocked else "error"
        )
        data["size"] = result.get("size")
        data["cut_for_model"] = result.get("cut_for_model")
        data["repeat"] = bool(result.get("repeat"))
        data["duration_ms"] = result.get("duration_ms")
        data["error"] = result.get("error") or ""
        text = result.get("result") or ""
        data["image"] = result_image(called.get("name", ""), text)
        data["media"] = media_of(result.get("attachments") or [])
        if isinstance(app := result.get("app"), dict):  # an MCP App: the page's script frames it (views/apps.py)
            data["app"] = {"error": str(app.get("error") or ""), "server": str(app.get("server") or "")}
        if data["media"]:
            text = result.get("text") or ""  # the card shows the images, links, resources and files apart
        data.update(_result_shown(text))
    return Item("tool", data)


def _result_shown(text: str) -> dict[str, Any]:
    """How the card shows a result: a markdown table as a table (its first rows), JSON indented, any
    other text as it came; each cut to RESULT_PREVIEW_LIMIT characters."""
    table = parse_markdown_table(text) if "|" in text else None
    if table is not None:
        columns, rows = table
        shown = rows[:RESULT_TABLE_ROWS]
        return {"result": "", "result_table": {"columns": columns, "rows": shown, "more": len(rows) - len(shown)}}
    stripped = text.strip()
    if stripped[:1] in ("{", "["):
        with contextlib.suppress(ValueError):  # not JSON after all: as it came
            text = json.dumps(json.loads(stripped), indent=2, ensure_ascii=False)
    return {"result": text[:RESULT_PREVIEW_LIMIT] + ("…" if len(text) > RESULT_PREVIEW_LIMIT else "")}


def media_of(attachments: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]] | None:
    """The rich content of an MCP result (tools/mcp/rich.py), by how the card shows it: images
    (served by this site only), links (http and https only; anything else is plain text),
    embedded resources (collapsible text) and files (a labelled download)."""
    media: dict[str, list[dict[str, Any]]] = {"images": [], "links": [], "resources": [], "files": []}
    for item in attachments:
        kind, url = item.get("kind"), str(item.get("url") or "")
        if kind == "image" and is_site_image(url):
            media["images"].append({"url": url, "alt": item.get("name") or "image", "size": item.get("size")})
        elif kind == "file" and is_site_file(url):
            media["files"].append(item)
        elif kind == "link":
            safe = url if url.lower().startswith(("http://", "https://")) else ""
            media["links"].append({**item, "url": safe, "uri": item.get("uri") or url})
        elif kind == "resource":
            text = str(item.get("text") or "")
            cut = len(text) > RESULT_PREVIEW_LIMIT
            media["resources"].append({**item, "text": text[:RESULT_PREVIEW_LIMIT], "cut": cut})
        elif kind in ("image", "file"):  # not stored (no session): named only
            media["files"].append({**item, "url": ""})
    return media if any(media.values()) else None


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
    """The timeline of a turn from its stored events, each through its type's items view
    (event_views.py)."""
    timeline = TurnItems(turn)
    for event in events:
        view = EVENT_VIEWS.get(event.type)
        if view is not None and view.items is not None:
            view.items(timeline, event.payload)
    return _mark_unfinished_calls(turn, timeline.items)


# The items view of each event type that shows in a turn's timeline; the live stream draws the same
# items (live.py). A finished turn's answer is its answer block, so the model message that produced
# it is no item; live, the answer stays streamed text until the final event redraws the turn.


@shows("model.message")
def _model_message(timeline: TurnItems, p: ModelMessage) -> None:
    if p.get("reasoning") and not timeline.live:  # live, the reasoning shows once the turn is redrawn
        timeline.add(Item("reasoning", {"text": p["reasoning"]}))
    if p.get("tool_calls") or not (timeline.live or timeline.turn.is_finished):
        timeline.add(text_item(p.get("content", "")), clear_live=True)


@shows("tool.called")
def _tool_called(timeline: TurnItems, p: ToolCalled) -> None:
    timeline.calls[p.get("id", "")] = p
    timeline.add(tool_item(p, None), key=p.get("id", ""))


@shows("tool.progress")
def _tool_progress(timeline: TurnItems, p: ToolProgress) -> None:
    """Only the progress line of the running call's card (live, the card keeps its open/closed state)."""
    progress = progress_of(p)
    card = timeline.card(p.get("id", ""))
    if card is not None and card.data["state"] == "running":
        card.data["progress"] = progress
    timeline.fragment(
        "agents/_tool_progress.html", call_id=p.get("id", ""), name=p.get("name", ""), oob=True, progress=progress
    )


@shows("tool.task")
def _tool_task(timeline: TurnItems, p: ToolTask) -> None:
    """A call its MCP server runs as a task: its status and message on the card's progress line."""
    _tool_progress(timeline, task_progress(p))


@shows("tool.result")
def _tool_result(timeline: TurnItems, p: ToolResult) -> None:
    """A call's card after its result (images the answer shows are not repeated)."""
    called = timeline.call(p.get("id", ""))
    if called is None:
        return
    answer = timeline.turn.answer
    item = tool_item(called, p)
    image = item.data.get("image")
    if image and image["url"] in answer:
        item.data["image"] = None  # the answer shows it
    if media := item.data.get("media"):
        media["images"] = [i for i in media["images"] if i["url"] not in answer]
    timeline.replace(p.get("id", ""), item)


@shows("mode.changed")
def _mode_changed(timeline: TurnItems, p: ModeChange) -> None:
    timeline.add(mode_item(p))


@shows("document.updated")
def _document_updated(timeline: TurnItems, p: DocumentUpdated) -> None:
    """ "Document <title> v3 updated": its link opens the panel at that version."""
    timeline.add(Item("document", {**p, "session_id": timeline.turn.session_id}))


@shows("approval.requested")
def _approval_requested(timeline: TurnItems, p: ApprovalRequested) -> None:
    """A card per held call; the call's tool card says it waits (held for the user, not running)."""
    for call in p.get("calls", []):
        card = timeline.card(call["id"])
        if card is not None and card.data["state"] == "running":
            card.data["state"] = "waiting"
        timeline.add(approval_item(call, p.get("mode", timeline.turn.mode)), key=f"approval:{call['id']}")


@shows("approval.decided")
def _approval_decided(timeline: TurnItems, p: ApprovalDecided) -> None:
    for decision in p.get("decisions", []):
        if (card := timeline.card(f"approval:{decision['id']}")) is not None:
            card.data.update(decided(decision))


def _mark_unfinished_calls(turn: Turn, items: list[Item]) -> list[Item]:
    """A call without a result in an ended turn never ran to its end (the turn was stopped, failed or
    was interrupted first): its card says so instead of "running…" for ever."""
    if not turn.is_finished:
        return items
    for item in items:
        if item.kind == "tool" and item.data["state"] in ("running", "waiting"):
            item.data["state"] = "stopped"
    return items


def approval_item(call: Mapping[str, Any], mode: str) -> Item:
    """A card asking the user to approve a held tool call (agents/approvals.py)."""
    data: dict[str, Any] = {
        "id": call.get("id", ""),
        "name": call.get("name", ""),
        "kind": call.get("kind", "tool"),
        "server": call.get("server", ""),
        "annotations": sorted((call.get("annotations") or {}).items()),
        "arguments": _pretty(call.get("arguments") or ""),
        "reason": call.get("reason", ""),
        "decision": "",
        "from_mode": mode,
    }
    data.update(card_fields(call, data["kind"], data["server"]))  # a connect link, a server's question
    if data["kind"] == "mode_change":
        key = requested_mode(call.get("arguments") or "") or ""
        data["to_mode"] = key
        data["to_display"] = mode_display_name(key=key)
    return Item("approval", data)


DECISION_LABELS = {
    "approved": "Approved",
    "denied": "Denied",
    "declined_by_new_message": "Declined by a new message",
    "cancelled": "Cancelled with the turn",
}


def decided(decision: Mapping[str, Any]) -> dict[str, Any]:
    """What a card shows once decided: "Approved for this session by alice"."""
    label = DECISION_LABELS.get(decision.get("decision", ""), decision.get("decision", ""))
    if decision.get("kind") == "elicitation":
        label = answer_label(decision.get("decision", ""))
    if decision.get("decision") == "approved":
        if decision.get("branch"):
            label += " (in a new session)"
        elif decision.get("scope") == "session":
            label += " for this session"
    by = decision.get("decided_by")
    if decision.get("reason"):  # closed by nobody: its call ended first (agents/elicitations.py)
        label = f"Closed: {decision['reason']}"
    return {"decision": decision.get("decision", ""), "decided_label": label + (f" by {by}" if by else "")}


def last_seq(events: Iterable[TurnEvent]) -> int:
    return max((e.seq for e in events), default=0)


def proposal_choices(answer: str, *, team: Any = None) -> list[dict[str, Any]]:
    """The three options of a TUL-007 §4.1 proposal in an answer: the reply each sends, its button
    label, and for the two switches the structured choice sent with it (the user's consent to that
    mode, agents/approvals.py) when the proposed mode is in the catalog of `team` (the session's)."""
    proposal = find_proposal(answer)
    if proposal is None:
        return []
    # A button carries consent to a mode, so what it says is that mode's catalog entry, never the
    # model's text: "**Data Analysis** (`workflow-authoring`)" offers Workflow Authoring. A mode
    # the catalog does not have (or not active), or not for the session's team, gets no consent, only
    # the reply.
    offered = mode_proposed(key=proposal.key, name=proposal.display_name, team=team)
    key, name = offered if offered else ("", proposal.display_name)
    return [
        {"send": "1) Stay in the current mode", "label": "Stay in the current mode", "mode": ""},
        {
            "send": f"2) Switch this session to {name}",
            "label": f"Switch this session to {name}",
            "mode": key,
            "branch": "false",
        },
        {
            "send": f"3) Switch to {name} and start a new session",
            "label": f"New session in {name}",
            "mode": key,
            "branch": "true",
        },
    ]


def live_text(events: list[TurnEvent]) -> str:
    """Text streamed since the last model message (what a running turn is typing right now)."""
    parts: list[str] = []
    for event in events:
        if event.type == "model.delta":
            parts.append(event.payload.get("text", ""))
        elif event.type in ("model.message", "model.retry"):
            parts = []
    return "".join(parts)


def turn_context(
    turn: Turn, events: list[TurnEvent], *, latest: bool = False, summary: tuple[int, int] | None = None
) -> dict[str, Any]:
    """`summary` is (last seq, unreported tokens) of a finished turn drawn without its model.delta and
    step.started rows (the session page, agents/web/views/history.py)."""
    started: dict[str, Any] = next((e.payload for e in events if e.type == "turn.started"), {})
    steps = [e.payload for e in events if e.type == "step.started"]
    final = next((e.payload for e in reversed(events) if e.type in FINAL_EVENT_TYPES), None)
    completed = turn.status == Turn.Status.COMPLETED
    unreported = summary[1] if summary else unreported_tokens(events) if turn.is_finished else 0
    branch = (final or {}).get("branch") if completed and latest else None
    return {
        "turn": turn,
        "user_html": render_user_message(turn.user_message),
        "items": turn_items(turn, events),
        "answer_html": render_markdown(turn.answer) if turn.is_finished else "",
        "live_html": "" if turn.is_finished else render_markdown(live_text(events)),
        "proposal": proposal_choices(turn.answer, team=turn.session.team_id) if completed and latest else [],
        "tokens": turn.prompt_tokens + turn.completion_tokens + unreported,
        "seq": summary[0] if summary else last_seq(events),
        "step": steps[-1].get("step") if steps else 0,
        "max_steps": started.get("max_steps") or (steps[-1].get("max_steps") if steps else None),
        "limit": final.get("message") if final and final.get("limit") else "",
        "notices": model_notices(events),
        "estimated": bool(unreported)
        or any(e.payload.get("usage_estimated") for e in events if e.type == "model.message"),
        "branch": branch,
        "branch_child": branch_child(turn) if branch else None,
        "latest": latest and turn.status == Turn.Status.LIMIT_REACHED,
        "elapsed": 0 if turn.is_finished else phase_elapsed(events),
        **resend_context(turn, latest=latest),
        **feedback_context(turn, latest=latest),
    }


PHASES = ("turn.started", "step.started", "model.message")  # what a running turn waits for changes at these


def phase_elapsed(events: list[TurnEvent]) -> int:
    """Seconds since a running turn began waiting for what it waits for now (the model, or its tools):
    the page counts on from there by itself (static/js/aptix.js), with no message from the server."""
    since = next((e.created_at for e in reversed(events) if e.type in PHASES), None)
    return max(0, int((timezone.now() - since).total_seconds())) if since else 0


# Edit and resend, retry, regenerate (agents/conversations.py): what a turn offers and says about it.
ORIGIN_LABELS: dict[str, str] = {
    Turn.Origin.EDIT: "edited",
    Turn.Origin.RETRY: "retried",
    Turn.Origin.REGENERATE: "regenerated",
    Turn.Origin.CONTINUED: "continued after the switch",
}
REPLACED_LABELS: dict[str, str] = {
    Turn.Origin.EDIT: "Replaced by your edited message",
    Turn.Origin.RETRY: "Replaced by a retry",
    Turn.Origin.REGENERATE: "Replaced by a regenerated answer",
}


def resend_context(turn: Turn, *, latest: bool) -> dict[str, Any]:
    """Edit (a turn not replaced, once it ended or waits), Retry or Regenerate (the last turn, by its
    status), how it was sent, and for a replaced turn (an earlier version) what replaced it."""
    replaced = turn.replaced_by_id is not None
    again = next((kind for kind, statuses in AGAIN_FROM.items() if turn.status in statuses), "")
    return {
        "editable": not replaced and (turn.is_finished or turn.is_paused),
        "again": again if latest and not replaced else "",
        "origin_label": ORIGIN_LABELS.get(turn.origin, "")
        or (f"sent by the app of {turn.sent_by_app}" if turn.sent_by_app else ""),
        "replaced_label": REPLACED_LABELS.get(turn.replaced_by.origin, "Replaced") if turn.replaced_by else "",
    }


def unreported_tokens(events: list[TurnEvent]) -> int:
    """Tokens of a step that ended without the model's usage (stopped mid-stream): the request's size as
    measured when it was sent and the text streamed back, estimated. A stopped turn used them too."""
    step: dict[str, Any] | None = None
    streamed: list[str] = []
    for event in events:
        if event.type == "step.started":
            step, streamed = event.payload, []
        elif event.type == "model.delta":
            streamed.append(event.payload.get("text", ""))
        elif event.type == "model.message":
            step = None
        elif event.type == "model.retry":
            streamed = []
    if step is None:
        return 0
    return int(step.get("tokens") or 0) + estimate_tokens("".join(streamed))


NOTICE_TOOLS_DROPPED = "This model's server does not accept tools, so the turn ran without them."
NOTICE_NO_TOOLS = "This model takes no tools (the models configuration says so), so the turn ran without them."
NOTICE_TRUNCATED = "The answer hit the model's output limit and may be cut short."


def model_notices(events: list[TurnEvent]) -> list[str]:
    """What the model's server did that the user should know (once each)."""
    messages = [e.payload for e in events if e.type == "model.message"]
    notices = []
    if any(e.payload.get("tools_unsupported") for e in events if e.type == "turn.started"):
        notices.append(NOTICE_NO_TOOLS)
    if any(m.get("tools_dropped") for m in messages):
        notices.append(NOTICE_TOOLS_DROPPED)
    if messages and messages[-1].get("truncated"):
        notices.append(NOTICE_TRUNCATED)
    return notices


LOOK_UP: Final = "look up"  # render_turn reads a turn's versions itself (a page passes what it read for all its turns)


def render_turn(
    turn: Turn,
    events: list[TurnEvent],
    *,
    oob: bool = False,
    latest: bool = True,
    if_absent: bool = False,
    request=None,
    summary: tuple[int, int] | None = None,
    versions: VersionNav | Literal["look up"] | None = LOOK_UP,
    reader: bool = False,
    snapshot: Snapshot | None = None,
) -> str:
    """`versions` is the message's version switcher (versions.py), or LOOK_UP to read it; `reader`: drawn
    for a teammate reading a shared session, without the forms and buttons only its author may use;
    `snapshot`: drawn for a share link's page (a reader's turn, without anything that needs access to
    the session: no Copy, no versions, files and documents named but not linked, and without the tool
    calls or the files unless the link shows them)."""
    nav = None if snapshot else nav_looked_up(turn) if isinstance(versions, str) else versions
    context = {
        **turn_context(turn, events, latest=latest, summary=summary),
        "oob": oob,
        "if_absent": if_absent,
        "versions": nav,
        "reader": reader or snapshot is not None,
        "snapshot": snapshot,
    }
    if snapshot is not None and not snapshot.tools:
        context["items"] = [item for item in context["items"] if item.kind not in SNAPSHOT_TOOL_ITEMS]
    return render_to_string("agents/_turn.html", context, request=request)


# What a share link leaves out unless its author ticked "tool calls": the calls with their arguments
# and results, and the approvals that name them.
SNAPSHOT_TOOL_ITEMS = frozenset({"tool", "approval"})


@dataclass(frozen=True)
class Snapshot:
    """What a share link's page shows besides the conversation (agents/sharing/links.py)."""

    tools: bool
    files: bool
