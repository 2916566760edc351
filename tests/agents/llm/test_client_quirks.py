"""`LLMClient.stream_chat` against the quirks of real OpenAI-compatible servers, scripted at the
protocol level (tests/helpers/scripted_model.py) and read through the real SDK."""

from __future__ import annotations

import json

import pytest

from agents.llm import LLMClient, ModelError
from agents.llm.protocol import estimate_tokens, prompt_token_estimate
from tests.helpers.scripted_model import PlannedToolCall, openai_client

MESSAGES = [{"role": "system", "content": "You are terse."}, {"role": "user", "content": "Hi"}]
TOOLS = [
    {
        "type": "function",
        "function": {"name": name, "description": f"{name} tool", "parameters": {"type": "object", "properties": {}}},
    }
    for name in ("get_weather", "search")
]
CALLS = [("get_weather", {"city": "Oslo", "unit": "celsius"}), ("search", {"q": "fjords in winter"})]


@pytest.fixture
async def client(model):
    """No SDK retries: every request the model sees is one `stream_chat` made."""
    client = LLMClient(openai_client(model, max_retries=0), model="scripted-model", label="scripted")
    yield client
    await client.client.close()


class Recorder:
    """Collects what `stream_chat` passes to its callbacks; a restart voids the deltas so far."""

    def __init__(self) -> None:
        self.deltas: list[str] = []
        self.reasoning: list[str] = []
        self.restarts = 0

    async def on_delta(self, text: str) -> None:
        self.deltas.append(text)

    async def on_reasoning(self, text: str) -> None:
        self.reasoning.append(text)

    async def on_restart(self) -> None:
        self.restarts += 1
        self.deltas.clear()

    def callbacks(self) -> dict:
        return {"on_delta": self.on_delta, "on_reasoning": self.on_reasoning, "on_restart": self.on_restart}


# -- 1. a stream cut off before its finish reason -------------------------------------------------
async def test_cut_off_stream_is_retried_once_and_the_caller_told(client, model):
    model.reply("This answer stops half", cut_off=True)
    model.reply("The whole answer.")
    seen = Recorder()
    reply = await client.stream_chat(messages=MESSAGES, tools=None, **seen.callbacks())
    assert (reply.content, reply.finish_reason) == ("The whole answer.", "stop")
    assert seen.restarts == 1 and "".join(seen.deltas) == "The whole answer."
    assert model.calls == 2


async def test_cut_off_twice_raises_with_the_partial_text(client, model):
    model.reply("First try", cut_off=True)
    model.reply("Second try, also cut", cut_off=True)
    with pytest.raises(ModelError) as raised:
        await client.stream_chat(messages=MESSAGES, tools=None)  # no on_restart: retried all the same
    assert raised.value.kind == "cut_off"
    assert str(raised.value) == "The model's answer was cut off before it finished. Try again."
    assert raised.value.partial == "Second try, also cut"
    assert model.calls == 2


async def test_cut_off_tool_calls_count_too(client, model):
    model.reply(tool_calls=CALLS, cut_off=True)
    model.reply(tool_calls=CALLS, cut_off=True)
    with pytest.raises(ModelError) as raised:
        await client.stream_chat(messages=MESSAGES, tools=TOOLS)
    assert (raised.value.kind, raised.value.partial) == ("cut_off", "")
    assert model.calls == 2


async def test_stream_ending_in_half_a_chunk_is_cut_off(client, model):
    """The SDK drops an unfinished SSE event at the end of the body without a word."""
    model.malformed("truncated")
    model.malformed("truncated")
    with pytest.raises(ModelError) as raised:
        await client.stream_chat(messages=MESSAGES, tools=None)
    assert (raised.value.kind, raised.value.partial, model.calls) == ("cut_off", "Hal", 2)


def test_model_error_partial_defaults_to_empty():
    assert ModelError("boom", kind="server").partial == ""


# -- 2. finish_reason "length" -----------------------------------------------------------------------
async def test_length_finish_is_a_truncated_reply_not_an_error(client, model):
    model.reply("A long answer that hit the tok", finish_reason="length")
    reply = await client.stream_chat(messages=MESSAGES, tools=None)
    assert (reply.content, reply.finish_reason, reply.truncated) == ("A long answer that hit the tok", "length", True)
    assert model.calls == 1
    model.reply("Short.")
    assert not (await client.stream_chat(messages=MESSAGES, tools=None)).truncated


# -- 3. parallel tool calls, ids, odd splits ---------------------------------------------------------
def _calls(reply) -> list[tuple[str, str, dict]]:
    return [(c.id, c.name, json.loads(c.arguments)) for c in reply.tool_calls]


async def test_parallel_calls_all_at_index_0_are_told_apart_by_id(client, model):
    planned = model.reply(tool_calls=CALLS, index0_parallel=True)
    reply = await client.stream_chat(messages=MESSAGES, tools=TOOLS)
    assert _calls(reply) == [(c.id, c.name, json.loads(c.arguments)) for c in planned.tool_calls]
    assert reply.finish_reason == "tool_calls" and model.calls == 1


