"""HTMX actions of the session view: send a message, send one again (edit, retry, regenerate), stop a
turn, switch mode or execution, toggle a tool, continue in a branched session. Each answers with
out-of-band fragments (hx-swap="none" on the caller) or, for a new page, an HX-Redirect. Auth runs
first; other users' sessions are 404."""

from __future__ import annotations

import json
from functools import partial
from typing import TYPE_CHECKING, Any

from asgiref.sync import sync_to_async
from django.contrib.auth.decorators import login_required
from django.core.exceptions import ValidationError
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseBadRequest, QueryDict
from django.template.loader import render_to_string
from django.urls import reverse
from django.views.decorators.http import require_POST
from django_htmx.http import HttpResponseClientRedirect, trigger_client_event

from agents.approvals import CODE_STALE, UserDecision, grant_revoke
from agents.approvals import approval_decide as approval_decide_service
from agents.attachments import CODE_NO_FILE
from agents.branching import session_branch as session_branch_service
from agents.conversations import turn_resend as turn_resend_service
from agents.selectors import mode_change_last_manual, session_refresh, turn_aget
from agents.sessions import session_set_execution, session_set_model, session_switch_mode, session_toggle_tool
from agents.submit import turn_submit
from agents.turns import error_code, turn_cancel, turn_start
from aptix.ratelimits import TURNS, Limited, rate_limit, user_key
from modes.catalog import ModeValidationError
from usage.quotas import CODE_QUOTA

from ..fragments import composer_error, replaced_turns, session_fragments
from ..timeline import render_turn
from ..toolpanel import tool_panel
from .sessions import get_session_or_404

if TYPE_CHECKING:
    from agents.models import AgentSession, Turn


def _error(message: str, status: int = 422) -> HttpResponse:
    """Shown under the composer (the `#composer-error` region); htmx swaps 422 answers (see the
    htmx-config meta tag in workspace.html)."""
    return HttpResponse(composer_error(message), status=status)


def _refused(exc: ValidationError, status: int = 422) -> HttpResponse:
    """A message the service refused: its reason under the composer. A quota's refusal says all the
    notice under the composer said (and more), so the notice goes: the reason shows once."""
    response = _error(first_error(exc), status=status)
    if error_code(exc) == CODE_QUOTA:
        response.content += render_to_string("agents/session_detail.html#quota-notice", {"oob": True}).encode()
    return response


def _too_many(limited: Limited) -> HttpResponse:
    """Past the user's turn rate: the reason under the composer, 429 with Retry-After."""
    response = _error(limited.message, status=429)
    response["Retry-After"] = str(limited.retry_after)
    return response


def _resources(post: QueryDict) -> list[Any] | None:
    """The composer's `resources` inputs, each a JSON {"server", "uri"} (static/js/files.js); a value
    that is not JSON is passed on as it is, for turn_start to refuse naming `resources`."""
    found: list[Any] = []
    for value in post.getlist("resources"):
        try:
            found.append(json.loads(value))
        except ValueError:
            found.append(value)
    return found or None


def first_error(exc: ValidationError) -> str:
    if hasattr(exc, "message_dict"):
        return " ".join(m for messages in exc.message_dict.values() for m in messages)
    return " ".join(exc.messages)


async def signed_in_session(request: HttpRequest, session_id: str) -> AgentSession | None:
    """The signed-in user's session (404 for anyone else's), or None when nobody is signed in.
    Async views cannot use login_required, so they call this first."""
    user = await request.auser()
    if not user.is_authenticated:
        return None
    request.user = user
    return await sync_to_async(get_session_or_404)(request, session_id)


async def _session_for_a_turn(request: HttpRequest, session_id: str) -> AgentSession | HttpResponse:
    """`signed_in_session` for a view that starts a turn, within the user's turn rate: the session, or the
    answer instead of one (401 signed out, 429 past the rate)."""
    session = await signed_in_session(request, session_id)
    if session is None:
        return HttpResponse(status=401)
    if limited := await sync_to_async(rate_limit)(TURNS, user_key(request.user), request):
        return _too_many(limited)
    return session


