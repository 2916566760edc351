"""A session exported as JSON or Markdown, for its owner: every turn with its message, tool calls
(arguments and results as the trace kept them), mode changes and answer, the files its message
carried; images as absolute links
(they are served to the session's owner or with the API token, as on the page)."""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import datetime
from typing import TYPE_CHECKING, Any

from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.template.defaultfilters import filesizeformat
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.http import require_GET

from agents.documents.export import documents_export
from agents.events.payloads import ToolCalled, ToolResult
from agents.selectors import app_calls_of_session, mode_change_list, tool_events_of_session, turn_list
from tools.registry import result_image

from .sessions import get_session_or_404

if TYPE_CHECKING:
    from agents.models import AgentSession, AppAction, TurnEvent

EXPORT_FORMAT = "aptix.session/1"
_MEDIA_LINK = re.compile(r"\]\((/media/[^)\s]+)\)")


def _iso(value: datetime | None) -> str | None:
    return value.isoformat() if value else None


# The export of each event type that has one: what it adds to the turn's tool calls (by call id).
Calls = dict[str, dict[str, Any]]


def _called(calls: Calls, payload: ToolCalled, absolute: Callable[[str], str]) -> None:
    calls[payload.get("id", "")] = {
        "id": payload.get("id", ""),
        "name": payload.get("name", ""),
        "kind": payload.get("kind", ""),
        "arguments": payload.get("arguments") or "",
        "ok": None,
    }


def _result(calls: Calls, payload: ToolResult, absolute: Callable[[str], str]) -> None:
    if payload.get("id", "") not in calls:
        return
    image = result_image(payload.get("name", ""), payload.get("result") or "")
    calls[payload["id"]].update(
        ok=bool(payload.get("ok")),
        result=payload.get("result") or "",
        error=payload.get("error") or "",
        durationMs=payload.get("duration_ms"),
        image=absolute(image["url"]) if image else None,
    )
    if isinstance(app := payload.get("app"), dict):  # an MCP App was shown with it: its calls join below
        calls[payload["id"]]["app"] = {"server": app.get("server", ""), "uri": app.get("uri", ""), "calls": []}


EXPORTS: dict[str, Callable[[Calls, Any, Callable[[str], str]], None]] = {
    "tool.called": _called,
    "tool.result": _result,
}


def _tool_calls(
    events: list[TurnEvent], absolute: Callable[[str], str], app_calls: dict[tuple[str, str], list[AppAction]]
) -> list[dict[str, Any]]:
    calls: Calls = {}
    for event in events:
        if export := EXPORTS.get(event.type):
            export(calls, event.payload or {}, absolute)
    for call_id, call in calls.items():
        if "app" in call and events:  # what the app called, as its card lists it ("Called by the app")
            call["app"]["calls"] = [
                {"tool": a.tool, "arguments": a.arguments, "decision": a.decision, "ok": a.ok, "at": _iso(a.created_at)}
                for a in app_calls.get((events[0].turn_id, call_id), [])
            ]
    return list(calls.values())


def _file(attached: dict[str, Any], absolute: Callable[[str], str]) -> dict[str, Any]:
    """A file the turn's message carried, as it was when sent, with its download (its owner's)."""
    return {
        "fileId": attached["fileId"],
        "name": attached["name"],
        "kind": attached["kind"],
        "size": attached["size"],
        "tables": [{"name": t["name"], "rows": t.get("rows")} for t in attached.get("tables") or []],
        "pages": attached.get("pages"),
        "url": absolute(reverse("file-download", args=[attached["fileId"]])),
    }


def session_export_data(session: AgentSession, absolute: Callable[[str], str]) -> dict[str, Any]:
    """The whole session as one JSON-able dict; `absolute` makes a site path an absolute URL."""
    events_of = tool_events_of_session(session=session)
    app_calls = app_calls_of_session(session=session)
    changes = [
        {
            "previousMode": c.previous_mode,
            "newMode": c.new_mode,
            "reason": c.reason,
            "branch": c.branch,
            "source": c.source,
            "turnId": c.turn_id,
            "modeVersion": c.mode_version,  # the version of the mode the session moved to
            "at": _iso(c.created_at),
        }
        for c in mode_change_list(session=session)
    ]
    turns = [
        {
            "id": t.id,
            "index": t.index,
            "createdAt": _iso(t.created_at),
            "finishedAt": _iso(t.finished_at),
            "execution": t.execution,
            "mode": t.mode,
            "modeVersion": (t.trace or {}).get("mode_version"),  # the catalog version the turn ran with
            "responseMode": t.response_mode,
            "status": t.status,
            "model": t.model_label,
            "message": t.user_message,
            "files": [_file(f, absolute) for f in t.files],
            "resources": list(t.resources),  # MCP resources the message carried: server, uri, name, mime
            "toolCalls": _tool_calls(events_of[t.id], absolute, app_calls),
            "modeChanges": [c for c in changes if c["turnId"] == t.id],
            "answer": _MEDIA_LINK.sub(lambda m: f"]({absolute(m.group(1))})", t.answer),
            "error": t.error,
            "usage": {"promptTokens": t.prompt_tokens, "completionTokens": t.completion_tokens},
            "steps": t.step_count,
            # Edit, retry, regenerate (agents/conversations.py): how it was sent; the turn that replaced it.
            "origin": t.origin,
            "sentByApp": t.sent_by_app or None,  # the MCP server whose app sent the message (the user confirmed)
            "replacedBy": t.replaced_by.index if t.replaced_by else None,
        }
        for t in turn_list(session=session)
    ]
    return {
        "format": EXPORT_FORMAT,
        "exportedAt": _iso(timezone.now()),
        "session": {
            "id": session.id,
            "title": str(session),
            "team": session.team.name,
            "user": session.user.get_username(),
            "mode": session.mode,
            "execution": session.execution,
            "model": session.model,
            "parentId": session.parent_id,
            "createdAt": _iso(session.created_at),
            "updatedAt": _iso(session.updated_at),
            "pinned": session.pinned_at is not None,
            "archived": session.archived_at is not None,
        },
        "turns": turns,
        "modeChanges": changes,
        # The drafts kept beside the chat, at their current version, with who made each version.
        "documents": documents_export(session_id=session.id),
    }


