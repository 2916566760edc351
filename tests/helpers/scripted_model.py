"""A scripted OpenAI-compatible model server for the tests.

`ScriptedModel` is an ASGI app serving `POST /v1/chat/completions` (streamed as Server-Sent Events
when the request says `"stream": true`, honouring `stream_options.include_usage`; a JSON body
otherwise) and `GET /v1/models`. Tests queue the exact replies the model gives, in order, and read
back what the client sent:

    model = ScriptedModel()
    model.reply(content="Let me look.", tool_calls=[("search", {"q": "x"})])
    model.error(429)                       # retried by the SDK at once (retry-after-ms: 1)
    model.delay(0.5); model.reply("late")  # waits before its first byte
    model.reply("slow", chunk_delay=0.05)  # sleeps between SSE chunks
    model.reply("Hi", reasoning="Greet.")  # quirks of real servers: see `reply`
    model.malformed()                      # a stream with a garbage event in it
    model.image(png_bytes)                 # the next POST /v1/images/generations answer
    model.image_error(500)                 # ... or an error from the Images API
    model.embedder = lambda text: [...]    # answers POST /v1/embeddings with each input's vector
    client = openai_client(model)          # real AsyncOpenAI, in-process, streaming
    ...
    model.requests / model.last_messages / model.last_tools / model.calls / model.image_requests
    model.embedding_requests

With nothing queued it answers 500 "ScriptedModel: no reply queued" (with `x-should-retry: false`,
so the SDK fails at once). Streams record their fate: `stream_finished` is set when a streamed reply
sent its last chunk, `stream_cancelled` (and `cancellations`) when one was abandoned half-way, by
the client closing it or the app task being cancelled. These are asyncio Events: make one
ScriptedModel per test (a fixture), not one per module.

`serve_on_loopback(app)` / `loopback_server(app)` run any ASGI app with uvicorn on 127.0.0.1 for
tests of code that talks to models over real HTTP.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import socket
import struct
import time
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import httpx2
import openai
import uvicorn

from agents.llm.protocol import (
    PlannedReply,
    PlannedToolCall,
    WireQuirks,
    completion_body,
    prompt_token_estimate,
    read_body,
    sse_chunks,
)
from agents.llm.transport import StreamingASGITransport

__all__ = ["PlannedReply", "PlannedToolCall", "ScriptedModel", "loopback_server", "openai_client", "serve_on_loopback"]

ToolCallSpec = tuple[str, dict | list | str] | PlannedToolCall

# OpenAI's error "type" and "code" for the statuses tests use.
_ERROR_KINDS: dict[int, tuple[str, str | None]] = {
    400: ("invalid_request_error", None),
    401: ("invalid_request_error", "invalid_api_key"),
    403: ("permission_error", None),
    404: ("invalid_request_error", "model_not_found"),
    408: ("timeout", None),
    429: ("requests", "rate_limit_exceeded"),
}
_RETRYABLE = {408, 409, 429}


@dataclass
class _Reply:
    reply: PlannedReply
    chunk_delay: float = 0.0
    delay: float = 0.0
    quirks: WireQuirks = field(default_factory=WireQuirks)
    reject_tools: bool = False
    reject_stream_options: bool = False
    paced: bool = False

    def refusal(self, request: dict) -> dict | None:
        """The HTTP 400 body for a request this reply's server refuses, or None."""
        if self.reject_tools and request.get("tools"):
            return _error_body("This model does not support tools")
        if self.reject_stream_options and "stream_options" in request:
            return _error_body("Unrecognized request argument supplied: stream_options")
        return None


@dataclass
class _Error:
    status: int
    body: dict
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0


@dataclass
class _Malformed:
    kind: str
    delay: float = 0.0


class _Disconnected(Exception):
    pass


def _error_body(message: str, type: str = "invalid_request_error") -> dict:
    """An error response body in OpenAI's shape."""
    return {"error": {"message": message, "type": type, "param": None, "code": None}}


def _tool_call(spec: ToolCallSpec) -> PlannedToolCall:
    if isinstance(spec, PlannedToolCall):
        return spec
    name, arguments = spec
    return PlannedToolCall(name=name, arguments=arguments if isinstance(arguments, str) else json.dumps(arguments))


