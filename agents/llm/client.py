"""The one place that talks to a model: the `openai` SDK's async client, streaming Chat Completions.

`OPENAI_API_KEY` / `OPENAI_BASE_URL` select any OpenAI-compatible server and `APTIX_LLM_MODEL` the
model (Django settings, read from the environment by aptix/settings.py). With neither set, the
built-in offline model (agents/llm/offline/) answers through the very same SDK code path, served
in-process by an ASGI app behind a streaming httpx transport (transport.py).
"""

from __future__ import annotations

import base64
import json
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, cast

import httpx2
import openai
from django.conf import settings
from openai.types.chat import ChatCompletionChunk, ChatCompletionMessageParam, ChatCompletionToolParam

from .transport import StreamingASGITransport

OFFLINE_LABEL = "offline"


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


class ModelError(Exception):
    """The model call failed; `str(exc)` is a message a user understands."""

    def __init__(self, message: str, *, kind: str) -> None:
        super().__init__(message)
        self.kind = kind


DeltaCallback = Callable[[str], Awaitable[None]]


class LLMClient:
    """Streams one model step. `label` is what the UI and API show ("offline" or the model name)."""

    def __init__(self, client: openai.AsyncOpenAI, *, model: str, label: str | None = None) -> None:
        self.client = client
        self.model = model
        self.label = label or model

    @property
    def is_offline(self) -> bool:
        return self.label == OFFLINE_LABEL

    async def generate_image(self, prompt: str, size: str) -> bytes:
        """PNG bytes from the provider's Images API (image_gen's remote backend)."""
        model = settings.APTIX_IMAGE_MODEL
        try:
            result = await self.client.images.generate(model=model, prompt=prompt, size=size, n=1)
        except openai.APIError as exc:
            raise _user_facing(exc, self) from exc
        data = result.data[0] if result.data else None
        if data is None or not data.b64_json:
            raise ModelError("The image provider returned no image data.", kind="malformed")
        return base64.b64decode(data.b64_json)

    async def stream_chat(
        self, *, messages: list[dict], tools: list[dict] | None, on_delta: DeltaCallback | None = None
    ) -> ModelReply:
        reply = ModelReply()
        calls: dict[int, dict[str, str]] = {}
        try:
            stream = await self.client.chat.completions.create(
                model=self.model,
                messages=cast("list[ChatCompletionMessageParam]", messages),
                tools=cast("list[ChatCompletionToolParam]", tools) or openai.omit,
                stream=True,
                stream_options={"include_usage": True},
            )
            async with stream:
                async for chunk in stream:
                    await _absorb_chunk(chunk, reply, calls, on_delta)
        except openai.APIError as exc:
            raise _user_facing(exc, self) from exc
        except (json.JSONDecodeError, ValueError, KeyError, TypeError, httpx2.HTTPError) as exc:
            raise ModelError(_MALFORMED, kind="malformed") from exc
        reply.tool_calls = [
            ToolCallRequest(id=slot["id"] or f"call_{index}", name=slot["name"], arguments=slot["arguments"])
            for index, slot in sorted(calls.items())
        ]
        if reply.tool_calls and any(not c.name for c in reply.tool_calls):
            raise ModelError("The model sent a tool call without a name (malformed stream).", kind="malformed")
        return reply


_MALFORMED = "The model's reply could not be read (malformed stream). Try again, or check the model server."


async def _absorb_chunk(
    chunk: ChatCompletionChunk, reply: ModelReply, calls: dict[int, dict[str, str]], on_delta: DeltaCallback | None
) -> None:
    """Add one stream chunk to `reply` (usage, text, finish reason) and `calls` (tool-call pieces by index)."""
    if chunk.usage is not None:
        reply.prompt_tokens = chunk.usage.prompt_tokens or 0
        reply.completion_tokens = chunk.usage.completion_tokens or 0
    for choice in chunk.choices:
        delta = choice.delta
        if delta is not None and delta.content:
            reply.content += delta.content
            if on_delta is not None:
                await on_delta(delta.content)
        for part in (delta.tool_calls or []) if delta is not None else []:
            slot = calls.setdefault(part.index, {"id": "", "name": "", "arguments": ""})
            if part.id:
                slot["id"] = part.id
            if part.function is not None:
                slot["name"] += part.function.name or ""
                slot["arguments"] += part.function.arguments or ""
        if choice.finish_reason:
            reply.finish_reason = choice.finish_reason


