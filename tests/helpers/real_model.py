"""The real-model tier's checks of a turn (tests/real_model/): it ends in a final state, a failure says
why, tool calls are well-formed or reported as errors, each step stays in the budget, and the stream
renders every event."""

from __future__ import annotations

import json

from asgiref.sync import sync_to_async

from agents.models import Turn, TurnEvent
from agents.run.reasoner import Reasoner
from agents.turns import turn_start
from agents.web.live import LiveRenderer

FINAL = {"completed", "failed", "limit_reached"}


async def run(real_llm, session, text: str, **reasoner) -> tuple[Turn, list[TurnEvent]]:
    turn = await sync_to_async(turn_start)(session=session, text=text)
    turn = await Reasoner(llm=real_llm, **reasoner).run(turn.id)
    turn = await Turn.objects.select_related("session").aget(pk=turn.id)
    return turn, [e async for e in TurnEvent.objects.filter(turn=turn).order_by("seq")]


async def check_turn(turn: Turn, events: list[TurnEvent], budget: int) -> None:
    assert turn.status in FINAL, (turn.status, turn.error)
    assert turn.status != "failed" or turn.error  # a failure says why
    for event in events:
        if event.type == "tool.called":
            try:
                json.loads(event.payload["arguments"] or "{}")
            except ValueError:
                result = next(e for e in events if e.type == "tool.result" and e.payload["id"] == event.payload["id"])
                assert result.payload["ok"] is False and "not valid JSON" in result.payload["error"]
        if event.type == "step.started":
            assert event.payload["tokens"] <= budget
            assert len(event.payload["tools"]) <= 128
    renderer = LiveRenderer(turn.session)
    for event in events:  # the stream renders every event of the turn, and moves the cursor past it
        html = await sync_to_async(renderer.render)(turn, event.type, event.payload, event.seq)
        assert 'id="stream-cursor"' in html or renderer.tail_only  # a reply's piece: the page moves it
