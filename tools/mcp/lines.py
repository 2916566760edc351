"""Splitting a stdio server's output into lines, in linear time and with a size limit.

Every server's output is read on the host's one shared thread, so a 40 MB result must cost 40 MB of
work, not a copy of the growing buffer per chunk. A line longer than the server's
`max_message_mb` is not kept: its first and last bytes are, to find the request it answers, which
then fails with a clear error instead of waiting for its timeout.
"""

from __future__ import annotations

import logging
import re

import mcp_types as types
from mcp.shared.message import SessionMessage

logger = logging.getLogger("aptix.mcp")

STDERR_LINE_LIMIT = 64 * 1024  # a longer stderr line is logged as a note of its size
EDGE = 256  # bytes kept from each end of an oversized line
_ID = rb'("(?:[^"\\]|\\.)*"|-?\d+)'
# The id is near the start (`{"jsonrpc":"2.0","id":7,"result":…`, Python SDK) or last (`…,"id":7}`, TypeScript).
HEAD_ID_RE = re.compile(rb'^\s*\{\s*(?:"jsonrpc"\s*:\s*"2\.0"\s*,\s*)?"id"\s*:\s*' + _ID)
TAIL_ID_RE = re.compile(rb'"id"\s*:\s*' + _ID + rb'\s*(?:,\s*"jsonrpc"\s*:\s*"2\.0"\s*)?\}\s*$')


class Oversized:
    """A line that went over the limit: its size and its two ends."""

    def __init__(self, head: bytes, limit: int) -> None:
        self.head = head[:EDGE]
        self.tail = head[-EDGE:]
        self.size = len(head)
        self.limit = limit

    def add(self, piece: bytes) -> None:
        self.size += len(piece)
        self.tail = (self.tail + piece[-EDGE:])[-EDGE:]

    def summary(self) -> str:
        return f"[a line of {self.size} bytes, over the {_size(self.limit)} limit, was left out]"

    def request_id(self) -> types.RequestId | None:
        match = HEAD_ID_RE.match(self.head) or TAIL_ID_RE.search(self.tail)
        if match is None:
            return None
        token = match.group(1).decode("utf-8", "replace")
        return int(token) if token.lstrip("-").isdigit() else token[1:-1]

    def reply(self, server: str) -> SessionMessage | None:
        """The error the request this line answered gets instead (None when it cannot be told)."""
        message = (
            f'the answer is {_size(self.size)}, over the {_size(self.limit)} limit of MCP server "{server}" '
            '(raise "max_message_mb" in its mcp.json entry to accept it)'
        )
        request_id = self.request_id()
        logger.warning("%s; %s", message, "it is dropped" if request_id is None else f"request {request_id!r} fails")
        if request_id is None:
            return None
        error = types.ErrorData(code=types.INTERNAL_ERROR, message=message)
        return SessionMessage(types.JSONRPCError(jsonrpc="2.0", id=request_id, error=error))


class LineSplitter:
    """Feed it chunks; get back complete lines (bytes, without the newline) and `Oversized` notes."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._parts: list[bytes] = []
        self._size = 0
        self._oversized: Oversized | None = None

    def feed(self, chunk: bytes) -> list[bytes | Oversized]:
        lines: list[bytes | Oversized] = []
        start = 0
        while (end := chunk.find(b"\n", start)) >= 0:
            self._add(chunk[start:end])
            lines.append(self._take())
            start = end + 1
        self._add(chunk[start:])
        return lines

    def _add(self, piece: bytes) -> None:
        if not piece:
            return
        if self._oversized is not None:
            self._oversized.add(piece)
            return
        self._parts.append(piece)
        self._size += len(piece)
        if self._size > self.limit:
            self._oversized = Oversized(b"".join(self._parts), self.limit)
            self._parts, self._size = [], 0

    def _take(self) -> bytes | Oversized:
        if self._oversized is not None:
            line: bytes | Oversized = self._oversized
            self._oversized = None
            return line
        line = b"".join(self._parts)
        self._parts, self._size = [], 0
        return line


def _size(count: int) -> str:
    if count >= 1024 * 1024:
        return f"{count / (1024 * 1024):.1f} MiB".replace(".0 MiB", " MiB")
    return f"{count} bytes"
