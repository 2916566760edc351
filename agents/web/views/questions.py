"""The card of an MCP server's question: its buttons post the answer here (agents/elicitations.py).
A wrong input's reason goes back into the card (422); a question already answered or closed is 409."""

from __future__ import annotations

from typing import TYPE_CHECKING

from django.core.exceptions import ValidationError
from django.http import Http404, HttpRequest, HttpResponse
from django.utils.html import escape
from django.views.decorators.http import require_POST

from agents.approvals import CODE_STALE
from agents.elicitations import elicitation_answer_to_resume
from agents.selectors import turn_aget
from agents.submit import turn_submit
from agents.turns import error_code

from .actions import first_error, signed_in_session

if TYPE_CHECKING:
    from agents.models import Turn

FIELD = "field-"


@require_POST
async def question_answer(request: HttpRequest, session_id: str, turn_id: str) -> HttpResponse:
    session = await signed_in_session(request, session_id)
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

    def record() -> Turn | None:  # a question no run holds: its turn is resumed by a new run
        return elicitation_answer_to_resume(
            turn=turn,
            item_id=request.POST.get("call", ""),
            action=request.POST.get("decision", ""),
            content=content,
            user=request.user,
        )

    try:
        await turn_submit(record)
    except ValidationError as exc:
        status = 409 if error_code(exc) == CODE_STALE else 403 if error_code(exc) == "owner" else 422
        return HttpResponse(escape(first_error(exc)), status=status)
    return HttpResponse(status=204)