def _fenced(text: str, lang: str = "") -> str:
    """`text` in a code fence longer than any run of backticks inside it."""
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}{lang}\n{text.rstrip()}\n{fence}"


def _markdown_turn(turn: dict[str, Any]) -> list[str]:
    version = turn.get("modeVersion")
    mode = f"{turn['mode']} v{version}" if isinstance(version, int) else turn["mode"]
    out = [f"## Turn {turn['index']} · {turn['execution']} · {mode} · {turn['createdAt']}", ""]
    if turn.get("replacedBy"):
        out += [f"_Replaced by turn {turn['replacedBy']}: no longer part of the conversation._", ""]
    sender = f"**You (sent by the app of {turn['sentByApp']}):**" if turn.get("sentByApp") else "**You:**"
    out += [sender, "", turn["message"] or "_(no message)_", ""]
    if turn.get("files"):
        out += ["**Files:**", ""] + [f"- [{f['name']}]({f['url']}) ({_file_facts(f)})" for f in turn["files"]] + [""]
    if turn.get("resources"):
        out += (
            ["**MCP resources:**", ""]
            + [f"- {r['name']} `{r['uri']}` ({r['server']})" for r in turn["resources"]]
            + [""]
        )
    for call in turn["toolCalls"]:
        state = "ok" if call["ok"] else ("error" if call["ok"] is False else "not finished")
        out += [f"**Tool call** `{call['name']}` ({call['kind']}, {state})", "", _fenced(call["arguments"] or "{}")]
        if call.get("result") or call.get("error"):
            out += ["", "Result:", "", _fenced(call.get("result") or call.get("error") or "")]
        if call.get("image"):
            out += ["", f"![{call['name']}]({call['image']})"]
        if app := call.get("app"):
            out += ["", f"App `{app['uri']}` shown with it."]
            out += [f"- called by the app: `{c['tool']}` ({c['decision']}{_outcome(c['ok'])})" for c in app["calls"]]
        out.append("")
    for change in turn["modeChanges"]:
        out += [f"**Mode changed:** {change['previousMode']} → {change['newMode']} — {change['reason']}", ""]
    if turn["answer"]:
        out += ["**Aptix:**", "", turn["answer"], ""]
    if turn["error"]:
        out += [f"**Error ({turn['status']}):** {turn['error']}", ""]
    return out


def _outcome(ok: bool | None) -> str:
    return "" if ok is None else ", ok" if ok else ", failed"


def _file_facts(f: dict[str, Any]) -> str:
    facts = [f["kind"], filesizeformat(f["size"])]
    facts += [f"table `{t['name']}`, {t['rows']} rows" for t in f["tables"]]
    if f.get("pages"):
        facts.append(f"{f['pages']} pages")
    return ", ".join(facts)


def session_export_markdown(data: dict[str, Any]) -> str:
    session = data["session"]
    lines = [
        f"# {session['title']}",
        "",
        f"- Session `{session['id']}` · team {session['team']} · mode {session['mode']} · {session['execution']}",
        f"- Exported {data['exportedAt']}",
        "",
    ]
    for change in data["modeChanges"]:
        if change["turnId"] is None:  # by hand, from the mode badge
            lines += [f"_{change['at']}: mode {change['previousMode']} → {change['newMode']} ({change['source']})_", ""]
    for turn in data["turns"]:
        lines += _markdown_turn(turn)
    for document in data.get("documents", []):
        lines += [f"## Document: {document['title']} (version {document['version']})", ""]
        lines += [_fenced(document["content"], "markdown"), ""]
    return "\n".join(lines).rstrip() + "\n"


@require_GET
@login_required
def session_export(request: HttpRequest, session_id: str, fmt: str) -> HttpResponse:
    session = get_session_or_404(request, session_id, read=True)
    if fmt not in {"json", "md"}:
        raise Http404("Export as json or md.")
    data = session_export_data(session, request.build_absolute_uri)
    filename = f"aptix-session-{session.id}.{fmt}"
    if fmt == "json":
        response: HttpResponse = JsonResponse(data, json_dumps_params={"ensure_ascii": False, "indent": 2})
    else:
        response = HttpResponse(session_export_markdown(data), content_type="text/markdown; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    return response
