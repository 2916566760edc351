"""The offline model's server: an ASGI 3 app speaking the Chat Completions protocol (`POST
/v1/chat/completions`, streaming or not, and `GET /v1/models`) around the planner in
agents/offline.py, reached through the `openai` SDK like any real model server."""
from __future__ import annotations

import asyncio
import json
import logging
from typing import Any

from .chat_protocol import completion_body, read_body, sse_chunks
from .offline import OFFLINE_MODEL_NAME, plan_reply
from .offline_conversation import _json

logger = logging.getLogger("aptix.offline")


def _error_body(message: str, kind: str = "invalid_request_error", code: str | None = None) -> bytes:
    return json.dumps({"error": {"message": message, "type": kind, "param": None, "code": code}}).encode()


class OfflineModelApp:
    """ASGI 3 app: `POST /v1/chat/completions` (stream or not) and `GET /v1/models`."""

    def __init__(self, *, chunk_delay: float = 0.0, modes: list | None = None) -> None:
        self.chunk_delay = chunk_delay
        self.modes = modes  # None: the planner reads the catalog

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            while True:
                message = await receive()
                if message["type"] == "lifespan.startup":
                    await send({"type": "lifespan.startup.complete"})
                elif message["type"] == "lifespan.shutdown":
                    await send({"type": "lifespan.shutdown.complete"})
                    return
        if scope["type"] != "http":
            return
        path, method = scope.get("path", "").rstrip("/"), scope.get("method", "GET")
        if path.endswith("/models") or path.endswith(f"/models/{OFFLINE_MODEL_NAME}"):
            if method != "GET":
                return await self._json(send, 405, _error_body(f"Use GET for {path}."))
            model = {"id": OFFLINE_MODEL_NAME, "object": "model", "created": 0, "owned_by": "aptix"}
            body = model if path.endswith(OFFLINE_MODEL_NAME) else {"object": "list", "data": [model]}
            return await self._json(send, 200, json.dumps(body).encode())
        if not path.endswith("/chat/completions"):
            return await self._json(send, 404, _error_body(f"Unknown path {path}.", code="not_found"))
        if method != "POST":
            return await self._json(send, 405, _error_body("Use POST for /v1/chat/completions."))
        raw = await read_body(receive)
        if raw is None:
            return
        request = _json(raw.decode("utf-8", errors="replace"))
        if not isinstance(request, dict):
            return await self._json(send, 400, _error_body("The request body must be a JSON object."))
        if not isinstance(request.get("messages"), list):
            return await self._json(send, 400, _error_body("'messages' must be an array of messages."))
        try:
            reply = await plan_reply(request, modes=self.modes)
        except Exception:  # noqa: BLE001 - the client gets a server error, like from any model server
            logger.exception("The offline model failed to plan a reply")
            return await self._json(send, 500, _error_body("The offline model failed to plan a reply.", "server_error"))
        prompt_tokens = reply.prompt_tokens or 0
        if not request.get("stream"):
            body = completion_body(reply, model=OFFLINE_MODEL_NAME, prompt_tokens=prompt_tokens)
            return await self._json(send, 200, json.dumps(body).encode())
        include_usage = bool((request.get("stream_options") or {}).get("include_usage"))
        await send({"type": "http.response.start", "status": 200, "headers": [
            (b"content-type", b"text/event-stream; charset=utf-8"), (b"cache-control", b"no-cache")]})
        for chunk in sse_chunks(reply, model=OFFLINE_MODEL_NAME, prompt_tokens=prompt_tokens,
                                include_usage=include_usage):
            await send({"type": "http.response.body", "body": chunk.encode(), "more_body": True})
            await asyncio.sleep(self.chunk_delay)
        await send({"type": "http.response.body", "body": b"", "more_body": False})

    @staticmethod
    async def _json(send: Any, status: int, body: bytes) -> None:
        await send({"type": "http.response.start", "status": status,
                    "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]})
        await send({"type": "http.response.body", "body": body})
