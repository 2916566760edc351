"""Tool calls a model wrote as text. Small models served without a tool-call parser for their own
format, or that slip out of it, answer with the call itself as the whole reply: a JSON object
`{"name": …, "arguments": {…}}` (or a list of them), bare, in a ```json fence, or between tags such as
`<tool_call>` — seen from Qwen2.5-Coder 1.5B on llama.cpp, which wrote a knowledge_search call between
`<tool_response>` tags instead of calling it. Such a reply is taken as the call when the whole reply is
the call and it names a tool the request offered; anything else stays an answer."""

from __future__ import annotations

import json
import re
import uuid
from typing import Any

from .reply import ToolCallRequest

_OPENING = re.compile(r"^(?:```[a-z]*|<(?:tool_call|tool_response|function_call|tools?)>)\s*", re.IGNORECASE)
_CLOSING = re.compile(r"\s*(?:```|</(?:tool_call|tool_response|function_call|tools?)>)$", re.IGNORECASE)


def text_tool_calls(content: str, offered: set[str]) -> list[ToolCallRequest]:
    """The calls `content` consists of, when it is nothing but calls of `offered` tools; else []."""
    text = content.strip()
    while True:  # a fence inside tags, tags inside a fence
        unwrapped = _CLOSING.sub("", _OPENING.sub("", text, count=1), count=1).strip()
        if unwrapped == text:
            break
        text = unwrapped
    if not text.startswith(("{", "[")):
        return []
    try:
        data = json.loads(text)
    except ValueError:
        return []
    calls = []
    for item in data if isinstance(data, list) else [data]:
        call = _call(item, offered)
        if call is None:
            return []
        calls.append(call)
    return calls


def _call(item: Any, offered: set[str]) -> ToolCallRequest | None:
    if not isinstance(item, dict) or item.get("name") not in offered:
        return None
    arguments = item.get("arguments", item.get("parameters", {}))
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments or "{}")
        except ValueError:
            return None
    if not isinstance(arguments, dict):
        return None
    return ToolCallRequest(
        id=f"call_{uuid.uuid4().hex[:24]}", name=item["name"], arguments=json.dumps(arguments, ensure_ascii=False)
    )
