"""A turn's log lines carry its turn, session and user ids, and the request id of the request that
started it (a run starts in a context of its own and binds them)."""

from __future__ import annotations

import logging

from asgiref.sync import sync_to_async

from agents.run import reasoner
from agents.run.runners import LocalRunner
from agents.turns import turn_start
from aptix import logcontext
from tests.helpers import inline_db
from tests.helpers.logs import json_lines


@inline_db
async def test_a_turns_log_lines_carry_the_turn_session_user_and_request_ids(llm, model, make_session, monkeypatch):
    session = await make_session()
    model.reply("Hi.")
    build = reasoner.build_system_prompt

    def logging_build(**kwargs):
        logging.getLogger("aptix.test").info("a line the run logs")
        return build(**kwargs)

    monkeypatch.setattr(reasoner, "build_system_prompt", logging_build)
    turn = await sync_to_async(turn_start)(session=session, text="Hello")
    token = logcontext.bind(request_id="req-run-7")  # the request that starts the turn
    try:
        with json_lines() as logged:
            await LocalRunner().start(turn.id)
    finally:
        logcontext._ids.reset(token)
    [line] = [line for line in logged() if line["message"] == "a line the run logs"]
    assert line["turn_id"] == turn.id and line["session_id"] == session.id
    assert line["user_id"] == session.user_id and line["request_id"] == "req-run-7"
