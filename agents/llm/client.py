"""The one place that talks to a model: the `openai` SDK's async client, streaming Chat Completions.

`OPENAI_API_KEY` / `OPENAI_BASE_URL` select any OpenAI-compatible server and `APTIX_LLM_MODEL` the
model (Django settings, read from the environment by aptix/settings.py). With neither set, the
built-in offline model (agents/llm/offline/) answers through the very same SDK code path, served
in-process by an ASGI app behind a streaming httpx transport (transport.py).
"""

from __future__ import annotations

import base64
import json
import re
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import httpx2
import openai
from django.conf import settings

from .catalog import ModelSpec, model_for, reset_models_config, sdk_client
from .images import with_images
from .reply import DeltaCallback, ModelError, ModelReply, RestartCallback
from .spans import chat_span, record_reply
from .stream import StreamAssembler, StreamError, estimate_usage, sse_events
from .transport import StreamingASGITransport

OFFLINE_LABEL = "offline"


class LLMClient:
    """Streams one model step. `label` is what the UI and API show ("offline" or the model name)."""

    def __init__(
        self,
        client: openai.AsyncOpenAI,
        *,
        model: str,
        label: str | None = None,
        context_tokens: int | None = None,
        supports_tools: bool = True,
        vision: bool = False,
        temperature: float | None = None,
    ) -> None:
        self.client = client
        self.model = model
        self.label = label or model
        self.context_tokens = context_tokens  # None: APTIX_CONTEXT_TOKENS
        self.supports_tools = supports_tools
        self.vision = vision  # sees images of tool results (images.py)
        self.temperature = temperature  # None: the server's default

    @property
    def is_offline(self) -> bool:
        return self.label == OFFLINE_LABEL

    async def generate_image(self, prompt: str, size: str) -> bytes:
        """PNG bytes from the provider's Images API (image_gen's remote backend)."""
        model = settings.APTIX_IMAGE_MODEL
        try:
            result = await self.client.images.generate(model=model, prompt=prompt, size=size, n=1)
        except openai.NotFoundError as exc:  # not the chat model's 404: the image model or the endpoint
            raise ModelError(
                f"The image provider ({self.client.base_url}) has no image model '{model}' or no Images API "
                "(HTTP 404). Set APTIX_IMAGE_MODEL to a model it serves, or use a provider that draws images.",
                kind="config",
            ) from exc
        except openai.APIError as exc:
            raise _user_facing(exc, self) from exc
        data = result.data[0] if result.data else None
        if data is None or not data.b64_json:
            raise ModelError("The image provider returned no image data.", kind="malformed")
        return base64.b64decode(data.b64_json)

    async def stream_chat(
        self,
        *,
        messages: list[dict],
        tools: list[dict] | None,
        on_delta: DeltaCallback | None = None,
        on_reasoning: DeltaCallback | None = None,
        on_restart: RestartCallback | None = None,
        max_tokens: int | None = None,
    ) -> ModelReply:
        """Stream one model step (a reply of at most `max_tokens`, when given, within the room kept
        for a reply): the answer's text goes to `on_delta` and the model's reasoning to
        `on_reasoning` as they arrive. A server that refuses `tools` or `stream_options` (HTTP 400)
        is asked again without them (`reply.tools_dropped`; `reply.usage_estimated` when no usage
        came). A stream that ends without a finish reason is requested once more, `on_restart`
        awaited first (what `on_delta` got so far is void); cut off again, it raises
        `ModelError(kind="cut_off")` with the text received in `exc.partial`. Traced as `chat <model>`
        (spans.py) when tracing is on."""
        with chat_span(self.model, self.client.base_url, messages) as span:
            reply = await self._stream_chat(messages, tools, on_delta, on_reasoning, on_restart, max_tokens=max_tokens)
            record_reply(span, reply)
        return reply

    async def _stream_chat(
        self,
        messages: list[dict],
        tools: list[dict] | None,
        on_delta: DeltaCallback | None,
        on_reasoning: DeltaCallback | None,
        on_restart: RestartCallback | None,
        *,
        max_tokens: int | None = None,
    ) -> ModelReply:
        room = reply_tokens(self.context_tokens)
        request = _Request(
            messages=await with_images(messages, vision=self.vision),
            tools=tools or None,
            max_tokens=min(max_tokens, room) if max_tokens else room,
            temperature=self.temperature,
        )
        restarted = False
        while True:
            stream = StreamAssembler(on_delta=on_delta, on_reasoning=on_reasoning)
            try:
                await self._stream_once(request, stream)
            except openai.BadRequestError as exc:
                if request.drop_refused(exc):
                    continue
                raise _user_facing(exc, self) from exc
            if stream.finished:
                break
            if restarted:
                raise ModelError(_CUT_OFF, kind="cut_off", partial=stream.reply.content)
            restarted = True
            if on_restart is not None:
                await on_restart()
        reply = stream.reply
        if reply.tool_calls and any(not c.name for c in reply.tool_calls):
            raise ModelError("The model sent a tool call without a name (malformed stream).", kind="malformed")
        reply.tools_dropped = request.tools_dropped
        if not stream.saw_usage:
            estimate_usage(reply, messages, request.tools)
        return reply

    async def _stream_once(self, request: _Request, stream: StreamAssembler) -> None:
        """Send the request and feed its stream to `stream`. A 400 is raised as is (the caller may
        drop what the server refused and retry); other failures as a `ModelError`.

        The SDK sends the request (auth, retries, base URL, error statuses) and hands over the raw
        streaming response; its Server-Sent Events are read here from the body's bytes with plain
        `json.loads` (stream.py), without the SDK's line decoding and typed chunk objects.

        The messages and tools go in `extra_body` (sent as given, taking precedence over the typed
        arguments): the SDK otherwise walks every message and schema against its parameter types to
        rename aliased keys, which the Chat Completions parameters do not have, at about half a
        millisecond of the event loop a request — twenty turns starting at once delayed every first
        token by their sum."""
        try:
            async with self.client.chat.completions.with_streaming_response.create(
                model=self.model,
                messages=[],  # the request's messages: in extra_body
                stream=True,
                stream_options={"include_usage": True} if request.stream_options else openai.omit,
                extra_body=request.body(),
            ) as response:
                try:
                    async for data in sse_events(response.http_response.aiter_bytes()):
                        await stream.absorb(json.loads(data))
                except httpx2.TimeoutException as exc:  # as the SDK's own stream reports them
                    raise openai.APITimeoutError(request=response.http_request) from exc
                except httpx2.RequestError as exc:
                    raise openai.APIConnectionError(request=response.http_request) from exc
        except openai.BadRequestError:
            raise
        except openai.APIError as exc:
            raise _user_facing(exc, self) from exc
        except StreamError as exc:
            raise ModelError(f"The model server reported an error mid-answer: {str(exc)[:300]}", kind="server") from exc
        except (ValueError, KeyError, TypeError, httpx2.HTTPError) as exc:  # json.JSONDecodeError is a ValueError
            raise ModelError(_MALFORMED, kind="malformed") from exc
        await stream.close()


