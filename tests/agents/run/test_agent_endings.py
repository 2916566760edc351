"""Agent runs that end with an answer (agents/run/limits.py, tool_calls.py): a repeated call is not
run again, repeating stops the loop, every limit ends with one last call without tools whose text is
the answer (or, failing that, a plain account), an empty reply is nudged once, and Continue carries on
from a stopped turn with a fresh step budget."""

from __future__ import annotations

import json

from asgiref.sync import sync_to_async
from mcp_types import ToolAnnotations

from agents.models import Turn
from agents.run.limits import NUDGE
from agents.run.reasoner import Reasoner
from agents.run.tool_calls import REPEAT_NOTE
from agents.turns import CONTINUE_MESSAGE, turn_start
from modes.models import AgentMode
from tests.helpers import async_db
from tests.helpers.events import events_of
from tools.base import InvokeResult, function_schema
from tools.registry import mcp_registry

pytestmark = async_db

COUNT = {"sql": "select count(*) from orders"}


async def offer_everything():
    await AgentMode.objects.filter(key="general").aupdate(tool_policy=["*"])


async def test_a_repeated_call_is_not_run_again_and_the_model_gets_the_earlier_result(
    make_session, run_turn, model, mcp_sql_tool
):
    await offer_everything()
    session = await make_session(execution="agent")
    model.reply("", tool_calls=[("sql__query", COUNT)])
    model.reply("", tool_calls=[("sql__query", {"sql": "select count(*) from orders"})])  # same, reordered keys
    model.reply("There are 10.")
    turn = await run_turn(session, "How many orders?")
    assert turn.status == "completed" and turn.answer == "There are 10."
    assert mcp_sql_tool.calls == [json.dumps(COUNT)]  # ran once
    first, second = [m["content"] for m in model.last_messages if m["role"] == "tool"]
    assert second == first + REPEAT_NOTE
    results = await events_of(turn, "tool.result")
    assert [r.get("repeat", False) for r in results] == [False, True]


async def test_repeating_ends_with_a_final_answer_without_tools(make_session, run_turn, model, mcp_sql_tool, settings):
    settings.APTIX_MAX_REPEATS = 2
    await offer_everything()
    session = await make_session(execution="agent")
    for _ in range(3):
        model.reply("", tool_calls=[("sql__query", COUNT)])
    model.reply("There are 10 orders.")
    turn = await run_turn(session, "How many orders?")
    assert turn.status == "limit_reached" and turn.answer == "There are 10 orders."
    assert "tools" not in model.last_request and model.calls == 4 and len(mcp_sql_tool.calls) == 1
    assert "Do not call any tool now" in model.last_messages[-1]["content"]
    [limit] = await events_of(turn, "limit.reached")
    assert limit["limit"] == "repeats"


async def test_when_the_final_call_fails_the_answer_says_what_was_done(make_session, llm, run_turn, model):
    session = await make_session(execution="agent")
    for i in range(2):
        model.reply("", tool_calls=[("agent_list_modes", {"includeExamples": bool(i)})])
    model.error(500, "boom")
    turn = await run_turn(session, reasoner=Reasoner(llm=llm, max_steps=2))
    assert turn.status == "limit_reached"
    assert turn.answer.startswith("Stopped after 2 steps") and "What I did: agent_list_modes (2×)" in turn.answer


async def test_an_empty_reply_is_nudged_once(make_session, run_turn, model):
    session = await make_session(execution="agent")
    model.reply("")
    model.reply("The real answer.")
    turn = await run_turn(session, "Hi")
    assert turn.answer == "The real answer." and model.calls == 2
    assert model.last_messages[-1] == {"role": "user", "content": NUDGE}
    assert all(m.get("content") is not None for m in model.last_messages if m["role"] == "assistant")
    model.reply("")
    model.reply("")
    turn = await run_turn(turn.session, "Again")
    assert turn.status == "completed" and turn.answer == "" and model.calls == 4  # nudged once, then accepted


class NotIdempotent:
    TOOL_USAGE_METADATA = "Append a line."
    is_tool_fully_executed_on_server = True
    TOOL_NAME = "log__append"
    read_only = False
    annotations = ToolAnnotations(read_only_hint=False, idempotent_hint=False)
    calls = 0

    @staticmethod
    def get_schema():
        return function_schema("log__append", "Append.", {"line": {"type": "string"}})

    async def execute(self, arguments_json, context):
        type(self).calls += 1
        return InvokeResult.create("appended")


