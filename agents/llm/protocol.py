"""The wire format of OpenAI Chat Completions streaming, for the model servers we run ourselves
(the built-in offline model and the scripted model of the tests).

`read_body` reads a request's body for them. A reply is described as a `PlannedReply` (text and/or
tool calls plus usage); `sse_chunks` turns it into the `data: {...}\\n\\n` lines a real server
streams: the text in small deltas, each tool call as a first delta with id and name and then its
arguments in pieces, a final chunk with the finish reason, a usage chunk (when the client asked for
`stream_options.include_usage`) and `data: [DONE]`.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from typing import Any


@dataclass
class PlannedToolCall:
    name: str
    arguments: str  # JSON text, sent as is (it may be invalid on purpose in tests)
    id: str = field(default_factory=lambda: f"call_{uuid.uuid4().hex[:24]}")


@dataclass
class PlannedReply:
    content: str = ""
    tool_calls: list[PlannedToolCall] = field(default_factory=list)
    prompt_tokens: int | None = None
    completion_tokens: int | None = None

    @property
    def finish_reason(self) -> str:
        return "tool_calls" if self.tool_calls else "stop"


async def read_body(receive: Callable[[], Awaitable[dict]]) -> bytes | None:
    """The whole body of an ASGI HTTP request, or None if the client left before sending it."""
    body = b""
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            return None
        body += message.get("body", b"")
        if not message.get("more_body", False):
            return body


def estimate_tokens(text: str) -> int:
    """Rough token count (about four characters a token), for servers that have no tokenizer."""
    return max(1, (len(text) + 3) // 4) if text else 0


def prompt_token_estimate(messages: list[dict], tools: list[dict] | None) -> int:
    return estimate_tokens(json.dumps(messages)) + estimate_tokens(json.dumps(tools or []))


def split_text(text: str, size: int = 12) -> list[str]:
    """Split text into word-aligned pieces of about `size` characters, like token deltas."""
    pieces: list[str] = []
    current = ""
    for word in text.split(" "):
        candidate = f"{current} {word}" if current else word
        if current and len(candidate) > size:
            pieces.append(current + " ")
            current = word
        else:
            current = candidate
    if current:
        pieces.append(current)
    return pieces


def _chunk(
    completion_id: str,
    model: str,
    created: int,
    delta: dict | None,
    *,
    finish: str | None = None,
    usage: dict | None = None,
) -> str:
    body: dict[str, Any] = {
        "id": completion_id,
        "object": "chat.completion.chunk",
        "created": created,
        "model": model,
        "choices": [] if delta is None else [{"index": 0, "delta": delta, "finish_reason": finish}],
    }
    if usage is not None:
        body["usage"] = usage
    return f"data: {json.dumps(body)}\n\n"


def sse_chunks(
    reply: PlannedReply, *, model: str, prompt_tokens: int, include_usage: bool, piece_size: int = 12
) -> Iterator[str]:
    completion_id = f"chatcmpl-{uuid.uuid4().hex[:24]}"
    created = int(time.time())
    yield _chunk(completion_id, model, created, {"role": "assistant", "content": ""})
    for piece in split_text(reply.content, piece_size):
        yield _chunk(completion_id, model, created, {"content": piece})
    for index, call in enumerate(reply.tool_calls):
        yield _chunk(
            completion_id,
            model,
            created,
            {
                "tool_calls": [
                    {
                        "index": index,
                        "id": call.id,
                        "type": "function",
                        "function": {"name": call.name, "arguments": ""},
                    }
                ]
            },
        )
        args = call.arguments
        for start in range(0, len(args), 40):
            yield _chunk(
                completion_id,
                model,
                created,
                {
                    "tool_calls": [
                        {
                            "index": index,
                            "function": {"arguments": args[start : start + 40]},
                        }
                    ]
                },
            )
    yield _chunk(completion_id, model, created, {}, finish=reply.finish_reason)
    if include_usage:
        completion = reply.completion_tokens
        if completion is None:
            completion = estimate_tokens(reply.content) + sum(
                estimate_tokens(c.name + c.arguments) for c in reply.tool_calls
            )
        prompt = reply.prompt_tokens if reply.prompt_tokens is not None else prompt_tokens
        yield _chunk(
            completion_id,
            model,
            created,
            None,
            usage={
                "prompt_tokens": prompt,
                "completion_tokens": completion,
                "total_tokens": prompt + completion,
            },
        )
    yield "data: [DONE]\n\n"


def completion_body(reply: PlannedReply, *, model: str, prompt_tokens: int) -> dict:
    """The non-streaming response body for the same reply."""
    completion = reply.completion_tokens if reply.completion_tokens is not None else estimate_tokens(reply.content)
    prompt = reply.prompt_tokens if reply.prompt_tokens is not None else prompt_tokens
    message: dict[str, Any] = {"role": "assistant", "content": reply.content or None}
    if reply.tool_calls:
        message["tool_calls"] = [
            {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}}
            for c in reply.tool_calls
        ]
    return {
        "id": f"chatcmpl-{uuid.uuid4().hex[:24]}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [{"index": 0, "message": message, "finish_reason": reply.finish_reason}],
        "usage": {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion},
    }
