"""What a server says about itself: its MCP log messages (`notifications/message`) and its stderr.

Both go to Aptix's structured log (logger "aptix.mcp", with the server's name) and the last
`LOG_LINES` of each are kept per server, for the admin page. The buffers belong to the host, not to
one connection, so the lines before a crash are still there after the restart that follows it.
"""

from __future__ import annotations

import json
import logging
import threading
from collections import deque
from dataclasses import dataclass
from datetime import UTC, datetime

import mcp_types as types

logger = logging.getLogger("aptix.mcp")

LOG_LEVEL: types.LoggingLevel = "info"  # the least severe server log messages asked for (2026-07-28 connections)
LOG_LINES = 200  # per server and per stream
LOG_TEXT_LIMIT = 2000  # characters of one log message kept and logged
# MCP's syslog levels (RFC 5424) as Python's
LEVELS = {
    "debug": logging.DEBUG,
    "info": logging.INFO,
    "notice": logging.INFO,
    "warning": logging.WARNING,
    "error": logging.ERROR,
    "critical": logging.CRITICAL,
    "alert": logging.CRITICAL,
    "emergency": logging.CRITICAL,
}


@dataclass(frozen=True)
class LogLine:
    time: datetime
    level: str  # the server's level ("notice", "alert", ...), or "stderr"
    text: str
    logger: str = ""  # the server's own logger name, if it gave one


class ServerLog:
    """The last lines of one server's MCP log and stderr. Written on the host loop, read from any
    thread (the admin page), hence the lock."""

    def __init__(self, server: str) -> None:
        self.server = server
        self._messages: deque[LogLine] = deque(maxlen=LOG_LINES)
        self._stderr: deque[LogLine] = deque(maxlen=LOG_LINES)
        self._lock = threading.Lock()

    async def message(self, params: types.LoggingMessageNotificationParams) -> None:
        """The SDK's `logging_callback`: one `notifications/message`."""
        data = params.data
        text = data if isinstance(data, str) else json.dumps(data, ensure_ascii=False, default=str)
        text = text[:LOG_TEXT_LIMIT]
        line = LogLine(datetime.now(UTC), str(params.level), text, params.logger or "")
        with self._lock:
            self._messages.append(line)
        source = f" ({line.logger})" if line.logger else ""
        logger.log(
            LEVELS.get(line.level, logging.INFO),
            "[%s]%s %s",
            self.server,
            source,
            text,
            extra={"server": self.server, "mcp_level": line.level, "stream": "mcp-log"},
        )

    def stderr_line(self, text: str) -> None:
        with self._lock:
            self._stderr.append(LogLine(datetime.now(UTC), "stderr", text))

    def messages(self) -> list[LogLine]:
        with self._lock:
            return list(self._messages)

    def stderr(self) -> list[LogLine]:
        with self._lock:
            return list(self._stderr)