async def test_a_tool_that_says_it_is_not_idempotent_runs_each_time(make_session, run_turn, model, settings):
    settings.APTIX_MODE_CHANGE_CONSENT = "trust"
    await AgentMode.objects.filter(key="general").aupdate(tool_policy=["*"], approval_policy=["log.*: auto"])
    mcp_registry.register(NotIdempotent())
    try:
        session = await make_session(execution="agent")
        model.reply("", tool_calls=[("log__append", {"line": "x"})])
        model.reply("", tool_calls=[("log__append", {"line": "x"})])
        model.reply("Twice.")
        turn = await run_turn(session, "Log x twice")
    finally:
        mcp_registry.unregister("log__append")
    assert turn.answer == "Twice." and NotIdempotent.calls == 2


async def test_continue_carries_the_stopped_turns_context_with_a_fresh_step_budget(
    make_session, llm, run_turn, model, mcp_sql_tool
):
    await offer_everything()
    session = await make_session(execution="agent")
    model.reply("", tool_calls=[("sql__query", COUNT)])
    model.reply("So far: a count.")  # the final answer at the step limit
    stopped = await run_turn(session, "How many orders?", reasoner=Reasoner(llm=llm, max_steps=1))
    assert stopped.status == "limit_reached"

    model.reply("There are 10 orders.")
    turn = await sync_to_async(turn_start)(session=session, text="", resume=True)
    assert turn.user_message == CONTINUE_MESSAGE
    turn = await Reasoner(llm=llm, max_steps=1).run(turn.id)
    assert turn.status == "completed" and turn.step_count == 1 and turn.answer == "There are 10 orders."
    sent = model.last_messages
    assert any(m["role"] == "tool" and "2026-01" in m["content"] for m in sent)  # the stopped turn's result
    assert sent[-1] == {"role": "user", "content": CONTINUE_MESSAGE}


async def test_continue_needs_a_stopped_turn(make_session, run_turn, model):
    from django.core.exceptions import ValidationError

    session = await make_session()
    model.reply("Done.")
    await run_turn(session, "Hi")
    try:
        await sync_to_async(turn_start)(session=session, text="", resume=True)
    except ValidationError as exc:
        assert "nothing to continue" in exc.message_dict["continue"][0]
    else:
        raise AssertionError("Continue after a completed turn was accepted")
    assert await Turn.objects.filter(session=session).acount() == 1


async def test_the_api_continues_a_stopped_turn(llm, model, alice, settings, mcp_sql_tool):
    from aptix.tokens import api_token_create
    from tests.helpers import ServerLikeAsyncClient

    settings.APTIX_MAX_STEPS = 1
    await offer_everything()
    _, token = await sync_to_async(api_token_create)(user=alice)

    async def post(body):
        response = await ServerLikeAsyncClient().post(
            "/api/v1/agent/execute",
            data=json.dumps(body),
            content_type="application/json",
            headers={"Authorization": f"Bearer {token}"},
        )
        return response.status_code, json.loads(response.content)

    model.reply("", tool_calls=[("sql__query", COUNT)])
    model.reply("So far: a count.")
    status, body = await post({"message": "How many orders?", "execution": "agent"})
    assert status == 200 and body["status"] == "limit_reached" and body["answer"] == "So far: a count."
    conversation = body["conversationId"]
    model.reply("There are 10 orders.")
    status, body = await post({"conversationId": conversation, "continue": True})
    assert status == 200 and body["status"] == "completed" and body["answer"] == "There are 10 orders."
    status, body = await post({"conversationId": conversation, "continue": True})  # nothing stopped now
    assert status == 409 and body["error"]["field"] == "continue"
    status, body = await post({"conversationId": conversation, "continue": "yes"})
    assert status == 400 and body["error"]["field"] == "continue"


async def test_the_offline_model_demonstrates_a_loop_that_still_ends_with_an_answer(make_session, settings):
    """The built-in model's looping demo ("keep checking the modes"): it calls agent_list_modes again
    and again; the call runs once, the repeats stop the run, and the final call answers."""
    from agents.llm.client import reset_llm_clients

    settings.OPENAI_API_KEY = settings.OPENAI_BASE_URL = ""
    settings.APTIX_MODELS_CONFIG = "no-such-models.json"
    reset_llm_clients()
    session = await make_session(execution="agent")
    turn = await sync_to_async(turn_start)(session=session, text="Keep checking the modes")
    turn = await Reasoner().run(turn.id)
    reset_llm_clients()
    assert turn.model_label == "offline" and turn.status == "limit_reached"
    [limit] = await events_of(turn, "limit.reached")
    assert limit["limit"] == "repeats"
    results = await events_of(turn, "tool.result")
    assert [r.get("repeat", False) for r in results] == [False, True, True]
    assert "Here are the available modes" in turn.answer
