"""What an MCP App shown in a conversation may do, as the session's owner: the only writer of
AppAction (the apps' audit) and of AgentSession.app_context.

An app's call that runs (or that the user denies) is recorded like the model's, as `tool.called` and
`tool.result` events of the card's turn (marked `by: "app"`: the card says "called by the app"),
written after the turn's last event: so only once no run holds the turn (AppRefused 409 while the turn
is queued or running, whose run numbers its own events).

An app is found by its card: the turn and the model's tool call whose result carries it (the
`tool.result` event's `app`, tools/mcp/entry.py). Everything it asks goes to that card's server only:
a tool of another server, or one its server keeps from apps (`_meta.ui.visibility`), is refused. A
tool call takes the same road as the model's: the session's mode's approval policy and the session's
grants decide whether the user must approve it first (agents/approvals.py approval_kind), and every
call, approved, denied or refused, is an AppAction row.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from typing import Any

from asgiref.sync import sync_to_async
from django.conf import settings
from django.db import transaction
from django.utils import timezone

from modes.models import AgentMode
from tools.base import CallContext, InvokeResult
from tools.mcp import TOOL_SEPARATOR, mcp_host

from ..approvals import DENIED_TOOL, approval_kind
from ..events import events_append
from ..models import AgentSession, AppAction, Turn, TurnEvent

DETAIL_CHARS = 2000  # of a result, message or reason kept in the audit
CONTEXT_CHARS = 8000  # of what one app gives the model to know
NOT_ITS_TOOL = (
    'The app may call only tools of its own MCP server "{server}" that are open to apps: "{tool}" is not one.'
)
DENIED = "The user denied the call."
TURN_BUSY = "The app can call tools once its turn has ended: wait for the answer."


class AppRefused(Exception):
    """What the app asked cannot be done: `status` as an HTTP status, and why."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status, self.message = status, message


@dataclass(frozen=True)
class AppCard:
    """A model's tool call whose result shows an MCP App: where it is and what its result carries."""

    session: AgentSession
    turn_id: str
    call_id: str
    app: dict[str, Any]  # the tool.result event's `app`

    @property
    def server(self) -> str:
        return str(self.app.get("server") or "")

    @property
    def key(self) -> str:
        return f"{self.turn_id}:{self.call_id}"


def app_card(session: AgentSession, turn_id: str, call_id: str) -> AppCard:
    """The app of the call `call_id` in the session's turn `turn_id`; AppRefused 404 when there is none."""
    results = TurnEvent.objects.filter(turn_id=turn_id, turn__session=session, type="tool.result", payload__id=call_id)
    for payload in results.values_list("payload", flat=True):  # the call's result only, not every one's app
        if isinstance(payload, dict) and isinstance(payload.get("app"), dict):
            return AppCard(session=session, turn_id=turn_id, call_id=call_id, app=payload["app"])
    raise AppRefused(404, "No such app in this conversation.")


def _audit(card: AppCard, user: Any, kind: str, decision: str, **fields: Any) -> AppAction:
    detail = str(fields.pop("detail", ""))[:DETAIL_CHARS]
    return AppAction.objects.create(
        session=card.session,
        turn_id=card.turn_id,
        team_id=card.session.team_id,
        user=user,
        tool_call_id=card.call_id,
        server=card.server,
        kind=kind,
        decision=decision,
        detail=detail,
        **fields,
    )


def app_call_needs_approval(card: AppCard, name: str, arguments: dict[str, Any]) -> bool:
    """Whether the app's call of its server's tool `name` waits for the user (the model's rules)."""
    host = mcp_host()
    tool = host.app_tool(card.server, name) if host is not None else None
    if tool is None:
        raise AppRefused(403, NOT_ITS_TOOL.format(server=card.server, tool=name))
    mode = AgentMode.objects.filter(key=card.session.mode).first()
    kind = approval_kind(
        name=f"{card.server}{TOOL_SEPARATOR}{name}",
        kind="mcp",
        arguments=json.dumps(arguments),
        current_mode=card.session.mode,
        policy=list(mode.approval_policy or []) if mode is not None else [],
        grants=card.session.approval_grants or [],
        choice=None,
        read_only=bool(tool.annotations and tool.annotations.read_only_hint),
    )
    return kind is not None


def app_call_refused(card: AppCard, user: Any, name: str, arguments: dict[str, Any], *, denied: bool, why: str) -> None:
    """Record a call the user denied (also on the turn, as a denied call of the model's is) or that was
    refused (not the server's, not open to apps: in the audit only)."""
    if denied:
        app_turn_idle(card)
        denied_result = InvokeResult.from_error(DENIED_TOOL)
        _recorded(
            card, user, AppAction.Decision.DENIED, name=name, arguments=arguments, result=denied_result, elapsed=0
        )
        return
    _audit(
        card,
        user,
        AppAction.Kind.TOOL_CALL,
        AppAction.Decision.REFUSED,
        tool=name[:200],
        arguments=arguments,
        detail=why,
    )