_MALFORMED = "The model's reply could not be read (malformed stream). Try again, or check the model server."
_CUT_OFF = "The model's answer was cut off before it finished. Try again."

# HTTP 400 messages of servers that cannot take `tools`: Ollama ("... does not support tools"),
# OpenAI ("Unsupported parameter: 'tools'"), vLLM without a tool parser ("... requires
# --enable-auto-tool-choice ..."), llama.cpp without --jinja ("tools param requires --jinja flag")
# and the like ("tools is not supported", "tool use is not supported").
_TOOLS_REFUSED = re.compile(
    r"(does\s*n[o']t|do\s*n[o']t|cannot|can't)\s+(support|use|accept)\s+"
    r"(tools?|tool[ _-]?(use|calls?|calling)|function)"
    r"|\b(tools?|tool[ _-]?(use|calls?|calling|choice)|function[ _-]?call(s|ing)?)(\s+param(eter)?s?)?"
    r"(\s+(is|are))?\s+(not\s+|un)supported"
    r"|unsupported\s+(parameter|argument|field)s?\W+tools"
    r"|enable-auto-tool-choice|tools\s+param(eter)?\s+requires"
)
# ... and of those that cannot take `stream_options` (or its `include_usage`).
_STREAM_OPTIONS_REFUSED = re.compile(r"stream_options|include_usage")