@require_POST
async def turn_new(request: HttpRequest, session_id: str) -> HttpResponse:
    """Start a turn with the composer's message; the reply streams over the websocket."""
    session = await _session_for_a_turn(request, session_id)
    if isinstance(session, HttpResponse):
        return session
    try:
        submitted = await turn_submit(
            partial(
                turn_start,
                session=session,
                text=request.POST.get("message", ""),
                choice=_choice(request.POST),
                resume=request.POST.get("continue") == "1",  # the Continue button of a turn stopped at a limit
                files=request.POST.getlist("files"),  # the composer's uploaded files (static/js/files.js)
                resources=_resources(request.POST),  # MCP resources attached from the Tools panel
            )
        )
    except ValidationError as exc:  # anyone else's file is a 404, as everywhere
        return _refused(exc, status=404 if error_code(exc) == CODE_NO_FILE else 422)
    html = await sync_to_async(_turn_started_fragments)(session, submitted.turn)
    return HttpResponse(html)


@require_POST
async def turn_resend(request: HttpRequest, session_id: str, turn_id: str) -> HttpResponse:
    """A turn's Edit (with the edited `message`), Retry or Regenerate button (`kind`): the message goes
    again as a new turn that streams like any other; the turns it replaced leave the timeline (they are
    its earlier versions now)."""
    session = await _session_for_a_turn(request, session_id)
    if isinstance(session, HttpResponse):
        return session
    try:
        submitted = await turn_submit(
            partial(
                turn_resend_service,
                session=session,
                turn_id=turn_id,
                kind=request.POST.get("kind", ""),
                text=request.POST.get("message", ""),
            )
        )
    except ValidationError as exc:
        return _refused(exc)
    return HttpResponse(await sync_to_async(_resent_fragments)(session, submitted.turn))


def _resent_fragments(session: AgentSession, turn: Turn) -> str:
    # (its busy composer has an empty error line)
    return replaced_turns(turn) + _turn_started_fragments(session, turn)


def _choice(data: QueryDict) -> dict[str, Any] | None:
    """A proposal's option button sends its answer structured as well as in words: consent to that
    mode change in this turn (agents/approvals.py). A typed message carries none."""
    mode = data.get("choice_mode", "").strip()
    return {"mode": mode, "branch": data.get("choice_branch") == "true"} if mode else None


def _turn_started_fragments(session: AgentSession, turn: Turn) -> str:
    # An upsert: appended to the timeline unless the stream already drew this turn (see aptix.js).
    if turn.index == 1:  # the first message names the session: header and sidebar follow
        session_refresh(session=session, fields=["title"])
    return session_fragments(
        session,
        append=render_turn(turn, [], if_absent=True),
        first_turn=turn.index == 1,
        composer="busy",
        turn=turn,
        files=bool(turn.files),  # the Files panel lists what the message attached
    )


@require_POST
async def turn_stop(request: HttpRequest, session_id: str, turn_id: str) -> HttpResponse:
    session = await signed_in_session(request, session_id)
    if session is None:
        return HttpResponse(status=401)
    turn = await turn_aget(session=session, turn_id=turn_id)
    if turn is None:
        raise Http404("No such turn.")
    await turn_cancel(turn=turn)
    return HttpResponse(status=204)


@require_POST
@login_required
def session_mode(request: HttpRequest, session_id: str) -> HttpResponse:
    """A manual mode switch by the user: through set_session_mode, recorded with source "user"."""
    session = get_session_or_404(request, session_id)
    try:
        session_switch_mode(session=session, mode=request.POST.get("mode", ""), user=request.user)
    except ModeValidationError as exc:
        return _error(str(exc))
    session_refresh(session=session)
    change = mode_change_last_manual(session=session)
    appended = ""
    if change is not None and change.new_mode == session.mode:
        appended = render_to_string("agents/_mode_change.html", {"change": change})
    html = session_fragments(session, append=appended, mode_badge=True, tools=True, meta=True)
    return trigger_client_event(HttpResponse(html), "aptix:modeChanged")


@require_POST
@login_required
def session_execution(request: HttpRequest, session_id: str) -> HttpResponse:
    """Ask / Agent, persisted on the session; the next turn selects its tools afresh (spec 004 §5.2)."""
    session = get_session_or_404(request, session_id)
    try:
        session_set_execution(session=session, execution=request.POST.get("execution", ""))
    except ValidationError as exc:
        return HttpResponseBadRequest(first_error(exc))
    return HttpResponse(session_fragments(session, tools=True, meta=True))


