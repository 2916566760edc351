"""The offline model's server: an ASGI 3 app speaking the Chat Completions protocol (`POST
/v1/chat/completions`, streaming or not, and `GET /v1/models`) around the planner (planner.py),
reached through the `openai` SDK like any real model server."""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import MutableMapping
from typing import Any

from ..protocol import completion_body, read_body, sse_chunks
from .planner import plan_reply
from .text import parse_json

logger = logging.getLogger("aptix.offline")

OFFLINE_MODEL_NAME = "aptix-offline"


def _error_body(message: str, kind: str = "invalid_request_error", code: str | None = None) -> bytes:
    return json.dumps({"error": {"message": message, "type": kind, "param": None, "code": code}}).encode()


class OfflineModelApp:
    """ASGI 3 app: `POST /v1/chat/completions` (stream or not) and `GET /v1/models`."""

    def __init__(self, *, chunk_delay: float = 0.0, modes: list | None = None) -> None:
        self.chunk_delay = chunk_delay
        self.modes = modes  # None: the planner reads the catalog

    async def __call__(self, scope: MutableMapping[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            return await self._lifespan(receive, send)
        if scope["type"] != "http":
            return None
        path, method = scope.get("path", "").rstrip("/"), scope.get("method", "GET")
        if path.endswith(("/models", f"/models/{OFFLINE_MODEL_NAME}")):
            return await self._models(send, path, method)
        if not path.endswith("/chat/completions"):
            return await self._json(send, 404, _error_body(f"Unknown path {path}.", code="not_found"))
        if method != "POST":
            return await self._json(send, 405, _error_body("Use POST for /v1/chat/completions."))
        request = await self._read_request(receive, send)
        if request is not None:
            await self._complete(send, request)
        return None

    async def _read_request(self, receive: Any, send: Any) -> dict | None:
        """The body of a chat request; None when the client left, or after answering 400 to a bad body."""
        raw = await read_body(receive)
        if raw is None:
            return None
        request = parse_json(raw.decode("utf-8", errors="replace"))
        if not isinstance(request, dict):
            await self._json(send, 400, _error_body("The request body must be a JSON object."))
            return None
        if not isinstance(request.get("messages"), list):
            await self._json(send, 400, _error_body("'messages' must be an array of messages."))
            return None
        return request

    @staticmethod
    async def _lifespan(receive: Any, send: Any) -> None:
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                await send({"type": "lifespan.shutdown.complete"})
                return

    async def _models(self, send: Any, path: str, method: str) -> None:
        if method != "GET":
            return await self._json(send, 405, _error_body(f"Use GET for {path}."))
        model = {"id": OFFLINE_MODEL_NAME, "object": "model", "created": 0, "owned_by": "aptix"}
        body = model if path.endswith(OFFLINE_MODEL_NAME) else {"object": "list", "data": [model]}
        return await self._json(send, 200, json.dumps(body).encode())

    async def _complete(self, send: Any, request: dict) -> None:
        """Plan the reply to a valid request and send it, as one JSON body or as an SSE stream."""
        try:
            reply = await plan_reply(request, modes=self.modes)
        except Exception:  # the client gets a server error, like from any model server
            logger.exception("The offline model failed to plan a reply")
            return await self._json(send, 500, _error_body("The offline model failed to plan a reply.", "server_error"))
        prompt_tokens = reply.prompt_tokens or 0
        if not request.get("stream"):
            body = completion_body(reply, model=OFFLINE_MODEL_NAME, prompt_tokens=prompt_tokens)
            return await self._json(send, 200, json.dumps(body).encode())
        include_usage = bool((request.get("stream_options") or {}).get("include_usage"))
        await send(
            {
                "type": "http.response.start",
                "status": 200,
                "headers": [(b"content-type", b"text/event-stream; charset=utf-8"), (b"cache-control", b"no-cache")],
            }
        )
        for chunk in sse_chunks(
            reply, model=OFFLINE_MODEL_NAME, prompt_tokens=prompt_tokens, include_usage=include_usage
        ):
            await send({"type": "http.response.body", "body": chunk.encode(), "more_body": True})
            await asyncio.sleep(self.chunk_delay)
        await send({"type": "http.response.body", "body": b"", "more_body": False})

    @staticmethod
    async def _json(send: Any, status: int, body: bytes) -> None:
        await send(
            {
                "type": "http.response.start",
                "status": status,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())],
            }
        )
        await send({"type": "http.response.body", "body": body})