class ScriptedModel:
    """An ASGI app answering Chat Completions with the replies queued by the test, in order."""

    def __init__(self, model_name: str = "scripted-model") -> None:
        self.model_name = model_name
        self.requests: list[dict] = []  # parsed JSON bodies of the chat completion requests, in order
        self.requested = asyncio.Event()  # a chat completion request arrived
        self.stream_finished = asyncio.Event()
        self.stream_cancelled = asyncio.Event()
        self.cancellations = 0
        self.stream_seconds: list[float] = []  # how long each completed stream took, first chunk to last
        self._queue: deque[_Reply | _Error | _Malformed] = deque()
        self.image_requests: list[dict] = []  # parsed JSON bodies of Images API requests
        self._images: deque[bytes | _Error] = deque()
        self._next_delay = 0.0
        # POST /v1/embeddings: each input's vector (float or base64 float32, as the request asks);
        # None answers 500, as a server without an embedding model does.
        self.embedder: Callable[[str], list[float]] | None = None
        self.embedding_requests: list[dict] = []  # parsed JSON bodies of the embeddings requests

    # -- scripting --------------------------------------------------------------------------
    def reply(
        self,
        content: str = "",
        tool_calls: list[ToolCallSpec] | None = None,
        *,
        prompt_tokens: int | None = None,
        completion_tokens: int | None = None,
        chunk_delay: float = 0.0,
        paced: bool = False,
        reasoning: str = "",
        finish_reason: str | None = None,
        pieces: list[str] | None = None,
        reject_tools: bool = False,
        reject_stream_options: bool = False,
        cut_off: bool = False,
        no_usage: bool = False,
        index0_parallel: bool = False,
        no_ids: bool = False,
        odd_split: bool = False,
    ) -> PlannedReply:
        """Queue one reply; returns it (its tool calls carry their ids). Quirks of real servers:

        - `reasoning`: sent first, as `reasoning_content` deltas (DeepSeek, llama.cpp, vLLM);
        - `finish_reason`: sent instead of "tool_calls" / "stop" (e.g. "length");
        - `paced=True`: chunk i goes `i * chunk_delay` after the first, as a model server streams at
          its own pace (without it each delay is counted from the chunk before, so a busy loop here
          stretches the reply: 2.1 s became 2.6 s with 100 streams and their clients in one process);
        - `pieces`: the exact text deltas (the content is their concatenation), e.g. to split a
          `<think>` tag across chunks;
        - `reject_tools`: while the request offers tools, answer HTTP 400 "This model does not
          support tools" and keep this reply queued (a request without tools gets it);
        - `reject_stream_options`: the same for a request with `stream_options` (HTTP 400
          "Unrecognized request argument supplied: stream_options");
        - `cut_off=True`: the stream ends without finish reason, usage or `[DONE]`;
        - `no_usage=True`: no usage chunk, even when asked for;
        - `index0_parallel=True`: every tool call is sent with `index: 0` (told apart by its id);
        - `no_ids=True`: tool calls carry no id;
        - `odd_split=True`: each tool call as an id-only delta, a name-only delta and arguments a
          few characters at a time, the calls interleaved (see `agents.llm.protocol.WireQuirks`).
        """
        if pieces is not None:
            assert not content, "give the content either whole or in pieces"
            content = "".join(pieces)
        planned = PlannedReply(
            content=content,
            tool_calls=[_tool_call(t) for t in tool_calls or []],
            prompt_tokens=prompt_tokens,
            completion_tokens=completion_tokens,
            reasoning=reasoning,
            finish=finish_reason,
        )
        wire = WireQuirks(
            cut_off=cut_off,
            no_usage=no_usage,
            index0_parallel=index0_parallel,
            no_ids=no_ids,
            odd_split=odd_split,
            content_pieces=tuple(pieces) if pieces is not None else None,
        )
        queued = _Reply(planned, chunk_delay, self._take_delay(), wire, reject_tools, reject_stream_options, paced)
        self._queue.append(queued)
        return planned

    def error(
        self,
        status: int,
        message: str = "",
        headers: dict[str, str] | None = None,
        *,
        type: str | None = None,
        code: str | None = None,
    ) -> None:
        """Queue an HTTP error in OpenAI's JSON shape. Retryable statuses (408, 409, 429, 5xx) get
        `retry-after: 0` and `retry-after-ms: 1` unless `headers` is given: the SDK ignores a
        zero `retry-after` and would back off for ~0.5 s, but honours 1 ms."""
        default_type, default_code = _ERROR_KINDS.get(status, ("server_error" if status >= 500 else "api_error", None))
        body = _error_body(message or f"ScriptedModel error {status}", type or default_type)
        body["error"]["code"] = code if code is not None else default_code
        if headers is None:
            headers = {"retry-after": "0", "retry-after-ms": "1"} if status in _RETRYABLE or status >= 500 else {}
        self._queue.append(_Error(status, body, headers, delay=self._take_delay()))

    def image(self, png: bytes) -> None:
        """Queue the next Images API answer: `png` returned as `b64_json`."""
        self._images.append(png)

    def image_error(self, status: int, message: str = "") -> None:
        """Queue an Images API error (not retried: `x-should-retry: false`)."""
        body = _error_body(message or f"ScriptedModel image error {status}", "server_error")
        self._images.append(_Error(status, body, {"x-should-retry": "false"}))

    def delay(self, seconds: float) -> None:
        """Make the NEXT queued reply (or error) wait `seconds` before its first byte."""
        self._next_delay = seconds

    def malformed(self, kind: str = "garbage") -> None:
        """Queue a broken response. "garbage": a valid first chunk, then an event whose data is not
        JSON (the SDK raises while iterating); "truncated": a content chunk, then half a chunk and
        the end of the stream, without finish reason or `[DONE]` (the SDK drops the half chunk, so
        `LLMClient` sees a cut-off stream). A non-streaming request gets a
        truncated JSON body either way."""
        if kind not in ("garbage", "truncated"):
            raise ValueError(f"unknown malformed kind {kind!r}")
        self._queue.append(_Malformed(kind, delay=self._take_delay()))

    def _take_delay(self) -> float:
        delay, self._next_delay = self._next_delay, 0.0
        return delay

    def clear(self) -> None:
        """Drop the queued replies that were not consumed (a test that reuses the model)."""
        self._queue.clear()

    # -- inspection -------------------------------------------------------------------------
    @property
    def calls(self) -> int:
        return len(self.requests)

    @property
    def pending(self) -> int:
        """Queued replies not consumed yet."""
        return len(self._queue)

    @property
    def last_request(self) -> dict:
        assert self.requests, "ScriptedModel received no chat completion request"
        return self.requests[-1]

    @property
    def last_messages(self) -> list[dict]:
        return self.last_request.get("messages", [])

    @property
    def last_tools(self) -> list[str]:
        """Names of the tools offered in the last request."""
        return [t.get("function", {}).get("name") for t in self.last_request.get("tools") or []]

    # -- ASGI -------------------------------------------------------------------------------
    async def __call__(
        self, scope: dict, receive: Callable[[], Awaitable[dict]], send: Callable[[dict], Awaitable[None]]
    ) -> None:
        if scope["type"] == "lifespan":
            while True:
                message = await receive()
                kind = message["type"].rsplit(".", 1)[-1]  # startup / shutdown
                await send({"type": f"lifespan.{kind}.complete"})
                if kind == "shutdown":
                    return
        if scope["type"] != "http":
            return
        body = await read_body(receive)
        if body is None:
            return
        path, method = scope["path"].rstrip("/"), scope["method"]
        if method == "GET" and path.endswith("/models"):
            return await self._json(
                send,
                200,
                {
                    "object": "list",
                    "data": [{"id": self.model_name, "object": "model", "created": 0, "owned_by": "scripted"}],
                },
            )
        if method == "POST" and path.endswith("/images/generations"):
            return await self._image(json.loads(body or b"{}"), send)
        if method == "POST" and path.endswith("/embeddings"):
            return await self._embeddings(json.loads(body or b"{}"), send)
        if method != "POST" or not path.endswith("/chat/completions"):
            return await self._json(send, 404, _error_body(f"ScriptedModel: no route {method} {scope['path']}"))
        try:
            request = json.loads(body)
        except ValueError:
            return await self._json(send, 400, _error_body("ScriptedModel: body is not JSON"))
        self.requests.append(request)
        self.requested.set()
        await self._complete(request, receive, send)

    async def _image(self, request: dict, send) -> None:
        self.image_requests.append(request)
        if not self._images:
            body = _error_body("ScriptedModel: no image queued", "server_error")
            return await self._json(send, 500, body, {"x-should-retry": "false"})
        planned = self._images.popleft()
        if isinstance(planned, _Error):
            return await self._json(send, planned.status, planned.body, planned.headers)
        await self._json(send, 200, {"created": 0, "data": [{"b64_json": base64.b64encode(planned).decode()}]})

    async def _embeddings(self, request: dict, send) -> None:
        self.embedding_requests.append(request)
        if self.embedder is None:
            body = _error_body("ScriptedModel: no embedding model", "server_error")
            return await self._json(send, 500, body, {"x-should-retry": "false"})
        texts = request.get("input")
        texts = [texts] if isinstance(texts, str) else list(texts or [])
        data = []
        for index, text in enumerate(texts):
            vector = [float(v) for v in self.embedder(text)]
            if request.get("encoding_format") == "base64":  # the openai SDK's default: float32, little-endian
                encoded: Any = base64.b64encode(struct.pack(f"<{len(vector)}f", *vector)).decode()
            else:
                encoded = vector
            data.append({"object": "embedding", "index": index, "embedding": encoded})
        tokens = sum(len(str(t).split()) for t in texts)
        usage = {"prompt_tokens": tokens, "total_tokens": tokens}
        await self._json(send, 200, {"object": "list", "data": data, "model": request.get("model"), "usage": usage})

    async def _complete(self, request: dict, receive, send) -> None:
        if not self._queue:
            body = _error_body("ScriptedModel: no reply queued", "server_error")
            return await self._json(send, 500, body, {"x-should-retry": "false"})
        refusal = self._queue[0].refusal(request) if isinstance(self._queue[0], _Reply) else None
        if refusal is not None:  # the reply stays queued for the request without the refused option
            return await self._json(send, 400, refusal)
        planned = self._queue.popleft()
        if planned.delay:
            await asyncio.sleep(planned.delay)
        if isinstance(planned, _Error):
            return await self._json(send, planned.status, planned.body, planned.headers)
        model = request.get("model") or self.model_name
        streaming = bool(request.get("stream"))
        if isinstance(planned, _Malformed):
            if not streaming:
                return await self._raw(send, 200, b'{"id": "chatcmpl-broken", "object": "chat.comp', "application/json")
            first = (
                f'data: {{"id": "chatcmpl-broken", "object": "chat.completion.chunk", "created": 0, '
                f'"model": "{model}", "choices": [{{"index": 0, "delta": {{"role": "assistant", '
                f'"content": "Hal"}}, "finish_reason": null}}]}}\n\n'
            )
            tail = "data: {this is not json\n\n" if planned.kind == "garbage" else first[: len(first) // 2]
            return await self._stream(send, receive, [first, tail], 0.0, complete=False)
        prompt_tokens = prompt_token_estimate(request.get("messages") or [], request.get("tools"))
        if not streaming:
            return await self._json(send, 200, completion_body(planned.reply, model=model, prompt_tokens=prompt_tokens))
        include_usage = bool((request.get("stream_options") or {}).get("include_usage"))
        chunks = sse_chunks(
            planned.reply, model=model, prompt_tokens=prompt_tokens, include_usage=include_usage, quirks=planned.quirks
        )
        await self._stream(
            send, receive, chunks, planned.chunk_delay, complete=not planned.quirks.cut_off, paced=planned.paced
        )

    async def _stream(
        self, send, receive, chunks, chunk_delay: float, complete: bool = True, paced: bool = False
    ) -> None:
        """Send SSE chunks, watching for the client leaving (uvicorn does not cancel the app when
        a connection drops; it answers `receive()` with `http.disconnect`)."""
        await send(
            {
                "type": "http.response.start",
                "status": 200,
                "headers": [(b"content-type", b"text/event-stream; charset=utf-8"), (b"cache-control", b"no-cache")],
            }
        )
        watcher = asyncio.ensure_future(receive())  # resolves on http.disconnect only
        began = time.perf_counter()
        try:
            for index, chunk in enumerate(chunks):
                if index and chunk_delay:
                    due = began + index * chunk_delay if paced else time.perf_counter() + chunk_delay
                    await asyncio.wait({watcher}, timeout=max(0.0, due - time.perf_counter()))
                if watcher.done():
                    raise _Disconnected
                await send({"type": "http.response.body", "body": chunk.encode(), "more_body": True})
            await send({"type": "http.response.body", "body": b"", "more_body": False})
            self.stream_seconds.append(time.perf_counter() - began)
            if complete:
                self.stream_finished.set()
        except _Disconnected:  # the client left: stop quietly, as a real server would
            self._note_cancelled()
        except asyncio.CancelledError:
            self._note_cancelled()
            raise
        finally:
            watcher.cancel()

    def _note_cancelled(self) -> None:
        self.cancellations += 1
        self.stream_cancelled.set()

    @staticmethod
    async def _json(send, status: int, body: dict, headers: dict[str, str] | None = None) -> None:
        await ScriptedModel._raw(send, status, json.dumps(body).encode(), "application/json", headers)

    @staticmethod
    async def _raw(send, status: int, body: bytes, content_type: str, headers: dict[str, str] | None = None) -> None:
        raw_headers = [(b"content-type", content_type.encode()), (b"content-length", str(len(body)).encode())]
        raw_headers += [(k.lower().encode(), str(v).encode()) for k, v in (headers or {}).items()]
        await send({"type": "http.response.start", "status": status, "headers": raw_headers})
        await send({"type": "http.response.body", "body": body, "more_body": False})


def openai_client(app, **kw: Any) -> openai.AsyncOpenAI:
    """A real `AsyncOpenAI` talking to `app` in-process through `StreamingASGITransport`.
    `max_retries` (2), `timeout` (5 s, enforced by the transport), `base_url`, `api_key` and any
    other `AsyncOpenAI` argument can be overridden. Close it (`await client.close()`) after use."""
    base_url = kw.pop("base_url", "http://scripted.test/v1")
    http_client = httpx2.AsyncClient(transport=StreamingASGITransport(app), base_url=base_url)
    return openai.AsyncOpenAI(
        api_key=kw.pop("api_key", "test"),
        base_url=base_url,
        http_client=http_client,
        max_retries=kw.pop("max_retries", 2),
        timeout=kw.pop("timeout", 5),
        **kw,
    )


class _QuietServer(uvicorn.Server):
    def capture_signals(self):  # leave pytest's signal handlers alone
        return contextlib.nullcontext()


async def serve_on_loopback(app) -> tuple[str, Callable[[], Awaitable[None]]]:
    """Run `app` with uvicorn on 127.0.0.1 (a free port) in the running event loop. Returns the root
    URL (`http://127.0.0.1:PORT`, without `/v1`) and an async `stop()` to await afterwards."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    config = uvicorn.Config(
        app, lifespan="off", log_level="warning", access_log=False, http="h11", ws="none", timeout_graceful_shutdown=1
    )
    server = _QuietServer(config)
    task = asyncio.create_task(server.serve(sockets=[sock]), name=f"uvicorn 127.0.0.1:{port}")
    while not server.started:
        if task.done():
            sock.close()
            task.result()  # raises what stopped it
            raise RuntimeError("uvicorn stopped before it started")
        await asyncio.sleep(0.01)

    async def stop() -> None:
        server.should_exit = True
        try:
            await asyncio.wait_for(asyncio.shield(task), 5)
        except TimeoutError:
            server.force_exit = True
            task.cancel()
            await asyncio.wait({task})
        finally:
            sock.close()

    return f"http://127.0.0.1:{port}", stop


@contextlib.asynccontextmanager
async def loopback_server(app) -> AsyncIterator[str]:
    """`async with loopback_server(model) as url:` — `serve_on_loopback` as a context manager;
    point an OpenAI client at f"{url}/v1"."""
    url, stop = await serve_on_loopback(app)
    try:
        yield url
    finally:
        await stop()