@require_POST
@login_required
def session_tools(request: HttpRequest, session_id: str) -> HttpResponse:
    """Switch one tool (or a whole MCP server) on or off for this session's next turns."""
    session = get_session_or_404(request, session_id)
    name = request.POST.get("tool", "").strip()
    panel = tool_panel(session)
    known = (
        {t.name for t in panel["internal"]}
        | {g.name for g in panel["servers"]}
        | {t.name for g in panel["servers"] for t in g.tools}
    )
    if name not in known:
        return HttpResponseBadRequest(f"Unknown tool {name!r}.", content_type="text/plain")
    session_toggle_tool(session=session, name=name, enabled=request.POST.get("enabled") == "on")
    return HttpResponse(session_fragments(session, tools=True))


@require_POST
async def session_branch(request: HttpRequest, session_id: str) -> HttpResponse:
    """ "Continue in a new <mode> session": a child session in the branched-to mode, linked to this
    one, whose first turn carries the request that led to the proposal (started at once)."""
    session = await _session_for_a_turn(request, session_id)
    if isinstance(session, HttpResponse):
        return session
    branched: list[AgentSession] = []

    def record() -> Turn | None:  # the child's first turn (None when it was branched before)
        child, turn = session_branch_service(session=session, turn_id=request.POST.get("turn", ""), user=request.user)
        branched.append(child)
        return turn

    try:
        await turn_submit(record)
    except ValidationError as exc:
        return _error(first_error(exc))
    response = HttpResponseClientRedirect(reverse("session-detail", args=[branched[0].id]))
    response.status_code = 204  # nothing to swap: htmx follows HX-Redirect on any 2xx
    return response


DECISIONS = {
    "allow-once": (True, "once", None),
    "allow-session": (True, "session", None),
    "deny": (False, "once", None),
    "decline": (False, "once", None),  # a "connect" card: go on without the server
    "switch": (True, "once", False),
    "switch-new": (True, "once", True),
    "stay": (False, "once", None),
}


@require_POST
async def approval_decide(request: HttpRequest, session_id: str, turn_id: str) -> HttpResponse:
    """A button of an approval card: record the decision; once the turn waits for nothing more, its
    run continues (the stream shows the rest)."""
    session = await signed_in_session(request, session_id)
    if session is None:
        return HttpResponse(status=401)
    turn = await turn_aget(session=session, turn_id=turn_id)
    if turn is None:
        raise Http404("No such turn.")
    choice = DECISIONS.get(request.POST.get("decision", ""))
    if choice is None:
        return HttpResponseBadRequest("Unknown decision.")
    approve, scope, branch = choice
    decision = UserDecision(request.POST.get("call", ""), approve, scope, branch)

    def record() -> Turn | None:  # the turn continues once it waits for no other decision
        done = approval_decide_service(turn=turn, decisions=[decision], user=request.user)
        return turn if done else None

    try:
        await turn_submit(record)
    except ValidationError as exc:
        return _error(first_error(exc), status=409 if error_code(exc) == CODE_STALE else 422)
    return HttpResponse(status=204)


@require_POST
@login_required
def session_grant_revoke(request: HttpRequest, session_id: str) -> HttpResponse:
    """Take back an "Allow for this session" grant (the Tools panel)."""
    session = get_session_or_404(request, session_id)
    tool = request.POST.get("tool", "").strip()
    if tool not in (session.approval_grants or []):
        return HttpResponseBadRequest(f"No grant for {tool!r} in this session.", content_type="text/plain")
    grant_revoke(session=session, tool=tool)
    return HttpResponse(session_fragments(session, tools=True))


@require_POST
@login_required
def session_model(request: HttpRequest, session_id: str) -> HttpResponse:
    """The model select in the session's header: the next turns run on the picked model."""
    session = get_session_or_404(request, session_id)
    try:
        session_set_model(session=session, model=request.POST.get("model", ""))
    except ValidationError as exc:
        return HttpResponseBadRequest(first_error(exc))
    return HttpResponse(session_fragments(session, model=True))
