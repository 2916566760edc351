"""Assembling one streamed Chat Completions reply from its chunks, as real servers send them.

Beyond what OpenAI sends, it copes with what OpenAI-compatible servers do:

- reasoning as `delta.reasoning_content` (DeepSeek, llama.cpp, vLLM) or `delta.reasoning` (Ollama,
  OpenRouter, newer vLLM), and as `<think>...</think>` blocks in the text (tags possibly split
  across deltas, a block possibly left open at the end): it goes to `ModelReply.reasoning` and
  `on_reasoning`, never to `content` or `on_delta`;
- parallel tool calls that all say `index: 0` (a new id at an index starts a new call; so does a
  different name once the call at that index has arguments), ids only on a call's first delta or
  not at all (missing or repeated ids become `call_<n>`, n the call's position), names and
  arguments in any number of pieces, a name repeated on every delta;
- no usage chunk: `estimate_usage` fills in estimated token counts;
- SSE comments (`: keep-alive`), `event:` lines, data split over several `data:` lines, and an
  error sent as a chunk mid-stream (`{"error": {...}}`, OpenRouter and vLLM do): `StreamError`.

Chunks are read as plain JSON (`sse_events` + `json.loads`), not as the SDK's pydantic chunk
objects, whose construction cost more than everything else a streamed token costs the process.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

from .protocol import estimate_tokens, prompt_token_estimate
from .reply import DeltaCallback, ModelReply, ToolCallRequest

THINK_OPEN, THINK_CLOSE = "<think>", "</think>"


class ThinkSplitter:
    """Splits streamed text into answer and reasoning at `<think>` / `</think>` tags. Text that
    may be the start of a tag is held back until the next piece (or `flush`) settles it."""

    def __init__(self) -> None:
        self.thinking = False
        self.seen_tag = False
        self._held = ""

    def feed(self, text: str) -> list[tuple[bool, str]]:
        """The (is_reasoning, text) pieces that `text` settles, in order."""
        buffer, pieces = self._held + text, []
        while True:
            tag = THINK_CLOSE if self.thinking else THINK_OPEN
            at = buffer.find(tag)
            if at < 0:
                break
            pieces.append((self.thinking, buffer[:at]))
            buffer = buffer[at + len(tag) :]
            self.thinking, self.seen_tag = not self.thinking, True
        keep = _partial_tag_length(buffer, tag)
        self._held = buffer[len(buffer) - keep :]
        pieces.append((self.thinking, buffer[: len(buffer) - keep]))
        return [(thinking, piece) for thinking, piece in pieces if piece]

    def flush(self) -> list[tuple[bool, str]]:
        """What is held back, at the end of the stream (an unclosed block is reasoning)."""
        held, self._held = self._held, ""
        return [(self.thinking, held)] if held else []


def _partial_tag_length(text: str, tag: str) -> int:
    """How many characters at the end of `text` could be the start of `tag`."""
    for size in range(min(len(tag) - 1, len(text)), 0, -1):
        if text.endswith(tag[:size]):
            return size
    return 0


@dataclass
class _CallSlot:
    id: str = ""
    name: str = ""
    arguments: str = ""


class ToolCallAssembler:
    """Tool calls from their streamed pieces (`delta.tool_calls` entries)."""

    def __init__(self) -> None:
        self.calls: list[_CallSlot] = []
        self._open: dict[int | None, _CallSlot] = {}  # the call each index currently continues

    def add(self, part: dict[str, Any]) -> None:
        index = part.get("index")  # some servers leave it out
        function = _mapping(part.get("function"))
        name = _text(function.get("name"))
        arguments = _text(function.get("arguments"))
        ident = _text(part.get("id"))
        slot = self._open.get(index)
        if slot is None or _starts_new_call(slot, ident, name):
            slot = self._open[index] = _CallSlot()
            self.calls.append(slot)
        if ident:
            slot.id = ident
        if name != slot.name:  # some servers repeat the whole name on every delta
            slot.name += name
        slot.arguments += arguments

    def requests(self) -> list[ToolCallRequest]:
        """The assembled calls, each with an id unique within the reply."""
        calls = [c for c in self.calls if c.id or c.name or c.arguments]
        given = {c.id for c in calls if c.id}
        used: set[str] = set()
        requests = []
        for position, call in enumerate(calls):
            ident = call.id
            if not ident or ident in used:
                ident, bump = f"call_{position}", 0
                while ident in given or ident in used:
                    bump += 1
                    ident = f"call_{position}_{bump}"
            used.add(ident)
            requests.append(ToolCallRequest(id=ident, name=call.name, arguments=call.arguments))
        return requests


def _starts_new_call(slot: _CallSlot, ident: str, name: str) -> bool:
    """Whether a piece at an index where `slot` is open begins another call (servers that send
    every parallel call with `index: 0`)."""
    if ident and slot.id:
        return ident != slot.id
    return bool(name and slot.name and slot.arguments and name != slot.name)


def _reasoning_text(delta: dict[str, Any]) -> str:
    """The delta's reasoning text (not in OpenAI's protocol: servers name it either way)."""
    for key in ("reasoning_content", "reasoning"):  # vLLM may send both, with the same text
        value = delta.get(key)
        if isinstance(value, str) and value:
            return value
    return ""


def _mapping(value: Any) -> dict[str, Any]:
    """A JSON object of the stream (`null` or absent: empty); anything else is a malformed stream."""
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise ValueError(f"expected a JSON object in the stream, got {type(value).__name__}")
    return value


def _text(value: Any) -> str:
    if value is None:
        return ""
    if not isinstance(value, str):
        raise ValueError(f"expected a string in the stream, got {type(value).__name__}")
    return value


def _count(value: Any) -> int:
    return value if isinstance(value, int) else 0


class StreamError(Exception):
    """The server sent an error inside the stream (`{"error": {"message": ...}}`) instead of a chunk."""

    def __init__(self, error: Any) -> None:
        message = error.get("message") if isinstance(error, dict) else error
        super().__init__(str(message or "an error occurred during streaming"))


async def sse_events(body: AsyncIterator[bytes]) -> AsyncIterator[bytes]:
    """The `data` of each Server-Sent Event in the response `body` (its bytes as they arrive), up to
    `[DONE]`. Lines end with LF, CRLF or CR (the SSE rules; a CRLF split between two reads is one line
    end); comments and `event:`/`id:`/`retry:` fields are skipped; several `data:` lines of one event
    are joined with newlines; an event not ended by a blank line when the body ends is dropped, as a
    half-received chunk. Bytes, not text: json.loads reads UTF-8 itself, and the layers of line and
    text decoding the SDK and httpx stack per chunk were a sixth of a worker's time at 100 streams."""
    pending = b""
    data: list[bytes] = []
    async for piece in body:
        pending += piece
        if b"\r" in pending:
            held = pending.endswith(b"\r")  # its LF may come with the next read
            pending = pending.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
            if held:
                pending = pending[:-1] + b"\r"
        *lines, pending = pending.split(b"\n")
        for line in lines:
            if not line:
                if data:
                    event = b"\n".join(data)
                    data = []
                    if event == b"[DONE]":
                        return
                    yield event
            elif line.startswith(b"data:"):
                value = line[5:]
                data.append(value[1:] if value.startswith(b" ") else value)


