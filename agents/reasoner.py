"""Ask and Agent loops (spec 004 §3, §6) with AGN-011's mode handling (§5).

Ask: one model call; internal tool calls in that reply run; no second call unless
APTIX_ASK_FOLLOWUP. Agent: model → tools → results → model until a reply has no tool calls, the
step limit, the token budget, or a cancel. Every step is recorded as events (agents/events.py).
"""
from __future__ import annotations

import asyncio
import json
import logging
import re
import time
from dataclasses import dataclass, field
from typing import Any

from asgiref.sync import sync_to_async
from django.conf import settings
from django.db.models import Max
from django.utils import timezone

from aptix.logging import admin_logger
from modes.models import AgentMode
from tools.base import InvokeResult, ToolContext
from tools.builtin.mode_change import ModeChangeTool

from .events import EventRecorder
from .llm import LLMClient, ModelError, ModelReply, get_llm_client
from .models import Turn
from .pipeline import ToolSelection, build_system_prompt, select_tools
from .toolbox import build_internal_tools, resolve_mcp_tool

logger = logging.getLogger("aptix.reasoner")

HISTORY_TURNS = 20
RESULT_TRACE_LIMIT = 20_000  # characters of a tool result kept in its event
ERROR_INTERNAL = "Something went wrong while running this turn. The error was logged for the administrators."
CURRENT_MODE_RE = re.compile(r"^Current mode: .*$", re.MULTILINE)


@dataclass
class RunState:
    """What the loop carries between steps (and, for client tools, between HTTP requests)."""

    messages: list[dict]
    tools: list[dict]
    kinds: dict[str, str]
    mode: str
    mode_changes: list[dict] = field(default_factory=list)
    pending: list[dict] = field(default_factory=list)
    tool_outputs: list[dict] = field(default_factory=list)  # this step's results, for Ask answers
    traced: int = 0  # how many messages the trace (step.started events) already holds

    def to_json(self) -> dict:
        return {
            "messages": self.messages, "tools": self.tools, "kinds": self.kinds, "mode": self.mode,
            "mode_changes": self.mode_changes, "pending": self.pending, "tool_outputs": self.tool_outputs,
            "traced": self.traced,
        }

    @classmethod
    def from_json(cls, data: dict) -> RunState:
        return cls(**{k: data[k] for k in cls.__dataclass_fields__ if k in data})


