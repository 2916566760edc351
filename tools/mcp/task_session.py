"""Following a task in the MCP session it was created in, from another process (tasks.py: a resume).

A server may scope its task ids to the session that created them: the mcp SDK 1.x's default task
handlers do (a task id there embeds the session's scope; `tasks/get` from another session hears
"Task not found"). A task whose caller died lives on at such a server, but only its own session may
fetch its result. Over streamable HTTP that session outlives the dead caller (nothing ended it), and
its `Mcp-Session-Id` was stored with the task: `SessionTaskRequests` sends the task's requests
(`tasks/get`, `tasks/result`, `tasks/cancel`) there, as plain JSON-RPC posts carrying that session id,
beside the live connection (whose own session stays as it is). Once the result is in, the old
session is ended (`DELETE`), as its client would have done.

A server's request on such a stream (a question of a task waiting for input) cannot be answered
here: nobody holds that session's questions any more, so the task stays waiting until it gives up.
"""

from __future__ import annotations

import contextlib
import itertools
import json
from typing import Any

import httpx2
import mcp_types as types
from mcp import MCPError

from .http import ERROR_TEXT_LIMIT, HTTP_TIMEOUT, SESSION_HEADER

VERSION_HEADER = "mcp-protocol-version"
END_TIMEOUT = 5.0  # seconds the old session's DELETE may take


class SessionTaskRequests:
    """Task requests on the streamable-HTTP session `session_id` of the server at `url` (a
    `TaskRequest` of tasks.py: call it as `request(method, task_id, timeout, **params)`)."""

    def __init__(self, url: str, headers: dict[str, str], session_id: str, version: str | None) -> None:
        self.url = url
        self.headers = {
            **headers,
            SESSION_HEADER: session_id,
            "accept": "application/json, text/event-stream",
            "content-type": "application/json",
        }
        if version:
            self.headers[VERSION_HEADER] = version
        self._ids = itertools.count(1)

    async def __call__(self, method: str, task_id: str, timeout: float | None, **params: Any) -> dict[str, Any]:
        body: dict[str, Any] = {"taskId": task_id}
        if params.get("input_responses") is not None:
            body["inputResponses"] = params["input_responses"]
        request_id = f"aptix-resume-{next(self._ids)}"
        message = {"jsonrpc": "2.0", "id": request_id, "method": method, "params": body}
        wait = httpx2.Timeout(HTTP_TIMEOUT.connect or 30.0, read=timeout)
        async with (
            httpx2.AsyncClient(headers=self.headers, timeout=wait) as client,
            client.stream("POST", self.url, content=json.dumps(message)) as response,
        ):
            if response.status_code >= 400:
                text = (await response.aread()).decode(errors="replace")[:ERROR_TEXT_LIMIT]
                raise MCPError(code=types.INVALID_REQUEST, message=f"HTTP {response.status_code}: {text}".strip())
            answer = await _answer_of(response, request_id)
        if "error" in answer:
            error = answer["error"] if isinstance(answer["error"], dict) else {}
            raise MCPError(code=int(error.get("code", types.INTERNAL_ERROR)), message=str(error.get("message", "")))
        result = answer.get("result")
        return result if isinstance(result, dict) else {}

    async def end(self) -> None:
        """End the old session at the server (its caller is gone); any failure is ignored."""
        with contextlib.suppress(Exception):
            async with httpx2.AsyncClient(headers=self.headers, timeout=END_TIMEOUT) as client:
                await client.delete(self.url)


async def _answer_of(response: httpx2.Response, request_id: str) -> dict[str, Any]:
    """The JSON-RPC answer to `request_id`: the JSON body, or the event on the SSE stream that
    carries it (other messages on the stream, notifications or the server's requests, are passed)."""
    if response.headers.get("content-type", "").lower().startswith("application/json"):
        return _matching(json.loads(await response.aread()), request_id) or {}
    data: list[str] = []
    async for line in response.aiter_lines():
        if line.startswith("data:"):
            data.append(line[5:].removeprefix(" "))
        elif not line and data:
            found = _matching(json.loads("\n".join(data)), request_id)
            data = []
            if found is not None:
                return found
    if data and (found := _matching(json.loads("\n".join(data)), request_id)) is not None:
        return found
    raise MCPError(code=types.CONNECTION_CLOSED, message="the server ended the stream without an answer")


def _matching(message: Any, request_id: str) -> dict[str, Any] | None:
    messages = message if isinstance(message, list) else [message]
    for item in messages:
        if isinstance(item, dict) and item.get("id") == request_id and ("result" in item or "error" in item):
            return item
    return None
