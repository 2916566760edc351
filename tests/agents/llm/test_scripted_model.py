"""The scripted model server and the streaming in-process transport, driven by the real OpenAI SDK."""

from __future__ import annotations

import asyncio
import json

import httpx2
import openai
import pytest

from agents.llm.transport import StreamingASGITransport
from tests.helpers.scripted_model import PlannedToolCall, ScriptedModel, loopback_server, openai_client

MESSAGES = [{"role": "system", "content": "You are terse."}, {"role": "user", "content": "Hi"}]
TOOLS = [
    {
        "type": "function",
        "function": {"name": name, "description": f"{name} tool", "parameters": {"type": "object", "properties": {}}},
    }
    for name in ("get_weather", "search")
]
LONG_TEXT = " ".join(f"word{i}" for i in range(60))


@pytest.fixture
def model() -> ScriptedModel:
    return ScriptedModel()


@pytest.fixture
async def client(model):
    client = openai_client(model)
    yield client
    await client.close()


async def _stream(client, **kw):
    return await client.chat.completions.create(
        model="m", messages=MESSAGES, stream=True, stream_options={"include_usage": True}, **kw
    )


async def _close_after_first_delta(client) -> None:
    """Start a streamed reply and walk away after its first text delta, as a stopped turn does."""
    stream = await _stream(client)
    async for chunk in stream:
        if chunk.choices and chunk.choices[0].delta.content:
            break
    await stream.close()


async def test_streams_text_in_several_deltas_with_usage(model, client):
    text = "Hello there, this reply arrives in several small pieces."
    model.reply(text, prompt_tokens=11, completion_tokens=7)
    deltas, usage, finish = [], None, None
    async for chunk in await _stream(client):
        if chunk.choices:
            deltas += [chunk.choices[0].delta.content] if chunk.choices[0].delta.content else []
            finish = chunk.choices[0].finish_reason or finish
        usage = chunk.usage or usage
    assert len(deltas) >= 3
    assert "".join(deltas) == text
    assert finish == "stop"
    assert (usage.prompt_tokens, usage.completion_tokens, usage.total_tokens) == (11, 7, 18)


async def test_non_streaming_reply_and_models_list(model, client):
    model.reply("Plain answer.", tool_calls=[("search", {"q": "x"})])
    completion = await client.chat.completions.create(model="m", messages=MESSAGES)
    message = completion.choices[0].message
    assert message.content == "Plain answer."
    assert message.tool_calls[0].function.name == "search"
    assert json.loads(message.tool_calls[0].function.arguments) == {"q": "x"}
    assert completion.usage.prompt_tokens > 0
    assert [m.id async for m in client.models.list()] == ["scripted-model"]


async def test_assembles_two_tool_calls_from_deltas(model, client):
    long_args = {"query": "x" * 100, "limit": 5}  # longer than one 40-character arguments delta
    planned = model.reply(
        "Checking.",
        tool_calls=[
            ("search", long_args),
            PlannedToolCall(name="get_weather", arguments='{"city": "Oslo"}', id="call_fixed"),
        ],
    )
    calls: dict[int, dict] = {}
    finish = None
    async for chunk in await _stream(client):
        if not chunk.choices:
            continue
        finish = chunk.choices[0].finish_reason or finish
        for delta in chunk.choices[0].delta.tool_calls or []:
            call = calls.setdefault(delta.index, {"id": None, "name": "", "arguments": ""})
            call["id"] = delta.id or call["id"]
            if delta.function:
                call["name"] += delta.function.name or ""
                call["arguments"] += delta.function.arguments or ""
    assert finish == "tool_calls"
    assert [calls[i]["id"] for i in (0, 1)] == [planned.tool_calls[0].id, "call_fixed"]
    assert [calls[i]["name"] for i in (0, 1)] == ["search", "get_weather"]
    assert json.loads(calls[0]["arguments"]) == long_args
    assert json.loads(calls[1]["arguments"]) == {"city": "Oslo"}


async def test_401_is_an_authentication_error(model, client):
    model.error(401, "Incorrect API key provided")
    with pytest.raises(openai.AuthenticationError) as caught:
        await _stream(client)
    assert caught.value.status_code == 401
    assert caught.value.code == "invalid_api_key"
    assert "Incorrect API key" in caught.value.message
    assert model.calls == 1  # not retried


async def test_429_is_retried_then_succeeds(model, client):
    model.error(429, "Slow down")
    model.reply("After the retry.")
    completion = await client.chat.completions.create(model="m", messages=MESSAGES)
    assert completion.choices[0].message.content == "After the retry."
    assert model.calls == 2 and model.pending == 0


