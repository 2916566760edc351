"""What one streamed model step gives the caller: `ModelReply`, or a `ModelError` a user understands.

Defined apart from the client so that the stream assembly (stream.py) and the client (client.py)
share them; import them from `agents.llm` (or `agents.llm.client`).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field


@dataclass(frozen=True)
class ToolCallRequest:
    id: str
    name: str
    arguments: str


@dataclass
class ModelReply:
    content: str = ""
    tool_calls: list[ToolCallRequest] = field(default_factory=list)
    prompt_tokens: int = 0
    completion_tokens: int = 0
    finish_reason: str | None = None
    reasoning: str = ""  # the model's thinking (`reasoning_content` deltas, `<think>` blocks): not in `content`
    tools_dropped: bool = False  # the server refused `tools`, so the request was sent again without them
    usage_estimated: bool = False  # the server sent no usage: the token counts are estimates (~4 chars a token)
    response_model: str = ""  # the model the server says answered (its chunks' "model"), for traces

    @property
    def truncated(self) -> bool:
        """The model stopped at its output token limit (`finish_reason == "length"`): the reply is
        complete as a stream, but the text (or a tool call's arguments) may end mid-way."""
        return self.finish_reason == "length"


class ModelError(Exception):
    """The model call failed; `str(exc)` is a message a user understands. `kind` classifies it
    ("timeout", "connection", "auth", "rate_limit", "config", "bad_request", "server", "malformed",
    "cut_off"); `partial` is the answer text received before a stream was cut off ("" otherwise)."""

    def __init__(self, message: str, *, kind: str, partial: str = "") -> None:
        super().__init__(message)
        self.kind = kind
        self.partial = partial


DeltaCallback = Callable[[str], Awaitable[None]]
RestartCallback = Callable[[], Awaitable[None]]
