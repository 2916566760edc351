"""The card of an MCP server's question: its buttons post the answer here (agents/elicitations.py).
A wrong input's reason goes back into the card (422); a question already answered or closed is 409."""

from __future__ import annotations

from asgiref.sync import sync_to_async
from django.core.exceptions import ValidationError
from django.http import Http404, HttpRequest, HttpResponse
from django.utils.html import escape
from django.views.decorators.http import require_POST

from agents.approvals import CODE_STALE
from agents.elicitations import elicitation_answer
from agents.selectors import turn_aget
from agents.turns import error_code

from .actions import _first_error, _session

FIELD = "field-"


@require_POST
async def question_answer(request: HttpRequest, session_id: str, turn_id: str) -> HttpResponse:
    session = await _session(request, session_id)
    if session is None:
        return HttpResponse(status=401)
    turn = await turn_aget(session=session, turn_id=turn_id)
    if turn is None:
        raise Http404("No such turn.")
    content = {
        key.removeprefix(FIELD): values if len(values) > 1 else values[0]
        for key, values in request.POST.lists()
        if key.startswith(FIELD)
    }
    try:
        await sync_to_async(elicitation_answer)(
            turn=turn,
            item_id=request.POST.get("call", ""),
            action=request.POST.get("decision", ""),
            content=content,
            user=request.user,
        )
    except ValidationError as exc:
        status = 409 if error_code(exc) == CODE_STALE else 403 if error_code(exc) == "owner" else 422
        return HttpResponse(escape(_first_error(exc)), status=status)
    return HttpResponse(status=204)
