"""How an Ask answer shows tool results when there is no follow-up model call, and whether there is one."""

from __future__ import annotations

import json

from django.conf import settings

from modes.models import AgentMode
from tools.registry import result_is_answer, result_markdown

from ..approvals import DECLINED_MODE_CHANGE, DENIED_TOOL
from ..llm.catalog import ModelSpec
from ..state import PausedState, ToolOutput

NO_ANSWER = "*No answer from the model: it only called {names}. What that returned:*"
SOURCES_SHOWN = 3


def with_sources(answer: str, citations: list[list[str]]) -> str:
    """The answer with the first passages the turn's tool results quoted listed under it, when it cites
    none of them itself: a small model (Qwen2.5-Coder 1.5B) answered a policy question from
    the project's passages correctly but gave no citation, so the reader could not open the
    page. An answer that cites one of them, or a turn that quoted none, is left as it is."""
    if not answer.strip() or not citations or any(link in answer for _label, link in citations):
        return answer
    listed = ", ".join(f"[{label}]({link})" for label, link in citations[:SOURCES_SHOWN])
    return f"{answer.rstrip()}\n\nSources: {listed}"


def ask_answer(state: PausedState, content: str = "") -> str:
    """The model's text (if any) followed by each tool result of the step, summarised. Without any
    text, results that are not by themselves what was asked for (a list of modes for a request for
    code: a small model's tool call it did not need) come under a label, never passed off as the answer."""
    parts = [content.strip()] if content and content.strip() else []
    outputs = state.tool_outputs
    if not parts and outputs and not all(o["ok"] and result_is_answer(o["name"]) for o in outputs):
        parts.append(NO_ANSWER.format(names=", ".join(f"`{o['name']}`" for o in outputs)))
    for output in state.tool_outputs:
        parts.append(summarize_tool_output(output))
    return "\n\n".join(p for p in parts if p)


def summarize_tool_output(output: ToolOutput) -> str:
    """How an Ask answer shows a tool result when there is no follow-up model call."""
    name, content = output["name"], output["content"]
    if not output["ok"]:
        try:
            message = json.loads(content).get("error", content)
        except (ValueError, AttributeError):
            message = content
        if message in (DENIED_TOOL, DECLINED_MODE_CHANGE):  # words for the model (in the trace), not a failure
            return f"**{name}**: denied by you; it did not run."
        return f"**{name}** failed: {message}"
    summary = result_markdown(name, content)  # the tool's own way of showing it (tools/base.py)
    if summary is not None:
        return summary
    text = content if len(content) < 2000 else content[:2000] + "…"
    return f"```\n{text}\n```"


def ask_followup(override: bool | None, mode: AgentMode | None, spec: ModelSpec) -> bool:
    """Whether an Ask turn may call the model again after its tool results: the mode's setting wins
    over the model's (models.json `askFollowup`), which wins over APTIX_ASK_FOLLOWUP."""
    for choice in (override, mode.ask_followup if mode else None, spec.ask_followup):
        if choice is not None:
            return choice
    return bool(settings.APTIX_ASK_FOLLOWUP)