async def test_calls_without_ids_get_stable_unique_ids(client, model):
    model.reply(tool_calls=CALLS, no_ids=True)
    reply = await client.stream_chat(messages=MESSAGES, tools=TOOLS)
    assert _calls(reply) == [(f"call_{n}", name, args) for n, (name, args) in enumerate(CALLS)]


async def test_generated_ids_avoid_the_ids_a_server_did_send(client, model):
    calls = [PlannedToolCall("search", '{"q": "a"}', id="call_1"), PlannedToolCall("search", '{"q": "b"}', id="")]
    model.reply(tool_calls=calls)
    reply = await client.stream_chat(messages=MESSAGES, tools=TOOLS)
    assert [c.id for c in reply.tool_calls] == ["call_1", "call_1_1"]


@pytest.mark.parametrize(
    "quirks",
    [
        {"odd_split": True},  # id alone, then the name, then arguments 3 characters at a time, interleaved
        {"odd_split": True, "index0_parallel": True},
        {"odd_split": True, "index0_parallel": True, "no_ids": True},  # only the new name tells them apart
    ],
    ids=["interleaved", "index0", "index0-no-ids"],
)
async def test_oddly_split_calls_are_assembled(client, model, quirks):
    planned = model.reply("Checking both.", tool_calls=CALLS, **quirks)
    reply = await client.stream_chat(messages=MESSAGES, tools=TOOLS)
    ids = ["call_0", "call_1"] if quirks.get("no_ids") else [c.id for c in planned.tool_calls]
    assert _calls(reply) == [(ident, name, args) for ident, (name, args) in zip(ids, CALLS, strict=True)]
    assert reply.content == "Checking both."


# -- 4. reasoning --------------------------------------------------------------------------------------
async def test_reasoning_content_is_kept_apart_from_the_answer(client, model):
    model.reply("Hello there!", reasoning="The user greets me, so I greet them back.")
    seen = Recorder()
    reply = await client.stream_chat(messages=MESSAGES, tools=None, **seen.callbacks())
    assert reply.reasoning == "The user greets me, so I greet them back." == "".join(seen.reasoning)
    assert reply.content == "Hello there!" == "".join(seen.deltas)
    assert len(seen.reasoning) > 1  # streamed live, piece by piece


async def test_think_block_split_across_chunks_is_reasoning(client, model):
    model.reply(pieces=["<thi", "nk>The user wa", "nts a greeting.</th", "ink>\n\nHel", "lo! 1 < 2 <", "3"])
    seen = Recorder()
    reply = await client.stream_chat(messages=MESSAGES, tools=None, **seen.callbacks())
    assert reply.reasoning == "The user wants a greeting." == "".join(seen.reasoning)
    assert reply.content == "Hello! 1 < 2 <3" == "".join(seen.deltas)
    assert not any("<" in piece and "think" in piece for piece in seen.deltas)


async def test_unclosed_think_block_at_the_end_is_reasoning(client, model):
    model.reply(pieces=["<think>", "Still weighing the options", " when the tokens ran o"], finish_reason="length")
    reply = await client.stream_chat(messages=MESSAGES, tools=None, on_reasoning=None)
    assert reply.reasoning == "Still weighing the options when the tokens ran o"
    assert (reply.content, reply.truncated) == ("", True)


async def test_think_block_with_tool_calls(client, model):
    model.reply(pieces=["<think>I need the weather.</think>"], tool_calls=CALLS[:1])
    reply = await client.stream_chat(messages=MESSAGES, tools=TOOLS)
    assert (reply.content, reply.reasoning) == ("", "I need the weather.")
    assert [c.name for c in reply.tool_calls] == ["get_weather"]


# -- 5. a server without tools -------------------------------------------------------------------------
async def test_server_refusing_tools_is_asked_again_without_them(client, model):
    model.reply("I cannot call tools, but hello.", reject_tools=True)
    reply = await client.stream_chat(messages=MESSAGES, tools=TOOLS)
    assert (reply.content, reply.tools_dropped) == ("I cannot call tools, but hello.", True)
    assert model.calls == 2
    assert [bool(r.get("tools")) for r in model.requests] == [True, False]


async def test_tools_kept_when_accepted(client, model):
    model.reply("Hello.")
    reply = await client.stream_chat(messages=MESSAGES, tools=TOOLS)
    assert reply.tools_dropped is False and model.last_tools == ["get_weather", "search"]


async def test_the_request_body_is_exactly_the_messages_and_tools_given(client, model, settings):
    """They go in the SDK's `extra_body` (not through its per-key parameter transform, which costs loop
    time per request): the server still receives them as given, once, with the request's other fields
    and the reply's limit (the room the context keeps for it)."""
    settings.APTIX_CONTEXT_TOKENS, settings.APTIX_REPLY_TOKENS = 32_000, 4_096
    model.reply("Hello.")
    await client.stream_chat(messages=MESSAGES, tools=TOOLS)
    assert model.last_request == {
        "model": "scripted-model",
        "messages": MESSAGES,
        "tools": TOOLS,
        "max_tokens": 4_096,
        "stream": True,
        "stream_options": {"include_usage": True},
    }
    model.reply("Again.")
    await client.stream_chat(messages=MESSAGES, tools=None)
    assert model.last_request == {
        "model": "scripted-model",
        "messages": MESSAGES,
        "max_tokens": 4_096,
        "stream": True,
        "stream_options": {"include_usage": True},
    }