def _user_facing(exc: openai.APIError, client: LLMClient) -> ModelError:
    if isinstance(exc, openai.APITimeoutError):
        timeout = client.client.timeout
        seconds = getattr(timeout, "read", None) or timeout
        return ModelError(f"The model did not answer in time (timeout {seconds} s). Try again.", kind="timeout")
    if isinstance(exc, openai.APIConnectionError):
        where = "the built-in offline model" if client.is_offline else f"the model server ({client.client.base_url})"
        return ModelError(f"Could not reach {where}. Check OPENAI_BASE_URL and the network.", kind="connection")
    if isinstance(exc, openai.APIStatusError):
        return _status_error(exc, client)
    return ModelError(_MALFORMED, kind="malformed")


def _status_error(exc: openai.APIStatusError, client: LLMClient) -> ModelError:
    """The message for an HTTP error status the SDK gave up on (after its retries)."""
    if isinstance(exc, openai.AuthenticationError):
        return ModelError("The model provider rejected the credentials (HTTP 401). Check OPENAI_API_KEY.", kind="auth")
    if isinstance(exc, openai.PermissionDeniedError):
        return ModelError("The model provider refused access to this model (HTTP 403).", kind="auth")
    if isinstance(exc, openai.RateLimitError):
        return ModelError(
            "The model provider is rate-limiting requests (HTTP 429) and retries did not help. "
            "Wait a moment and try again.",
            kind="rate_limit",
        )
    if isinstance(exc, openai.NotFoundError):
        return ModelError(f"The model '{client.model}' was not found (HTTP 404). Check APTIX_LLM_MODEL.", kind="config")
    if isinstance(exc, openai.BadRequestError):
        detail = getattr(exc, "message", "") or ""
        return ModelError(f"The model server refused the request (HTTP 400): {detail[:300]}", kind="bad_request")
    return ModelError(
        f"The model server had an error (HTTP {exc.status_code}) and retries did not help. Try again later.",
        kind="server",
    )


def build_llm_client() -> LLMClient:
    """A client for the configured provider, or the built-in offline model."""
    api_key = settings.OPENAI_API_KEY or None
    base_url = settings.OPENAI_BASE_URL or None
    if api_key or base_url:
        model = settings.APTIX_LLM_MODEL or "gpt-4o-mini"
        client = openai.AsyncOpenAI(
            api_key=api_key or "not-needed",  # local servers (Ollama, vLLM) accept any key
            base_url=base_url,
            timeout=settings.APTIX_LLM_TIMEOUT,
            max_retries=settings.APTIX_LLM_MAX_RETRIES,
        )
        return LLMClient(client, model=model)

    from .offline.app import OFFLINE_MODEL_NAME, OfflineModelApp  # loaded only when it serves

    base = "http://offline.aptix.invalid/v1"
    client = openai.AsyncOpenAI(
        api_key="offline",
        base_url=base,
        timeout=settings.APTIX_LLM_TIMEOUT,
        max_retries=0,
        http_client=httpx2.AsyncClient(transport=StreamingASGITransport(OfflineModelApp()), base_url=base),
    )
    return LLMClient(client, model=OFFLINE_MODEL_NAME, label=OFFLINE_LABEL)


@dataclass
class _Clients:
    built: LLMClient | None = None  # the configured provider's client, built on first use
    override: LLMClient | None = None  # use_llm_client's


_clients = _Clients()


def get_llm_client() -> LLMClient:
    """The client every model call uses: `use_llm_client`'s if set, else the configured provider's."""
    if _clients.override is not None:
        return _clients.override
    if _clients.built is None:
        _clients.built = build_llm_client()
    return _clients.built


@contextmanager
def use_llm_client(client: LLMClient) -> Iterator[LLMClient]:
    """Point every model call at `client` (tests: a scripted model over the same protocol)."""
    previous, _clients.override = _clients.override, client
    try:
        yield client
    finally:
        _clients.override = previous


def describe_provider() -> dict[str, Any]:
    """What the UI and API show about the model: its label, name and whether it is the offline one."""
    client = get_llm_client()
    return {"label": client.label, "model": client.model, "offline": client.is_offline}
