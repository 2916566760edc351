"""The offline model's reading of a Chat Completions request: the conversation (messages, offered
tools, mode and execution, this turn's tool calls and results), and the shape of a planned step
(`Plan`, `Plan.call`). Shared by the planner and its data path."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from ..images import FILES_NOTE, RESOURCES_NOTE
from .text import content_text, parse_json


def _offered_tools(body: dict) -> dict[str, dict]:
    """The request's tools by name (none when `tool_choice` is "none")."""
    offered: dict[str, dict] = {}
    if body.get("tool_choice") != "none":
        for schema in body.get("tools") or []:
            name = ((schema or {}).get("function") or {}).get("name") if isinstance(schema, dict) else None
            if isinstance(name, str) and name:
                offered[name] = schema
    return offered


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
    noted: bool = False  # the conversation ends with Aptix's note: answer now, without tools

    @classmethod
    def from_body(cls, body: dict) -> Conversation:
        messages = [m for m in body.get("messages") or [] if isinstance(m, dict)]
        conv = cls(messages=messages, offered=_offered_tools(body))
        system = "\n".join(content_text(m.get("content")) for m in messages if m.get("role") in ("system", "developer"))
        if found := re.search(r"^\s*Current mode:\s*([\w.-]+)", system, re.M | re.I):
            conv.mode = found.group(1).lower()
        if found := re.search(r"^\s*Execution:\s*(ask|agent)\b", system, re.M | re.I):
            conv.execution = found.group(1).lower()
        # Aptix's own notes to the model (the final-answer request, the nudge) are no new request
        users = [i for i, m in enumerate(messages) if m.get("role") == "user" and not _is_note(m)]
        start = users[-1] if users else 0
        conv.noted = bool(messages) and messages[-1].get("role") == "user" and _is_note(messages[-1])
        if users:
            conv._read_history(start)
        conv._read_tool_traffic(start)
        return conv

    def _read_history(self, start: int) -> None:
        """The current user message (at `start`), the assistant's last words before it and the user
        message those answered."""
        messages = self.messages
        self.user_text = _words_of(messages[start])
        before = messages[:start]
        assistants = [m for m in before if m.get("role") == "assistant" and content_text(m.get("content")).strip()]
        if assistants:
            self.previous_assistant = content_text(assistants[-1].get("content"))
            last_assistant = max(i for i, m in enumerate(before) if m is assistants[-1])
            earlier = [m for m in before[:last_assistant] if m.get("role") == "user"]
            self.previous_user = _words_of(earlier[-1]) if earlier else ""

    def _read_tool_traffic(self, start: int) -> None:
        """This turn's tool calls and results (from `start`), and the results that end the conversation."""
        names: dict[str, tuple[str, dict]] = {}
        for message in self.messages[start:]:
            if message.get("role") == "assistant":
                for call in message.get("tool_calls") or []:
                    function = call.get("function") or {}
                    args = parse_json(function.get("arguments") or "{}")
                    entry = (str(function.get("name") or ""), args if isinstance(args, dict) else {})
                    self.calls.append(entry)
                    names[str(call.get("id"))] = entry
            elif message.get("role") == "tool":
                name, args = names.get(str(message.get("tool_call_id")), (str(message.get("name") or ""), {}))
                content = _REPEAT_NOTE.sub("", content_text(message.get("content")))  # the result under the note
                self.results.append(ToolResult(name, args, content))
        ending = 0
        for message in reversed(self.messages):
            if message.get("role") != "tool":
                break
            ending += 1
        self.trailing = self.results[-ending:] if 0 < ending <= len(self.results) else []

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
class Plan:
    """The offline model's next message: text, or tool calls as (name, arguments)."""

    text: str = ""
    calls: list[tuple[str, dict]] = field(default_factory=list)
    again: bool = False  # may repeat a call already made (the looping demo, rule i)

    @classmethod
    def call(cls, name: str, arguments: dict) -> Plan:
        """A step that calls one tool."""
        return cls(calls=[(name, arguments)])


_REPEAT_NOTE = re.compile(r"\n\n\[Already called in this turn[^\]]*\]\s*$")


def _words_of(message: dict) -> str:
    """A user message's own words, without the notes on its attached files and resources (agents/attachments.py)."""
    return content_text(message.get("content")).split(FILES_NOTE, 1)[0].split(RESOURCES_NOTE, 1)[0].strip()


def _is_note(message: dict) -> bool:
    return content_text(message.get("content")).startswith("[Aptix]")
