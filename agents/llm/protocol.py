"""The wire format of OpenAI Chat Completions streaming, for the model servers we run ourselves
(the built-in offline model and the scripted model of the tests).

`read_body` reads a request's body for them. A reply is described as a `PlannedReply` (text and/or
tool calls plus usage); `sse_chunks` turns it into the `data: {...}\\n\\n` lines a real server
streams: reasoning (if any) as `reasoning_content` deltas, the text in small deltas, each tool call
as a first delta with id and name and then its arguments in pieces, a final chunk with the finish
reason, a usage chunk (when the client asked for `stream_options.include_usage`) and `data: [DONE]`.
`WireQuirks` make it misbehave the way some real servers do (for the tests of the client).
"""

from __future__ import annotations

import json
import re
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
    reasoning: str = ""  # sent as `reasoning_content` deltas before the text (DeepSeek / vLLM style)
    finish: str | None = None  # the finish reason to send instead of "tool_calls" / "stop" (e.g. "length")

    @property
    def finish_reason(self) -> str:
        return self.finish or ("tool_calls" if self.tool_calls else "stop")


@dataclass(frozen=True)
class WireQuirks:
    """How a stream departs from what OpenAI sends, as some OpenAI-compatible servers do.

    `cut_off`: the stream ends after the text and tool calls, without finish reason, usage or
    `[DONE]`. `no_usage`: no usage chunk even when asked for. `index0_parallel`: every tool call
    arrives with `index: 0` (told apart only by their ids). `no_ids`: tool calls carry no id.
    `odd_split`: each tool call is sent as an id-only delta, a name-only delta and its arguments a
    few characters at a time, the calls interleaved (unless `index0_parallel`). `content_pieces`:
    the exact text deltas to send (default: the text split at words, about 12 characters each).
    """

    cut_off: bool = False
    no_usage: bool = False
    index0_parallel: bool = False
    no_ids: bool = False
    odd_split: bool = False
    content_pieces: tuple[str, ...] | None = None


NO_QUIRKS = WireQuirks()


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


_WORDS = re.compile(r"^\s+|\S+\s*")  # leading whitespace, then each word with the whitespace after it


def split_text(text: str, size: int = 12) -> list[str]:
    """Split text into word-aligned pieces of about `size` characters, like token deltas. The pieces
    join back to the text exactly: runs of spaces (a code block's indentation) and line breaks stay."""
    pieces: list[str] = []
    current = ""
    for token in _WORDS.findall(text):
        if current and len(current) + len(token) > size:
            pieces.append(current)
            current = token
        else:
            current += token
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


def _tool_call_deltas(calls: list[PlannedToolCall], quirks: WireQuirks) -> Iterator[dict]:
    """The `tool_calls` entries of the deltas that stream `calls`, one entry a delta."""
    per_call: list[list[dict]] = []
    for position, call in enumerate(calls):
        index = 0 if quirks.index0_parallel else position
        ident = {} if quirks.no_ids else {"id": call.id}
        args, size = call.arguments, 3 if quirks.odd_split else 40
        pieces = [{"index": index, "function": {"arguments": args[i : i + size]}} for i in range(0, len(args), size)]
        if quirks.odd_split:
            head = [{"index": index, **ident, "type": "function"}] if ident else []
            head.append({"index": index, "function": {"name": call.name}})
        else:
            head = [{"index": index, **ident, "type": "function", "function": {"name": call.name, "arguments": ""}}]
        per_call.append(head + pieces)
    if quirks.odd_split and not quirks.index0_parallel:  # interleave: one delta of each call in turn
        longest = max((len(parts) for parts in per_call), default=0)
        per_call = [[parts[i] for parts in per_call if i < len(parts)] for i in range(longest)]
    for parts in per_call:
        yield from parts


def sse_chunks(
    reply: PlannedReply,
    *,
    model: str,
    prompt_tokens: int,
    include_usage: bool,
    piece_size: int = 12,
    quirks: WireQuirks = NO_QUIRKS,
) -> Iterator[str]:
    completion_id = f"chatcmpl-{uuid.uuid4().hex[:24]}"
    created = int(time.time())

    def chunk(delta: dict | None, **kw: Any) -> str:
        return _chunk(completion_id, model, created, delta, **kw)

    yield chunk({"role": "assistant", "content": ""})
    for piece in split_text(reply.reasoning, piece_size):
        yield chunk({"reasoning_content": piece})
    for piece in quirks.content_pieces or split_text(reply.content, piece_size):
        yield chunk({"content": piece})
    for part in _tool_call_deltas(reply.tool_calls, quirks):
        yield chunk({"tool_calls": [part]})
    if quirks.cut_off:
        return
    yield chunk({}, finish=reply.finish_reason)
    if include_usage and not quirks.no_usage:
        completion = reply.completion_tokens
        if completion is None:
            completion = estimate_tokens(reply.reasoning + reply.content) + sum(
                estimate_tokens(c.name + c.arguments) for c in reply.tool_calls
            )
        prompt = reply.prompt_tokens if reply.prompt_tokens is not None else prompt_tokens
        usage = {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}
        yield chunk(None, usage=usage)
    yield "data: [DONE]\n\n"


def completion_body(reply: PlannedReply, *, model: str, prompt_tokens: int) -> dict:
    """The non-streaming response body for the same reply."""
    completion = reply.completion_tokens if reply.completion_tokens is not None else estimate_tokens(reply.content)
    prompt = reply.prompt_tokens if reply.prompt_tokens is not None else prompt_tokens
    message: dict[str, Any] = {"role": "assistant", "content": reply.content or None}
    if reply.reasoning:
        message["reasoning_content"] = reply.reasoning
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
