"""An httpx2 transport that calls an ASGI 3 app in-process and streams its response body.

httpx2's own `ASGITransport` runs the app to completion and buffers the whole body before
returning, so a client never sees token deltas as they are produced and cannot cancel a reply
half-way. `StreamingASGITransport` runs the app in its own asyncio task instead: the response is
returned as soon as the app sends `http.response.start`, its body yields chunks as the app sends
them, and closing the response (`await response.aclose()`, `await stream.close()` in the OpenAI
SDK) sends `http.disconnect` and cancels the app task if it is still running.

Errors: an exception the app raises before starting its response propagates from
`handle_async_request` (or gives an empty 500 with `raise_app_exceptions=False`); one raised
mid-body surfaces while reading as `httpx2.RemoteProtocolError` (what a client of a real server
sees when the connection drops), chained to the original. The request's `read` timeout (httpx2
puts it in `request.extensions["timeout"]`) is honoured for the response start and for each
chunk, raising `httpx2.ReadTimeout` like a network transport would.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable, MutableMapping
from typing import Any

import httpx2

Message = MutableMapping[str, Any]
ASGIApp = Callable[[Message, Callable[[], Awaitable[Message]], Callable[[Message], Awaitable[None]]], Awaitable[None]]
_END = object()  # queued after the last body chunk


async def _stop(task: asyncio.Task) -> None:
    """Cancel the app task if it still runs and wait until it has unwound."""
    if not task.done():
        task.cancel()
    await asyncio.wait({task})


class _StreamingBody(httpx2.AsyncByteStream):
    def __init__(
        self, chunks: asyncio.Queue, task: asyncio.Task, disconnected: asyncio.Event, read_timeout: float | None
    ) -> None:
        self._chunks, self._task, self._disconnected, self._timeout = chunks, task, disconnected, read_timeout

    async def __aiter__(self) -> AsyncIterator[bytes]:
        while True:
            # asyncio.timeout, not wait_for: on Python 3.11 wait_for returns the result and drops a
            # cancellation that arrives as a chunk does, so a stopped turn would stream on.
            try:
                async with asyncio.timeout(self._timeout):
                    item = await self._chunks.get()
            except TimeoutError:
                raise httpx2.ReadTimeout("ASGI app sent no body chunk within the read timeout") from None
            if item is _END:
                return
            if isinstance(item, BaseException):
                raise httpx2.RemoteProtocolError(f"ASGI app failed mid-response: {item!r}") from item
            yield item

    async def aclose(self) -> None:
        self._disconnected.set()
        await _stop(self._task)


class StreamingASGITransport(httpx2.AsyncBaseTransport):
    def __init__(
        self,
        app: ASGIApp,
        *,
        raise_app_exceptions: bool = True,
        client: tuple[str, int] = ("127.0.0.1", 123),
        root_path: str = "",
    ) -> None:
        self.app, self.raise_app_exceptions, self.client, self.root_path = app, raise_app_exceptions, client, root_path

    def _scope(self, request: httpx2.Request) -> dict[str, Any]:
        url = request.url
        return {
            "type": "http",
            "asgi": {"version": "3.0"},
            "http_version": "1.1",
            "scheme": url.scheme or "http",
            "method": request.method,
            "path": url.path,
            "raw_path": url.raw_path.split(b"?")[0],
            "query_string": url.query,
            "root_path": self.root_path,
            "headers": [(k.lower(), v) for k, v in request.headers.raw],
            "server": (url.host, url.port or (443 if url.scheme == "https" else 80)),
            "client": self.client,
        }

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        scope = self._scope(request)
        body = await request.aread()
        read_timeout = (request.extensions.get("timeout") or {}).get("read")
        exchange = _Exchange(body, request.method)
        task = asyncio.create_task(exchange.run(self.app, scope), name=f"asgi {request.method} {request.url.path}")
        task.add_done_callback(exchange.on_done)
        start = exchange.start
        try:
            async with asyncio.timeout(read_timeout):  # (not wait_for: see _StreamingBody)
                status, headers = await start
        except Exception as exc:
            await _stop(task)
            if isinstance(exc, TimeoutError) and start.cancelled():  # the timeout gave up, not the app
                raise httpx2.ReadTimeout(
                    "ASGI app did not start its response within the read timeout", request=request
                ) from None
            if self.raise_app_exceptions:
                raise
            return httpx2.Response(500, stream=httpx2.ByteStream(b""))
        except BaseException:  # the caller was cancelled: do not leave the app running
            start.cancel()
            task.cancel()
            raise
        return httpx2.Response(
            status, headers=headers, stream=_StreamingBody(exchange.chunks, task, exchange.disconnected, read_timeout)
        )


class _Exchange:
    """One request's traffic with the app: the body it receives, the response start and body chunks
    it sends, and how its task ended."""

    def __init__(self, body: bytes, method: str) -> None:
        self.body, self.method = body, method
        self.start: asyncio.Future = asyncio.get_running_loop().create_future()  # -> (status, headers)
        self.chunks: asyncio.Queue = asyncio.Queue()  # unbounded: the app never blocks on a slow reader
        self.disconnected = asyncio.Event()
        self.body_sent = False

    async def receive(self) -> Message:
        if not self.body_sent:
            self.body_sent = True
            return {"type": "http.request", "body": self.body, "more_body": False}
        await self.disconnected.wait()  # response complete or closed by the client
        return {"type": "http.disconnect"}

    async def send(self, message: Message) -> None:
        if message["type"] == "http.response.start" and not self.start.done():
            self.start.set_result((message["status"], message.get("headers", [])))
        elif message["type"] == "http.response.body" and not self.disconnected.is_set():
            if message.get("body") and self.method != "HEAD":
                self.chunks.put_nowait(bytes(message["body"]))
            if not message.get("more_body", False):
                self.chunks.put_nowait(_END)
                self.disconnected.set()

    async def run(self, app: ASGIApp, scope: Message) -> None:
        try:
            await app(scope, self.receive, self.send)
        except Exception as exc:  # noqa: BLE001 - handed to the caller by handle_async_request
            if not self.start.done():
                self.start.set_exception(exc)
            else:
                self.chunks.put_nowait(exc)

    def on_done(self, _: asyncio.Task) -> None:
        if not self.start.done():
            self.start.set_exception(RuntimeError("ASGI app ended without sending http.response.start"))
        self.chunks.put_nowait(_END)  # a no-op if the body already ended
