"""What a run reads before its first model call, in one trip to the database thread."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from asgiref.sync import sync_to_async
from django.db.models import Max

from modes.models import AgentMode

from ..models import Turn

HISTORY_TURNS = 20


@dataclass
class LoadedRun:
    turn: Turn
    mode: AgentMode | None  # the turn's mode in the catalog (None if deleted since)
    history: list[dict[str, Any]]  # earlier turns of the session as chat messages
    last_seq: int  # the turn's last event so far (a continued turn carries on from it)


@sync_to_async
def load_run(turn_id: str) -> LoadedRun:
    turn = Turn.objects.select_related("session__team", "session__user").get(pk=turn_id)
    last_seq = 0
    if turn.status != Turn.Status.QUEUED:  # a queued turn has no events yet
        last_seq = turn.events.aggregate(m=Max("seq"))["m"] or 0
    if turn.is_paused:  # continues from its stored state: the mode (for its approval policy), no history
        return LoadedRun(turn=turn, mode=AgentMode.objects.filter(key=turn.mode).first(), history=[], last_seq=last_seq)
    previous = (
        Turn.objects.filter(
            session_id=turn.session_id,
            index__lt=turn.index,
            status__in=[Turn.Status.COMPLETED, Turn.Status.LIMIT_REACHED],
        )
        .order_by("-index")
        .only("user_message", "answer")[:HISTORY_TURNS]
        if turn.index > 1
        else []
    )
    history: list[dict[str, Any]] = []
    for past in reversed(list(previous)):
        history.append({"role": "user", "content": past.user_message})
        history.append({"role": "assistant", "content": past.answer or "(no answer)"})
    return LoadedRun(
        turn=turn, mode=AgentMode.objects.filter(key=turn.mode).first(), history=history, last_seq=last_seq
    )