class StreamAssembler:
    """Builds a `ModelReply` from one stream's chunks, passing the answer's text to `on_delta`
    and the reasoning to `on_reasoning` as they arrive. Call `close` after the last chunk."""

    def __init__(self, *, on_delta: DeltaCallback | None, on_reasoning: DeltaCallback | None) -> None:
        self.reply = ModelReply()
        self.saw_usage = False
        self._on_delta = on_delta
        self._on_reasoning = on_reasoning
        self._think = ThinkSplitter()
        self._calls = ToolCallAssembler()

    @property
    def finished(self) -> bool:
        """Whether a finish reason arrived: without one the stream was cut off."""
        return self.reply.finish_reason is not None

    async def absorb(self, chunk: Any) -> None:
        """One chunk, as parsed JSON. Raises `StreamError` for an error chunk and ValueError for
        one that is not shaped like a chunk."""
        chunk = _mapping(chunk)
        if chunk.get("error"):
            raise StreamError(chunk["error"])
        if not self.reply.response_model and isinstance(model := chunk.get("model"), str):
            self.reply.response_model = model  # the first chunk's (each chunk repeats it)
        usage = chunk.get("usage")
        if usage is not None:
            usage = _mapping(usage)
            self.reply.prompt_tokens = _count(usage.get("prompt_tokens"))
            self.reply.completion_tokens = _count(usage.get("completion_tokens"))
            self.saw_usage = True
        for entry in chunk.get("choices") or []:
            choice = _mapping(entry)
            delta = choice.get("delta")
            if delta is not None:
                await self._absorb_delta(_mapping(delta))
            if choice.get("finish_reason"):
                self.reply.finish_reason = _text(choice["finish_reason"])

    async def _absorb_delta(self, delta: dict[str, Any]) -> None:
        reasoning = _reasoning_text(delta)
        if reasoning:
            await self._reason(reasoning)
        content = _text(delta.get("content"))
        if content:
            await self._text(self._think.feed(content))
        for part in delta.get("tool_calls") or []:
            self._calls.add(_mapping(part))

    async def close(self) -> ModelReply:
        """Settle the text held back and the tool calls; the reply so far."""
        await self._text(self._think.flush())
        self.reply.tool_calls = self._calls.requests()
        return self.reply

    async def _text(self, pieces: list[tuple[bool, str]]) -> None:
        for thinking, piece in pieces:
            await (self._reason(piece) if thinking else self._answer(piece))

    async def _reason(self, text: str) -> None:
        self.reply.reasoning += text
        if self._on_reasoning is not None:
            await self._on_reasoning(text)

    async def _answer(self, text: str) -> None:
        if self._think.seen_tag and not self.reply.content:
            text = text.lstrip()  # the blank line between a <think> block and the answer
            if not text:
                return
        self.reply.content += text
        if self._on_delta is not None:
            await self._on_delta(text)


def estimate_usage(reply: ModelReply, messages: list[dict], tools: list[dict] | None) -> None:
    """Fill in estimated token counts (about four characters a token, as protocol.estimate_tokens
    counts) for a server that sent no usage, and mark them as estimates."""
    reply.prompt_tokens = prompt_token_estimate(messages, tools)
    reply.completion_tokens = estimate_tokens(reply.reasoning + reply.content) + sum(
        estimate_tokens(call.name + call.arguments) for call in reply.tool_calls
    )
    reply.usage_estimated = True