async def test_500_raises_after_the_retries(model, client):
    for _ in range(3):
        model.error(500, "The server had an error")
    with pytest.raises(openai.InternalServerError):
        await _stream(client)
    assert model.calls == 3  # the first try and max_retries=2


async def test_empty_queue_fails_loudly_without_retries(model, client):
    with pytest.raises(openai.InternalServerError, match="no reply queued"):
        await _stream(client)
    assert model.calls == 1


async def test_deltas_arrive_before_the_reply_finishes(model, client):
    model.reply("One two three four five six seven eight nine ten eleven twelve.", chunk_delay=0.03)
    seen_while_sending = None
    async for chunk in await _stream(client):
        if seen_while_sending is None and chunk.choices and chunk.choices[0].delta.content:
            seen_while_sending = not model.stream_finished.is_set()
    assert seen_while_sending is True  # the first delta came while the server was still sending
    assert model.stream_finished.is_set()


async def test_closing_the_stream_early_cancels_the_server(model, client):
    model.reply(LONG_TEXT, chunk_delay=0.05)
    await _close_after_first_delta(client)
    assert model.stream_cancelled.is_set() and model.cancellations == 1
    assert not model.stream_finished.is_set()


async def test_delay_beyond_the_client_timeout_times_out(model):
    model.delay(2)
    model.reply("Too late.")
    client = openai_client(model, timeout=0.1, max_retries=0)
    try:
        with pytest.raises(openai.APITimeoutError):
            await client.chat.completions.create(model="m", messages=MESSAGES)
    finally:
        await client.close()


async def test_malformed_stream_raises_while_iterating(model, client):
    model.malformed()
    with pytest.raises(ValueError):  # json.JSONDecodeError from the SDK's SSE decoding
        async for _ in await _stream(client):
            pass


async def test_app_exception_before_the_response_propagates():
    async def broken(scope, receive, send):
        raise LookupError("boom")

    async with httpx2.AsyncClient(transport=StreamingASGITransport(broken), base_url="http://x") as http:
        with pytest.raises(LookupError, match="boom"):
            await http.get("/")


async def test_over_real_http_on_loopback(model):
    async with loopback_server(model) as url:
        client = openai.AsyncOpenAI(api_key="test", base_url=f"{url}/v1", max_retries=0, timeout=5)
        try:
            model.reply("Streamed over a real socket, in pieces.", tool_calls=[("search", {"q": "y"})])
            text, names = "", []
            async for chunk in await _stream(client):
                if chunk.choices:
                    text += chunk.choices[0].delta.content or ""
                    names += [t.function.name for t in chunk.choices[0].delta.tool_calls or [] if t.function.name]
            assert (text, names) == ("Streamed over a real socket, in pieces.", ["search"])

            model.reply(LONG_TEXT, chunk_delay=0.05)
            await _close_after_first_delta(client)
            await asyncio.wait_for(model.stream_cancelled.wait(), 2)  # the server saw the disconnect
            assert model.cancellations == 1
        finally:
            await client.close()


async def test_records_the_requests(model, client):
    model.reply("ok")
    model.reply("ok again")
    await client.chat.completions.create(model="m", messages=MESSAGES, tools=TOOLS)
    async for _ in await _stream(client, tools=TOOLS[:1], temperature=0.2):
        pass
    assert model.calls == 2
    first, second = model.requests
    assert first["messages"] == MESSAGES and first["model"] == "m" and not first.get("stream")
    assert [t["function"]["name"] for t in first["tools"]] == ["get_weather", "search"]
    assert second["stream"] is True and second["temperature"] == 0.2
    assert model.last_messages == MESSAGES
    assert model.last_tools == ["get_weather"]


async def test_a_cancel_that_arrives_with_a_chunk_is_not_lost():
    """Stop must stop: a reader cancelled just as a chunk arrives raises CancelledError. (With
    asyncio.wait_for on Python 3.11 the chunk won and the cancel was dropped: the run streamed on.)"""
    release = asyncio.Event()

    async def app(scope, receive, send):
        await receive()
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"first", "more_body": True})
        await release.wait()
        await send({"type": "http.response.body", "body": b"second", "more_body": True})
        await asyncio.Event().wait()  # never ends by itself

    async with (
        httpx2.AsyncClient(transport=StreamingASGITransport(app), base_url="http://app") as client,
        client.stream("GET", "/", timeout=30) as response,
    ):
        chunks = response.aiter_raw()
        assert await anext(chunks) == b"first"
        reader = asyncio.create_task(anext(chunks))
        await asyncio.sleep(0)  # the reader now waits for the next chunk
        release.set()
        await asyncio.sleep(0)  # the app sends it: the reader's wait is resolved...
        reader.cancel()  # ...and the cancel arrives before the reader runs again
        with pytest.raises(asyncio.CancelledError):
            async with asyncio.timeout(5):
                await reader
