"""What the A2A handler runs and reads for the token's user, through the agents' services: the modes
they may use (their team's catalog, as GET /api/v1/modes), a turn started as the JSON API starts one
(agents/web/api.py `submit_turn` / `finish_turn`), their own turns as tasks, decisions on a waiting
turn (the API's `approvals`) and a cancel (agents.turns.turn_cancel)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from asgiref.sync import sync_to_async
from django.conf import settings

from agents.approvals import UserDecision
from agents.runner import get_runner
from agents.selectors import turn_continued_aget, turn_last, turn_of_user_aget
from agents.submit import Submitted
from agents.turns import Status, turn_cancel
from agents.web.api import ExecuteRequest, finish_turn, submit_turn
from agents.web.api_modes import api_modes
from agents.web.api_support import ApiError
from aptix.bearer import token_modes
from aptix.ratelimits import TURNS, rate_limit, user_key

from .tasks import answerable, awaiting, effective

if TYPE_CHECKING:
    from django.http import HttpRequest

    from agents.models import Turn
    from modes.models import AgentMode

ORIGIN = "via A2A"  # the sidebar's label of a conversation begun over A2A
CHAIN_MAX = 8  # turns followed from a task's turn through the turns that continued its request
ERROR_NOT_WAITING = "This task is not waiting for input: send a new message in its context instead."
ERROR_BROWSER = "This task waits for an answer only the browser can give (its status message links the session)."
ERROR_UNKNOWN_SKILL = "Unknown skill {key!r}: the extended agent card lists the modes you may use."


def user_modes(*, user: Any, limited_to: tuple[str, ...] = ()) -> list[AgentMode]:
    """The active modes the user may use in the team a new conversation of theirs belongs to, within
    their token's mode limits."""
    return api_modes(user=user, limited_to=limited_to)


def mode_of_skill(*, user: Any, key: str, limited_to: tuple[str, ...] = ()) -> AgentMode:
    """The mode a skill id names if the user (and their token) may use it, else ApiError naming the skill."""
    mode = next((mode for mode in user_modes(user=user, limited_to=limited_to) if mode.key == key), None)
    if mode is None:
        raise ApiError(400, ERROR_UNKNOWN_SKILL.format(key=key), "skill")
    return mode


def base_url(request: HttpRequest) -> str:
    """Where the site is for an answer's links: APTIX_PUBLIC_URL when set, else the request's origin."""
    return (settings.APTIX_PUBLIC_URL or request_origin(request)).rstrip("/")


def request_origin(request: HttpRequest) -> str:
    """The origin the client reached: the cards' endpoint is on it, so a client that read the card at
    an address posts to the same one (the scheme as Django sees it: behind a TLS proxy, with
    SECURE_PROXY_SSL_HEADER)."""
    return f"{request.scheme}://{request.get_host()}"


async def start(
    *,
    user: Any,
    request: HttpRequest,
    text: str,
    conversation_id: str | None,
    mode: str | None,
    execution: str | None,
) -> Submitted:
    """Record and dispatch a turn of the user: a new conversation (in `mode`, in its execution unless
    `execution` says otherwise; else in their defaults) or the next turn of their conversation
    `conversation_id` (which keeps its own mode), within the user's turn rate. Refusals raise
    ApiError with the API's message."""
    if limited := await sync_to_async(rate_limit)(TURNS, user_key(user), request):
        raise ApiError.too_many(limited)
    if mode is not None and not conversation_id:
        chosen = await sync_to_async(mode_of_skill)(user=user, key=mode, limited_to=token_modes(request))
        mode, execution = chosen.key, execution or chosen.execution or None
    parsed = ExecuteRequest(
        conversation_id=conversation_id or None,
        mode=None if conversation_id else mode,
        execution=execution,
        message=text,
        origin=ORIGIN,
        modes=token_modes(request),
    )
    return await submit_turn(user=user, request=parsed)


async def decide(*, user: Any, chain: Sequence[Turn], approve: bool) -> Submitted:
    """Decide every call the task's waiting turn waits on (approve or deny, once), as the JSON API's
    `approvals`, and dispatch its run again."""
    turn = effective(chain)
    calls = awaiting(turn) if turn.status == Status.AWAITING_APPROVAL else []
    if not calls or await sync_to_async(_not_last)(turn):
        raise ApiError(409, ERROR_NOT_WAITING, "taskId")
    if not answerable(calls):
        raise ApiError(409, ERROR_BROWSER, "taskId")
    parsed = ExecuteRequest(
        conversation_id=turn.session_id,
        mode=None,
        execution=None,
        message=None,
        approvals=[UserDecision(call["id"], approve) for call in calls],
    )
    return await submit_turn(user=user, request=parsed)


def _not_last(turn: Turn) -> bool:
    last = turn_last(session=turn.session)
    return last is None or last.pk != turn.pk


async def finish(submitted: Submitted) -> list[Turn]:
    """Wait for the submitted turn's end or pause (and the turn that carried it on after a consented
    switch): the chain from the submitted turn."""
    turn, follow_up = await finish_turn(submitted)
    return [turn] if follow_up is None else [turn, follow_up]


async def chain_of(*, user: Any, task_id: str) -> list[Turn] | None:
    """The task's turns, when it is a turn of the user's own conversations (anyone else's, a shared
    one or a made-up id: None), followed by the turns that continued its request."""
    turn = await turn_of_user_aget(user=user, turn_id=task_id)
    if turn is None or turn.session.user_id != user.pk:
        return None
    chain = [turn]
    while len(chain) < CHAIN_MAX and (following := await turn_continued_aget(turn=chain[-1])) is not None:
        chain.append(following)
    return chain


async def cancel(*, chain: Sequence[Turn]) -> bool:
    """Stop the task's turn if it is still open and wait for it to end: False if it had ended."""
    turn = effective(chain)
    if not await turn_cancel(turn=turn):
        return False
    await get_runner().wait(turn.id, session_id=turn.session_id)
    return True