async def test_the_reply_is_limited_to_the_room_its_context_keeps(model, settings):
    """A small model repeating itself generated until its context was full (4,400 tokens at 5 tokens/s
    from a 1.5B model on llama.cpp, which sets no limit of its own): each request now asks for at most
    APTIX_REPLY_TOKENS, at most a quarter of the model's context."""
    settings.APTIX_CONTEXT_TOKENS, settings.APTIX_REPLY_TOKENS = 32_000, 4_096
    small = LLMClient(openai_client(model, max_retries=0), model="small", context_tokens=8_192)
    model.reply("Hello.")
    await small.stream_chat(messages=MESSAGES, tools=None)
    await small.client.close()
    assert model.last_request["max_tokens"] == 2_048  # a quarter of its 8,192


async def test_a_server_refusing_max_tokens_is_asked_with_max_completion_tokens_then_without(client, model):
    """OpenAI's reasoning models refuse `max_tokens` and name `max_completion_tokens`; a server that
    refuses that too is asked with no limit, as a server refusing `tools` is asked without them."""
    model.error(
        400, "Unsupported parameter: 'max_tokens' is not supported with this model. Use 'max_completion_tokens'."
    )
    model.reply("Thought it through.")
    reply = await client.stream_chat(messages=MESSAGES, tools=None)
    assert reply.content == "Thought it through."
    assert [sorted(k for k in r if k.startswith("max_")) for r in model.requests] == [
        ["max_tokens"],
        ["max_completion_tokens"],
    ]
    model.error(400, "Unrecognized request argument supplied: max_tokens")
    model.error(400, "Unrecognized request argument supplied: max_completion_tokens")
    model.reply("No limit.")
    assert (await client.stream_chat(messages=MESSAGES, tools=None)).content == "No limit."
    assert [sorted(k for k in r if k.startswith("max_")) for r in model.requests[2:]] == [
        ["max_tokens"],
        ["max_completion_tokens"],
        [],
    ]


@pytest.mark.parametrize(
    "message, tools",
    [
        ("Invalid 'messages[1].content': expected a string.", TOOLS),  # another 400: not retried
        ("This model does not support tools", None),  # no tools were sent: nothing to drop
    ],
)
async def test_other_bad_requests_fail_as_before(client, model, message, tools):
    model.error(400, message)
    with pytest.raises(ModelError) as raised:
        await client.stream_chat(messages=MESSAGES, tools=tools)
    assert raised.value.kind == "bad_request"
    assert str(raised.value).startswith("The model server refused the request (HTTP 400): ")
    assert message in str(raised.value) and model.calls == 1


# -- 6. usage: refused stream_options, or none sent ------------------------------------------------------
async def test_server_refusing_stream_options_gets_estimated_usage(client, model):
    model.reply("Hello there, friend.", reject_stream_options=True)
    reply = await client.stream_chat(messages=MESSAGES, tools=None)
    assert reply.content == "Hello there, friend." and model.calls == 2
    assert ["stream_options" in r for r in model.requests] == [True, False]
    assert reply.usage_estimated is True
    assert reply.prompt_tokens == prompt_token_estimate(MESSAGES, None)
    assert reply.completion_tokens == estimate_tokens("Hello there, friend.")


async def test_server_refusing_tools_and_stream_options(client, model):
    model.reply("Plain.", reject_tools=True, reject_stream_options=True)
    reply = await client.stream_chat(messages=MESSAGES, tools=TOOLS)
    assert (reply.content, reply.tools_dropped, reply.usage_estimated) == ("Plain.", True, True)
    assert reply.prompt_tokens == prompt_token_estimate(MESSAGES, None)  # the tools were not sent
    assert model.calls == 3


async def test_missing_usage_chunk_is_estimated(client, model):
    model.reply("Hi.", tool_calls=CALLS[:1], reasoning="Weather question.", no_usage=True)
    reply = await client.stream_chat(messages=MESSAGES, tools=TOOLS)
    [call] = reply.tool_calls
    assert reply.usage_estimated is True and model.calls == 1
    assert reply.prompt_tokens == prompt_token_estimate(MESSAGES, TOOLS)
    assert reply.completion_tokens == estimate_tokens("Weather question.Hi.") + estimate_tokens(
        call.name + call.arguments
    )


async def test_reported_usage_is_not_estimated(client, model):
    model.reply("Hi.", prompt_tokens=42, completion_tokens=3)
    reply = await client.stream_chat(messages=MESSAGES, tools=None)
    assert (reply.prompt_tokens, reply.completion_tokens, reply.usage_estimated) == (42, 3, False)