def reply_tokens(context_tokens: int | None = None) -> int:
    """The room kept for a reply in a model's context (default APTIX_CONTEXT_TOKENS): APTIX_REPLY_TOKENS,
    at most a quarter of the context. The request building leaves it free, and each request asks for
    no more (`max_tokens`): a small model that repeats itself stops there, with a truncated answer,
    instead of generating until its context is full (seen: 4,400 tokens at 5 tokens/s, a quarter of an
    hour, from Qwen2.5-Coder 1.5B on llama.cpp, which sets no limit of its own)."""
    total = context_tokens or settings.APTIX_CONTEXT_TOKENS
    return min(settings.APTIX_REPLY_TOKENS, total // 4)


@dataclass
class _Request:
    """What one model step sends, less what the server refused."""

    messages: list[dict]
    tools: list[dict] | None
    max_tokens: int | None = None
    temperature: float | None = None
    limit_key: str = "max_tokens"  # OpenAI's newer models take only "max_completion_tokens"
    stream_options: bool = True
    tools_dropped: bool = False

    def body(self) -> dict[str, Any]:
        """The messages, tools and reply limit, as the request body's JSON has them."""
        return {
            "messages": self.messages,
            **({"tools": self.tools} if self.tools else {}),
            **({self.limit_key: self.max_tokens} if self.max_tokens else {}),
            **({"temperature": self.temperature} if self.temperature is not None else {}),
        }

    def drop_refused(self, exc: openai.BadRequestError) -> bool:
        """Drop the option `exc` says the server refuses (`tools`, `stream_options`, the reply limit;
        each once; `max_tokens` is first sent again as `max_completion_tokens`, which OpenAI's reasoning
        models ask for). False when it is about something else."""
        text = f"{exc.message} {json.dumps(exc.body, default=str)}".lower()
        if self.tools and _TOOLS_REFUSED.search(text):
            self.tools, self.tools_dropped = None, True
            return True
        if self.stream_options and _STREAM_OPTIONS_REFUSED.search(text):
            self.stream_options = False
            return True
        if self.max_tokens and self.limit_key in text:
            if self.limit_key == "max_tokens":
                self.limit_key = "max_completion_tokens"
            else:
                self.max_tokens = None
            return True
        return False


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


def build_llm_client(spec: ModelSpec | None = None) -> LLMClient:
    """A client for `spec` (default: the configured default model), or the built-in offline model."""
    spec = spec or model_for()
    if spec.provider is not None:
        return LLMClient(
            sdk_client(spec),
            model=spec.model,
            label=spec.label,
            context_tokens=spec.context_tokens,
            supports_tools=spec.tools,
            vision=spec.vision,
            temperature=spec.temperature,
        )

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
    # per model key, built on first use, and again when models.json changed the model (catalog.py)
    built: dict[str, tuple[ModelSpec, LLMClient]] = field(default_factory=dict)
    override: LLMClient | None = None  # use_llm_client's


_clients = _Clients()


def get_llm_client(spec: ModelSpec | None = None) -> LLMClient:
    """The client a model call uses: `use_llm_client`'s if set, else `spec`'s (default: the default model)."""
    if _clients.override is not None:
        return _clients.override
    spec = spec or model_for()
    built = _clients.built.get(spec.key)
    if built is None or built[0] != spec:
        built = _clients.built[spec.key] = (spec, build_llm_client(spec))
    return built[1]


def reset_llm_clients() -> None:
    """Forget the clients built so far and read the models configuration again (after changing it)."""
    _clients.built.clear()
    reset_models_config()


@contextmanager
def use_llm_client(client: LLMClient) -> Iterator[LLMClient]:
    """Point every model call at `client` (tests: a scripted model over the same protocol)."""
    previous, _clients.override = _clients.override, client
    try:
        yield client
    finally:
        _clients.override = previous


def describe_provider(spec: ModelSpec | None = None) -> dict[str, Any]:
    """What the UI and API show about a model: its label, name and whether it is the offline one."""
    client = get_llm_client(spec)
    return {"label": client.label, "model": client.model, "offline": client.is_offline}
