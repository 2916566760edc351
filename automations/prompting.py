"""An automation's prompt with its placeholders filled: {date} (2026-11-30), {time} (08:00), {weekday}
(Monday) at the run's time in the automation's time zone, and a webhook's {payload.<field>} (a field of
its JSON body, nested fields as payload.a.b; a missing one is left empty, an object or a list is
written as JSON). Any other text in braces is left as it is, so a prompt may quote JSON."""

from __future__ import annotations

import json
import re
from datetime import datetime
from typing import Any

from .schedule import zone

PLACEHOLDER = re.compile(r"\{(date|time|weekday|payload(?:\.[A-Za-z0-9_-]+)+)\}")
MAX_VALUE = 4000  # characters of one payload value put into the prompt


def prompt_fill(prompt: str, *, at: datetime, timezone_name: str, payload: dict[str, Any] | None = None) -> str:
    local = at.astimezone(zone(timezone_name))

    def value(match: re.Match[str]) -> str:
        name = match.group(1)
        if name == "date":
            return local.strftime("%Y-%m-%d")
        if name == "time":
            return local.strftime("%H:%M")
        if name == "weekday":
            return local.strftime("%A")
        found: Any = payload or {}
        for part in name.split(".")[1:]:
            found = found.get(part) if isinstance(found, dict) else None
        if found is None:
            return ""
        text = found if isinstance(found, str) else json.dumps(found, ensure_ascii=False)
        return text[:MAX_VALUE]

    return PLACEHOLDER.sub(value, prompt)