class Reasoner:
    def __init__(self, *, llm: LLMClient | None = None, session_manager=None, logger=None,
                 max_steps: int | None = None, token_budget: int | None = None,
                 ask_followup: bool | None = None, image_remote=None) -> None:
        self.llm = llm or get_llm_client()
        self.max_steps = max_steps or settings.APTIX_MAX_STEPS
        self.token_budget = token_budget or settings.APTIX_TOKEN_BUDGET
        self.ask_followup = settings.APTIX_ASK_FOLLOWUP if ask_followup is None else ask_followup
        self.admin_logger = logger or admin_logger
        if image_remote is None and not self.llm.is_offline:
            image_remote = self.llm.generate_image  # a real provider draws with its Images API
        self.tools = build_internal_tools(session_manager=session_manager, logger=self.admin_logger,
                                          image_remote=image_remote)

    # --- entry point ------------------------------------------------------------------------

    async def run(self, turn_id: str, *, client_tools: list[dict] | None = None,
                  tool_results: list[dict] | None = None) -> Turn:
        """Run (or continue) a turn to its end state. Never raises for model or tool failures."""
        loaded = await _load_run(turn_id)
        turn = loaded.turn
        if turn.is_finished:  # ended before it got here (cancelled while queued, ended as an orphan)
            return turn
        recorder = EventRecorder(turn, start_seq=loaded.last_seq)
        state: RunState | None = None
        try:
            if turn.status == Turn.Status.REQUIRES_ACTION:
                state = self._continue_state(turn, tool_results or [])
            else:
                state = await self._start(turn, recorder, loaded, client_tools)
            await self._loop(turn, recorder, state)
            await recorder.drain()
        except asyncio.CancelledError:
            current = asyncio.current_task()
            if current is not None:
                current.uncancel()
            # What was streamed before the stop stays as the (partial) answer.
            await self._finish(turn, recorder, state, Turn.Status.CANCELLED, "turn.cancelled",
                               {"reason": "Stopped by the user."}, answer=recorder.streamed)
        except ModelError as exc:
            await self._finish(turn, recorder, state, Turn.Status.FAILED, "turn.failed",
                               {"error": str(exc), "kind": exc.kind}, error=str(exc))
        except Exception as exc:  # noqa: BLE001 - a turn never stays running
            self.admin_logger.add_exception(exc, "Reasoner.Run", turn_id=turn.id, session_id=turn.session_id)
            await self._finish(turn, recorder, state, Turn.Status.FAILED, "turn.failed",
                               {"error": ERROR_INTERNAL, "kind": "internal"}, error=ERROR_INTERNAL)
        return turn

    # --- set-up -----------------------------------------------------------------------------

    async def _start(self, turn: Turn, recorder: EventRecorder, loaded: LoadedRun,
                     client_tools: list[dict] | None) -> RunState:
        session = turn.session
        mode = loaded.mode
        if mode is None:  # deleted from the catalog since: run with an empty prompt layer
            mode = AgentMode(key=turn.mode, display_name=turn.mode, description="", tool_policy=[])
        selection: ToolSelection = select_tools(
            policy=mode.tool_policy, toggles=session.tool_toggles, execution=turn.execution,
            client_tools=client_tools,
        )
        system_prompt = build_system_prompt(mode=mode, execution=turn.execution, selection=selection)
        messages = [{"role": "system", "content": system_prompt}, *loaded.history,
                    {"role": "user", "content": turn.user_message}]

        turn.status = Turn.Status.RUNNING
        turn.started_at = timezone.now()
        turn.model_label = self.llm.label
        # Written with turn.started (the run holds the turn: nothing reads its status meanwhile
        # but the orphan check, which knows the run's task).
        running = {"status": turn.status, "started_at": turn.started_at, "model_label": turn.model_label,
                   "heartbeat_at": turn.started_at}
        await recorder.emit("turn.started", defer=True, turn_fields=running, payload={
            "mode": turn.mode, "execution": turn.execution, "model": self.llm.label,
            "max_steps": self.max_steps if turn.execution == "agent" else 1,
            "system_prompt": system_prompt, "tools": selection.schemas, "tool_kinds": selection.kinds,
        })
        return RunState(messages=messages, tools=selection.schemas, kinds=selection.kinds, mode=turn.mode)

    def _continue_state(self, turn: Turn, tool_results: list[dict]) -> RunState:
        state = RunState.from_json(turn.state)
        given = {r["toolCallId"]: r["content"] for r in tool_results}
        for call in state.pending:
            state.messages.append({"role": "tool", "tool_call_id": call["id"], "content": given[call["id"]]})
            state.tool_outputs.append({"name": call["name"], "ok": True, "content": given[call["id"]]})
        state.pending = []
        return state

    # --- the loop ---------------------------------------------------------------------------

    async def _loop(self, turn: Turn, recorder: EventRecorder, state: RunState) -> None:
        agent = turn.execution == "agent"
        if turn.status == Turn.Status.REQUIRES_ACTION:
            turn.status = Turn.Status.RUNNING
            await turn.asave(update_fields=["status"])
            if not agent and not self.ask_followup:
                return await self._complete(turn, recorder, state, self._ask_answer(state))
        last_content = ""
        while True:
            limit = self._limit_hit(turn, agent)
            if limit:
                return await self._finish(turn, recorder, state, Turn.Status.LIMIT_REACHED, "limit.reached",
                                          limit, answer=last_content)
            followup = not agent and turn.step_count >= 1  # Ask's optional second call: no tools
            reply = await self._step(turn, recorder, state, tools=None if followup else state.tools)
            last_content = reply.content
            if not reply.tool_calls or followup:
                return await self._complete(turn, recorder, state, reply.content)
            state.tool_outputs = []
            await self._run_tool_calls(turn, recorder, state, reply)
            if state.pending:
                turn.status = Turn.Status.REQUIRES_ACTION
                turn.state = state.to_json()
                turn.response_mode = state.mode
                await recorder.drain()  # the columns written with the events so far go first
                await turn.asave(update_fields=["status", "state", "response_mode"])
                return None
            if not agent and not self.ask_followup:
                return await self._complete(turn, recorder, state, self._ask_answer(state, reply.content))

    def _limit_hit(self, turn: Turn, agent: bool) -> dict | None:
        if agent and turn.step_count >= self.max_steps:
            return {"limit": "steps", "max_steps": self.max_steps,
                    "message": f"Stopped after {self.max_steps} steps (APTIX_MAX_STEPS)."}
        used = turn.prompt_tokens + turn.completion_tokens
        if turn.step_count and used >= self.token_budget:
            return {"limit": "tokens", "token_budget": self.token_budget, "used": used,
                    "message": f"Stopped after using {used} tokens of the {self.token_budget} budget "
                               "(APTIX_TOKEN_BUDGET)."}
        return None

    async def _step(self, turn: Turn, recorder: EventRecorder, state: RunState, *, tools) -> ModelReply:
        turn.step_count += 1
        # The trace keeps each message once: the first step carries the whole prompt, later steps
        # what was appended since (tool results), so a long turn does not store n² messages.
        sent_before = state.traced
        state.traced = len(state.messages)
        await recorder.emit("step.started", {
            "step": turn.step_count, "max_steps": self.max_steps if turn.execution == "agent" else None,
            "mode": state.mode, "messages_from": sent_before, "messages": state.messages[sent_before:],
            "tools": [t["function"]["name"] for t in tools or []],
        })
        reply = await self.llm.stream_chat(messages=state.messages, tools=tools, on_delta=recorder.delta)
        turn.prompt_tokens += reply.prompt_tokens
        turn.completion_tokens += reply.completion_tokens
        calls = [{"id": c.id, "name": c.name, "arguments": c.arguments} for c in reply.tool_calls]
        # Written with the turn's counters; deferred when tool calls follow (tool.called writes both).
        counters = dict(step_count=turn.step_count, prompt_tokens=turn.prompt_tokens,
                        completion_tokens=turn.completion_tokens)
        await recorder.emit("model.message", defer=bool(calls), turn_fields=counters, payload={
            "step": turn.step_count, "content": reply.content, "tool_calls": calls,
            "finish_reason": reply.finish_reason,
            "usage": {"prompt_tokens": reply.prompt_tokens, "completion_tokens": reply.completion_tokens,
                      "turn_total": turn.prompt_tokens + turn.completion_tokens},
        })
        assistant: dict[str, Any] = {"role": "assistant", "content": reply.content or None}
        if calls:
            assistant["tool_calls"] = [
                {"id": c["id"], "type": "function", "function": {"name": c["name"], "arguments": c["arguments"]}}
                for c in calls
            ]
        state.messages.append(assistant)
        return reply

    # --- tools ------------------------------------------------------------------------------

    async def _run_tool_calls(self, turn: Turn, recorder: EventRecorder, state: RunState, reply: ModelReply) -> None:
        session = turn.session
        for call in reply.tool_calls:
            kind = state.kinds.get(call.name)
            await recorder.emit("tool.called", {
                "id": call.id, "name": call.name, "arguments": call.arguments, "kind": kind or "unknown",
            })
            if kind == "client":
                state.pending.append({"id": call.id, "name": call.name, "arguments": call.arguments})
                continue
            context = ToolContext(session_id=session.id, org=session.team, user=session.user,
                                  turn_id=turn.id, tool_call_id=call.id)
            started = time.monotonic()
            result = await self._execute(call.name, kind, call.arguments, context, state)
            duration_ms = round((time.monotonic() - started) * 1000, 1)
            content = result.content_for_model()
            state.messages.append({"role": "tool", "tool_call_id": call.id, "content": content})
            state.tool_outputs.append({"name": call.name, "ok": result.successful, "content": content})
            payload = {"id": call.id, "name": call.name, "ok": result.successful, "duration_ms": duration_ms}
            if result.successful:
                payload["result"] = (result.result or "")[:RESULT_TRACE_LIMIT]
            else:
                payload["error"] = result.error_message
            await recorder.emit("tool.result", payload, defer=True)  # the next event writes it too
            if call.name == ModeChangeTool.TOOL_NAME and result.successful:
                await self._mode_changed(recorder, state, result)

    async def _execute(self, name: str, kind: str | None, arguments: str, context: ToolContext,
                       state: RunState) -> InvokeResult:
        if kind is None:
            offered = ", ".join(n for n in state.kinds) or "none"
            return InvokeResult.from_error(f"Unknown tool '{name}'. Tools available in this turn: {offered}.")
        if arguments and arguments.strip():
            try:
                json.loads(arguments)
            except ValueError as exc:
                return InvokeResult.from_error(f"The arguments for tool '{name}' are not valid JSON ({exc}).")
        tool = self.tools.get(name) if kind == "internal" else resolve_mcp_tool(name)
        if tool is None:
            return InvokeResult.from_error(f"Tool '{name}' is unavailable right now (its server is down).")
        try:
            result = await tool.execute(arguments or "{}", context)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # noqa: BLE001 - one failing tool does not lose the others
            self.admin_logger.add_exception(exc, "Reasoner.ToolFailed", tool=name, turn_id=context.turn_id)
            return InvokeResult.from_error(f"Tool '{name}' failed unexpectedly.")
        if not isinstance(result, InvokeResult):
            return InvokeResult.from_error(f"Tool '{name}' returned no result.")
        return result

    async def _mode_changed(self, recorder: EventRecorder, state: RunState, result: InvokeResult) -> None:
        """AGN-011 §5: the tool already persisted the change (one ModeHistory row); here the in-flight
        mode follows it and the change is surfaced. The tool list stays as it is until next turn."""
        data = json.loads(result.result or "{}")
        change = {
            "previousMode": data.get("previousMode"), "newMode": data.get("newMode") or data.get("mode"),
            "reason": data.get("reason", ""), "branch": bool(data.get("branch")),
        }
        state.mode_changes.append(change)
        state.mode = change["newMode"]
        system = state.messages[0]
        if system.get("role") == "system":
            system["content"] = CURRENT_MODE_RE.sub(f"Current mode: {state.mode}", system["content"], count=1)
        await recorder.emit("mode.changed", change, defer=True)

    # --- endings ----------------------------------------------------------------------------

    def _ask_answer(self, state: RunState, content: str = "") -> str:
        parts = [content.strip()] if content and content.strip() else []
        for output in state.tool_outputs:
            parts.append(summarize_tool_output(output))
        return "\n\n".join(p for p in parts if p)

    async def _complete(self, turn: Turn, recorder: EventRecorder, state: RunState, answer: str) -> None:
        await self._finish(turn, recorder, state, Turn.Status.COMPLETED, "turn.completed", {}, answer=answer)

    async def _finish(self, turn: Turn, recorder: EventRecorder, state: RunState | None, status: str,
                      event_type: str, payload: dict, *, answer: str = "", error: str = "") -> None:
        changes = state.mode_changes if state else []
        if len(changes) > 1:
            logger.warning("Turn %s changed mode %d times; the last successful change wins (%s).",
                           turn.id, len(changes), changes[-1]["newMode"],
                           extra={"event": "reasoner.multiple_mode_changes", "turn_id": turn.id})
        turn.status = status
        turn.answer = answer
        turn.error = error
        turn.response_mode = state.mode if state else turn.mode
        turn.finished_at = timezone.now()
        turn.state = {"mode_changes": changes}
        fields = {name: getattr(turn, name) for name in (
            "status", "answer", "error", "response_mode", "finished_at", "state",
            "step_count", "prompt_tokens", "completion_tokens")}
        branch = next((c for c in reversed(changes) if c["branch"]), None)
        await recorder.emit(event_type, turn_fields=fields, payload={
            **payload, "status": status, "answer": answer, "mode": turn.response_mode,
            "mode_changes": changes,
            "branch": {"mode": branch["newMode"], "reason": branch["reason"]} if branch else None,
            "usage": {"prompt_tokens": turn.prompt_tokens, "completion_tokens": turn.completion_tokens},
            "steps": turn.step_count,
        })
        await recorder.drain()


