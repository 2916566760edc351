"""Structured logging: the admin logger (IAdminLogger of the records) and a JSON line formatter."""

from __future__ import annotations

import json
import logging
from typing import Any

_STANDARD_ATTRS = set(logging.LogRecord("", 0, "", 0, "", (), None).__dict__) | {"message", "asctime"}


class StructuredFormatter(logging.Formatter):
    """One JSON object per line: time, level, logger, message, tag and the record's fields."""

    def format(self, record: logging.LogRecord) -> str:
        data: dict[str, Any] = {
            "time": self.formatTime(record, "%Y-%m-%dT%H:%M:%S"),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        for key, value in record.__dict__.items():
            if key not in _STANDARD_ATTRS and not key.startswith("_"):
                data[key] = value
        if record.exc_info:
            data["exception"] = self.formatException(record.exc_info)
        return json.dumps(data, default=str)


class AdminLogger:
    """IAdminLogger: errors and exceptions as structured log records.

    Every keyword field becomes an attribute of the log record (and a key of the JSON line), so
    operators can filter by session, tool, tag and so on.
    """

    def __init__(self, name: str = "aptix.admin") -> None:
        self._logger = logging.getLogger(name)

    def add_error(self, message: str, **fields: Any) -> None:
        extra = {"fields": fields, **_safe(fields)}
        if "tag" in fields:
            extra["tag"] = fields["tag"]
        self._logger.error(message, extra=extra)

    def add_exception(self, exc: BaseException, tag: str, **fields: Any) -> None:
        message = f"{tag}: {type(exc).__name__}: {exc}"
        self._logger.error(
            message,
            exc_info=(type(exc), exc, exc.__traceback__),
            extra={"tag": tag, "fields": fields, **_safe(fields)},
        )


def _safe(fields: dict[str, Any]) -> dict[str, Any]:
    # LogRecord refuses extras that shadow its own attributes ("message", "args", ...).
    return {k: v for k, v in fields.items() if k not in _STANDARD_ATTRS and k not in {"tag", "fields"}}


admin_logger = AdminLogger()
