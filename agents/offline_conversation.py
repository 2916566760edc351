"""The offline model's reading of a Chat Completions request: the conversation (messages, offered
tools, mode and execution, this turn's tool calls and results), the meaningful words of a text, and
the shape of a planned step (`_Plan`, `_call`). Shared by the planner and its data path."""
from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

_STOP_WORDS = frozenset("""
about above after again also been before being below between both could does doing down during each
else even every from further have having here hers herself himself into itself just like make made
many more most much must myself need only other ought ours over please same should show some such
than that their theirs them themselves then there these they this those through under until upon
very want were what when where which while whom whose will with would your yours yourself tell give
help thing things know able okay thanks thank using could mode modes
""".split())


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # content parts
        return "".join(p.get("text", "") for p in content if isinstance(p, dict) and isinstance(p.get("text"), str))
    return ""


def _json(text: str) -> Any:
    try:
        return json.loads(text)
    except (TypeError, ValueError):
        return None


def _stem(word: str) -> str:
    if len(word) > 4 and word.endswith("ies"):
        return word[:-3] + "y"
    if len(word) > 3 and word.endswith("s") and not word.endswith("ss"):
        return word[:-1]
    return word


def _words(text: str) -> list[str]:
    return [_stem(w) for w in re.findall(r"[a-z0-9]+", text.lower().replace("'s", ""))]


_STOP_STEMS = _STOP_WORDS | {_stem(w) for w in _STOP_WORDS}


def keywords(text: str) -> set[str]:
    """Meaningful words: lower-case, no punctuation, no stop words, at least four letters."""
    return {w for w in _words(text) if len(w) >= 4 and w not in _STOP_STEMS and not w.isdigit()}


@dataclass
class ToolResult:
    name: str
    arguments: dict
    content: str


@dataclass
class Conversation:
    messages: list[dict]
    offered: dict[str, dict]  # tool name -> schema
    mode: str | None = None
    execution: str = "ask"
    user_text: str = ""
    previous_assistant: str = ""  # the assistant's last words before the current user message
    previous_user: str = ""  # the user message that came before that
    calls: list[tuple[str, dict]] = field(default_factory=list)  # tool calls made in this turn
    results: list[ToolResult] = field(default_factory=list)  # every tool result of this turn
    trailing: list[ToolResult] = field(default_factory=list)  # the tool results that end the conversation

    @classmethod
    def from_body(cls, body: dict) -> "Conversation":
        messages = [m for m in body.get("messages") or [] if isinstance(m, dict)]
        offered: dict[str, dict] = {}
        if body.get("tool_choice") != "none":
            for schema in body.get("tools") or []:
                name = ((schema or {}).get("function") or {}).get("name") if isinstance(schema, dict) else None
                if isinstance(name, str) and name:
                    offered[name] = schema
        conv = cls(messages=messages, offered=offered)
        system = "\n".join(_text(m.get("content")) for m in messages if m.get("role") in ("system", "developer"))
        if found := re.search(r"^\s*Current mode:\s*([\w.-]+)", system, re.M | re.I):
            conv.mode = found.group(1).lower()
        if found := re.search(r"^\s*Execution:\s*(ask|agent)\b", system, re.M | re.I):
            conv.execution = found.group(1).lower()
        users = [i for i, m in enumerate(messages) if m.get("role") == "user"]
        start = users[-1] if users else 0
        if users:
            conv.user_text = _text(messages[start].get("content")).strip()
            before = messages[:start]
            assistants = [m for m in before if m.get("role") == "assistant" and _text(m.get("content")).strip()]
            if assistants:
                conv.previous_assistant = _text(assistants[-1].get("content"))
                last_assistant = max(i for i, m in enumerate(before) if m is assistants[-1])
                earlier = [m for m in before[:last_assistant] if m.get("role") == "user"]
                conv.previous_user = _text(earlier[-1].get("content")).strip() if earlier else ""
        names: dict[str, tuple[str, dict]] = {}
        for message in messages[start:]:
            if message.get("role") == "assistant":
                for call in message.get("tool_calls") or []:
                    function = call.get("function") or {}
                    args = _json(function.get("arguments") or "{}")
                    entry = (str(function.get("name") or ""), args if isinstance(args, dict) else {})
                    conv.calls.append(entry)
                    names[str(call.get("id"))] = entry
            elif message.get("role") == "tool":
                name, args = names.get(str(message.get("tool_call_id")), (str(message.get("name") or ""), {}))
                conv.results.append(ToolResult(name, args, _text(message.get("content"))))
        ending = 0
        for message in reversed(messages):
            if message.get("role") != "tool":
                break
            ending += 1
        conv.trailing = conv.results[-ending:] if 0 < ending <= len(conv.results) else []
        return conv

    def called(self, name: str, arguments: dict | None = None) -> bool:
        return any(n == name and (arguments is None or a == arguments) for n, a in self.calls)

    def mcp_tool(self, suffix: str, server: str | None = None) -> str | None:
        for name in self.offered:
            head, sep, tail = name.partition("__")
            if sep and tail == suffix and (server is None or head == server):
                return name
        return None


# --- a planned step ------------------------------------------------------------------------------------


@dataclass
class _Plan:
    text: str = ""
    calls: list[tuple[str, dict]] = field(default_factory=list)


def _call(name: str, arguments: dict) -> _Plan:
    return _Plan(calls=[(name, arguments)])