@dataclass
class LoadedRun:
    turn: Turn
    mode: AgentMode | None  # the turn's mode in the catalog (None if deleted since)
    history: list[dict]  # earlier turns of the session as chat messages
    last_seq: int  # the turn's last event so far (a continued turn carries on from it)


@sync_to_async
def _load_run(turn_id: str) -> LoadedRun:
    """Everything a run reads before its first model call, in one trip to the database thread."""
    turn = Turn.objects.select_related("session__team", "session__user").get(pk=turn_id)
    last_seq = 0
    if turn.status != Turn.Status.QUEUED:  # a queued turn has no events yet
        last_seq = turn.events.aggregate(m=Max("seq"))["m"] or 0
    if turn.status == Turn.Status.REQUIRES_ACTION:
        return LoadedRun(turn=turn, mode=None, history=[], last_seq=last_seq)
    previous = Turn.objects.filter(
        session_id=turn.session_id, index__lt=turn.index,
        status__in=[Turn.Status.COMPLETED, Turn.Status.LIMIT_REACHED],
    ).order_by("-index").only("user_message", "answer")[:HISTORY_TURNS] if turn.index > 1 else []
    history: list[dict] = []
    for past in reversed(list(previous)):
        history.append({"role": "user", "content": past.user_message})
        history.append({"role": "assistant", "content": past.answer or "(no answer)"})
    return LoadedRun(turn=turn, mode=AgentMode.objects.filter(key=turn.mode).first(), history=history,
                     last_seq=last_seq)


def summarize_tool_output(output: dict) -> str:
    """How an Ask answer shows a tool result when there is no follow-up model call."""
    name, content = output["name"], output["content"]
    if not output["ok"]:
        try:
            message = json.loads(content).get("error", content)
        except (ValueError, AttributeError):
            message = content
        return f"**{name}** failed: {message}"
    try:
        data = json.loads(content)
    except ValueError:
        data = None
    if isinstance(data, dict):
        if "url" in data and name == "image_gen":
            return f"![{data.get('alt', 'image')}]({data['url']})"
        if name == ModeChangeTool.TOOL_NAME:
            line = f"Mode changed: {data.get('previousMode')} → {data.get('newMode')}."
            return line + (" Continue in a new session in that mode." if data.get("branch") else "")
        if "modes" in data:
            return "\n".join(
                f"- **{m.get('displayName')}** (`{m.get('key')}`) — {m.get('description')}" for m in data["modes"]
            )
    text = content if len(content) < 2000 else content[:2000] + "…"
    return f"```\n{text}\n```"
