"""`{{ call.id|dom_id }}`: a value someone else chose (a tool call's id, from the model or an MCP
server; `<call>.2` for a call's second question; a server's field name) made safe inside an HTML id
that is also used as a CSS selector (`hx-target="#question-…-error"`, `afterend:#tool-…`).

A dot, a colon or a space in an id is valid HTML but breaks `#…` as a selector (htmx then throws
"… is not a valid selector" and the form does nothing), so every character other than ASCII letters,
digits, `_` and `-` becomes `-<hex code>-`: `call_1.2` → `call_1-2e-2`. Ids that were already safe
(`call_abc123`) are unchanged."""

from __future__ import annotations

import re

from django import template

register = template.Library()

UNSAFE_RE = re.compile(r"[^A-Za-z0-9_-]")


@register.filter
def dom_id(value: object) -> str:
    return UNSAFE_RE.sub(lambda match: f"-{ord(match.group(0)):x}-", str(value))
