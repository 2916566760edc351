"""`LLMClient.stream_chat` reads the raw Server-Sent Events of the SDK's streaming response itself
(agents/llm/stream.py): what real servers put on the wire besides plain chunks — comments,
`event:` lines, CRLF line ends, data split over lines, an error chunk mid-answer, a dropped
connection — served byte for byte by an ASGI app and read through the real SDK."""

from __future__ import annotations

import json

import pytest

from agents.llm import LLMClient, ModelError
from tests.helpers.scripted_model import openai_client

MESSAGES = [{"role": "user", "content": "Hi"}]


def chunk(delta: dict | None = None, *, finish: str | None = None, usage: dict | None = None) -> dict:
    body: dict = {"id": "c1", "object": "chat.completion.chunk", "created": 0, "model": "raw"}
    body["choices"] = [] if delta is None else [{"index": 0, "delta": delta, "finish_reason": finish}]
    if usage is not None:
        body["usage"] = usage
    return body


def data(body: object) -> bytes:
    return f"data: {json.dumps(body)}\n\n".encode()


class RawServer:
    """Streams `body` pieces as the response to every chat completion request; `fail_after`
    raises after that many pieces (the connection drops mid-answer)."""

    def __init__(self, *pieces: bytes, fail_after: int | None = None) -> None:
        self.pieces, self.fail_after = pieces, fail_after

    async def __call__(self, scope, receive, send) -> None:
        await receive()
        headers = [(b"content-type", b"text/event-stream")]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        for sent, piece in enumerate(self.pieces):
            if sent == self.fail_after:
                raise ConnectionResetError("peer went away")
            await send({"type": "http.response.body", "body": piece, "more_body": True})
        await send({"type": "http.response.body", "body": b"", "more_body": False})


async def stream(server: RawServer) -> tuple[list[str], object]:
    client = LLMClient(openai_client(server, max_retries=0), model="raw", label="raw")
    deltas: list[str] = []

    async def on_delta(text: str) -> None:
        deltas.append(text)

    try:
        return deltas, await client.stream_chat(messages=MESSAGES, tools=None, on_delta=on_delta)
    except ModelError as exc:
        return deltas, exc
    finally:
        await client.client.close()


async def test_comments_events_crlf_and_split_data_lines_are_read_as_sse():
    split = json.dumps(chunk({"content": " world"})).replace(', "choices"', ',\ndata: "choices"')
    server = RawServer(
        b": OPENROUTER PROCESSING\n\n",
        data(chunk({"role": "assistant", "content": ""})),
        b"event: message\r\ndata: " + json.dumps(chunk({"content": "Hello"})).encode() + b"\r\n\r\n",
        f"data: {split}\n\n".encode(),  # one event's data over two `data:` lines
        data(chunk({}, finish="stop")),
        data(chunk(usage={"prompt_tokens": 7, "completion_tokens": 2, "total_tokens": 9})),
        b"data: [DONE]\n\n",
    )
    deltas, reply = await stream(server)
    assert deltas == ["Hello", " world"]
    assert (reply.content, reply.finish_reason, reply.prompt_tokens, reply.completion_tokens) == (
        "Hello world",
        "stop",
        7,
        2,
    )
    assert not reply.usage_estimated


async def test_chunks_split_across_network_reads_are_joined():
    whole = data(chunk({"content": "Hello"})) + data(chunk({}, finish="stop")) + b"data: [DONE]\n\n"
    deltas, reply = await stream(RawServer(*(whole[i : i + 7] for i in range(0, len(whole), 7))))
    assert deltas == ["Hello"] and reply.finish_reason == "stop"


async def test_a_crlf_split_between_reads_bare_crs_and_a_character_split_between_reads():
    """The body is read as bytes (stream.py sse_events): a CRLF whose LF comes with the next read is one
    line end, not an empty line; CR alone ends lines too; a UTF-8 character may be cut between reads."""
    hello = ("data: " + json.dumps(chunk({"content": "Grüße €"}), ensure_ascii=False) + "\r\n\r\n").encode()
    cut = hello.index("€".encode()) + 1  # inside the euro sign's three bytes
    whole_crlf = hello[:cut], hello[cut:-1], hello[-1:]  # the last LF alone
    stop = ("data: " + json.dumps(chunk({}, finish="stop")) + "\r\r").encode()
    deltas, reply = await stream(RawServer(*whole_crlf, stop[:-1], stop[-1:], b"data: [DONE]\r\r"))
    assert deltas == ["Grüße €"] and reply.finish_reason == "stop"


async def test_an_error_chunk_mid_answer_fails_with_the_servers_message():
    server = RawServer(
        data(chunk({"content": "Partial"})),
        data({"error": {"message": "Upstream provider overloaded", "code": 502}}),
        b"data: [DONE]\n\n",
    )
    deltas, error = await stream(server)
    assert deltas == ["Partial"]
    assert isinstance(error, ModelError) and error.kind == "server"
    assert "Upstream provider overloaded" in str(error)


@pytest.mark.parametrize(
    "bad",
    [b"data: [1, 2]\n\n", b"data: {\"choices\": [{\"delta\": \"text\"}]}\n\n", b"data: {\"choices\": 3}\n\n"],
)
async def test_chunks_that_are_json_of_the_wrong_shape_are_a_malformed_stream(bad):
    _, error = await stream(RawServer(data(chunk({"content": "Hi"})), bad, b"data: [DONE]\n\n"))
    assert isinstance(error, ModelError) and error.kind == "malformed"


async def test_a_connection_dropped_mid_answer_is_a_connection_error():
    deltas, error = await stream(RawServer(data(chunk({"content": "Hi"})), data(chunk({})), fail_after=1))
    assert deltas == ["Hi"]
    assert isinstance(error, ModelError) and error.kind == "connection"


async def test_the_reply_names_the_model_the_server_says_answered():
    """Servers answer an alias with a dated model: the trace's gen_ai.response.model is theirs."""
    dated = {**chunk({"content": "Hi"}, finish="stop"), "model": "raw-2026-01-01"}
    _, reply = await stream(RawServer(data(dated), b"data: [DONE]\n\n"))
    assert reply.response_model == "raw-2026-01-01"