def _recorded(
    card: AppCard, user: Any, decision: str, *, name: str, arguments: dict, result: InvokeResult, elapsed: float
) -> None:
    """The app's call in the audit and as events of the card's turn, written together (the turn's row
    locked, so that nothing else numbers its events meanwhile)."""
    registry_name = f"{card.server}{TOOL_SEPARATOR}{name}"
    shown = (result.result if result.successful else result.error_message) or ""
    ran = decision != AppAction.Decision.DENIED
    with transaction.atomic():
        turn = Turn.objects.select_for_update().only("status").get(pk=card.turn_id)
        action = _audit(
            card,
            user,
            AppAction.Kind.TOOL_CALL,
            decision,
            tool=name[:200],
            arguments=arguments,
            ok=result.successful if ran else None,
            detail=shown,
        )
        if turn.status in (Turn.Status.QUEUED, Turn.Status.RUNNING):
            return  # a new run took the turn meanwhile: the audit keeps the call
        called = {"id": action.id, "name": registry_name, "kind": "mcp", "arguments": json.dumps(arguments)}
        outcome: dict[str, Any] = {
            "id": action.id,
            "name": registry_name,
            "ok": result.successful,
            "duration_ms": elapsed,
        }
        if result.successful:
            outcome |= {"result": shown[: settings.APTIX_TOOL_RESULT_STORE_CHARS], "size": len(shown)}
        else:
            outcome["error"] = shown
        events_append(
            card.turn_id,
            card.session.id,
            [
                ("tool.called", {**called, "by": "app", "app_card": card.call_id}),
                ("tool.result", {**outcome, "by": "app"}),
            ],
        )


def app_turn_idle(card: AppCard) -> None:
    """AppRefused 409 while a run holds the card's turn (its app's calls are written after its events)."""
    status = Turn.objects.filter(pk=card.turn_id).values_list("status", flat=True).first()
    if status in (Turn.Status.QUEUED, Turn.Status.RUNNING):
        raise AppRefused(409, TURN_BUSY)


async def app_call(card: AppCard, user: Any, name: str, arguments: dict[str, Any], *, approved: bool) -> dict[str, Any]:
    """Call the card's server's tool `name` for the app (the caller checked the policy: `approved` says
    whether the user approved it) and record it; the result as the server sent it (a CallToolResult)."""
    host = mcp_host()
    if host is None or host.app_tool(card.server, name) is None:
        raise AppRefused(403, NOT_ITS_TOOL.format(server=card.server, tool=name))
    await sync_to_async(app_turn_idle)(card)
    context = CallContext(
        session_id=card.session.id,
        org=card.session.team,
        user=user,
        turn_id=card.turn_id,
        tool_call_id=f"app:{card.call_id}",
        keep=True,
    )
    started = time.monotonic()
    result = await host.call_tool(card.server, name, f"{card.server}{TOOL_SEPARATOR}{name}", arguments, context)
    elapsed = round((time.monotonic() - started) * 1000, 1)
    decision = AppAction.Decision.APPROVED if approved else AppAction.Decision.AUTO
    await sync_to_async(_recorded)(card, user, decision, name=name, arguments=arguments, result=result, elapsed=elapsed)
    return sent_result(result)


def sent_result(result: InvokeResult) -> dict[str, Any]:
    """A tool result as the app reads it: as the server sent it, or the failure as an error result."""
    sent = (result.view or {}).get("result")
    if isinstance(sent, dict):
        return sent
    text = result.result if result.successful else result.error_message
    return {"content": [{"type": "text", "text": text or ""}], "isError": not result.successful}


async def app_read(card: AppCard, uri: str) -> dict[str, Any]:
    """`resources/read` of `uri` on the card's server only, as the app reads it."""
    host = mcp_host()
    if host is None:
        raise AppRefused(503, "The MCP servers are not running here.")
    result = await host.read_resource(uri, [card.server], user_id=card.session.user_id)
    if not result.successful:
        raise AppRefused(404, result.error_message or f"{uri} could not be read.")
    return {"contents": [{"uri": uri, "mimeType": "text/plain", "text": result.content_for_model()}]}


def app_context_set(card: AppCard, user: Any, params: dict[str, Any]) -> None:
    """Keep what the app gives the model to know (ui/update-model-context): its text blocks and
    structured content, replacing its card's last, for the session's next turns."""
    given = params.get("content")
    blocks: list[Any] = given if isinstance(given, list) else []
    text = "\n".join(str(b.get("text") or "") for b in blocks if isinstance(b, dict) and b.get("type") == "text")
    structured = params.get("structuredContent")
    if isinstance(structured, dict) and structured:
        text = f"{text}\n{json.dumps(structured, ensure_ascii=False)}".strip()
    session = card.session
    contexts = dict(session.app_context or {})
    if text:
        contexts[card.key] = {"server": card.server, "text": text[:CONTEXT_CHARS], "at": timezone.now().isoformat()}
    else:
        contexts.pop(card.key, None)
    session.app_context = contexts
    session.save(update_fields=["app_context"])
    # One row per card, the latest context (an app may update it on every move of a slider).
    kept = AppAction.objects.filter(turn_id=card.turn_id, tool_call_id=card.call_id, kind=AppAction.Kind.CONTEXT)
    if not kept.update(detail=text[:DETAIL_CHARS], user=user, created_at=timezone.now()):
        _audit(card, user, AppAction.Kind.CONTEXT, AppAction.Decision.SENT, detail=text)


def app_message_sent(card: AppCard, user: Any, text: str) -> None:
    _audit(card, user, AppAction.Kind.MESSAGE, AppAction.Decision.SENT, detail=text)


def app_actions(card: AppCard) -> list[AppAction]:
    """The app's tool calls, for its card ("called by the app")."""
    return list(
        AppAction.objects.filter(turn_id=card.turn_id, tool_call_id=card.call_id, kind=AppAction.Kind.TOOL_CALL)
    )


def app_context_note(session: AgentSession) -> str:
    """The system prompt's lines for what the session's apps gave the model to know ('' when none)."""
    contexts = session.app_context or {}
    lines = [
        f'- The app of MCP server "{item.get("server")}" says: {item.get("text")}'
        for item in contexts.values()
        if isinstance(item, dict) and item.get("text")
    ]
    return ("What the apps shown in this conversation report:\n" + "\n".join(lines)) if lines else ""
