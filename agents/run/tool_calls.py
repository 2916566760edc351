"""The tool calls of a model reply: each is recorded, then run now, left to the API client (client
tools), or held for the user's approval (agents/approvals.py decides which); and, when the turn
resumes after the user decided, the held calls run or reach the model as declined."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable
from typing import Any

from asgiref.sync import sync_to_async
from django.conf import settings

from aptix import metrics
from tools.base import CallContext, ChangesMode, DocumentWritten, InvokeResult, ModeChanged, WritesDocument
from tools.mcp import Asker, InputPause, Resume, ServerPort, TaskWatch
from tools.registry import ToolRegistry, internal_tool

from .. import turns
from ..approvals import (
    DECLINED_CONNECT,
    DECLINED_MODE_CHANGE,
    DENIED_TOOL,
    Kind,
    approval_kind,
    with_branch,
)
from ..events.payloads import DocumentUpdated, ToolResult, ToolTask
from ..events.writer import TurnWrite
from ..models import ToolApproval, Turn
from ..state import ModeChange, OpenTask, PausedState, PendingApproval, PendingCall
from .asking import QuestionClosed, asking_for, question_cut_close, question_paused, resume_of
from .context import MIN_RESULT_CHARS, TokenCounter, budgeted, result_room
from .pipeline import MCP_SEPARATOR, with_current_mode
from .progress import ProgressRelay, TaskRelay
from .run import Call, Run, call_key
from .spans import tool_outcome, tool_span
from .toolsearch import found_by, offer_tools, per_turn_tool

Progress = Callable[[float, float | None, str | None], None]

TOOL_STOPPED = "The turn was stopped while this tool ran; it may or may not have finished."
REPEAT_NOTE = "\n\n[Already called in this turn with the same arguments: this is that result. Use it.]"


class ToolCalls:
    """Runs a reply's tool calls for the reasoner, with the internal tools and the MCP registry."""

    def __init__(self, *, tools: Any, mcp: ToolRegistry, admin_logger: Any) -> None:
        self.tools = tools
        self.mcp = mcp
        self.admin_logger = admin_logger

    async def run_reply(self, run: Run, calls: list[Call]) -> None:
        """Record each call; run it, or add it to the state's `pending` (client tools) or
        `awaiting` (the user must approve it first)."""
        state = run.paused_state
        repeats = 0
        for index, call in enumerate(calls):
            run.rest = calls[index + 1 :]  # what a resume after a task runs next (resume_task)
            kind = state.kinds.get(call.name)
            if kind is None and call.name in state.on_demand:  # allowed, named without a search: offer it
                kind = "mcp" if offer_tools(state, [call.name], self.mcp) else None
            called = {"id": call.id, "name": call.name, "arguments": call.arguments, "kind": kind or "unknown"}
            await run.recorder.emit("tool.called", called)
            if kind == "client":
                state.pending.append({"id": call.id, "name": call.name, "arguments": call.arguments})
            elif (earlier := self._earlier_result(run, call, kind)) is not None:
                repeats += 1
                await self._record(run, call, InvokeResult.create(earlier + REPEAT_NOTE), 0.0, repeat=True)
            elif (waiting := await self._connect_needed(run, call, kind)) or (
                waiting := self._approval_needed(run, call, kind)
            ):
                state.awaiting.append(waiting)
            else:
                await self._call(run, call, kind)
        # consecutive replies that only repeated earlier calls: the loop stops at APTIX_MAX_REPEATS
        state.repeats = state.repeats + 1 if calls and repeats == len(calls) else 0

    def _earlier_result(self, run: Run, call: Call, kind: str | None) -> str | None:
        """What the model got for the same call (tool and canonical arguments) earlier in this turn,
        unless the tool says it is not idempotent and may change something (a second call means a
        second effect: it runs)."""
        entry = self.mcp.get(call.name) if kind == "mcp" else None
        annotations = getattr(entry, "annotations", None)
        if annotations is not None and annotations.idempotent_hint is False and not getattr(entry, "read_only", False):
            return None
        return run.paused_state.seen_calls.get(call_key(call.name, call.arguments))

    async def resume_approved(self, run: Run) -> None:
        """The user decided every held call: run the approved ones, tell the model of the others."""
        state = run.paused_state
        decisions = await _decisions(run.turn, [c["id"] for c in state.awaiting])
        held, state.awaiting = state.awaiting, []
        for index, waiting in enumerate(held):
            # A task resumed after a restart asks again about the calls decided after it (resume_task).
            run.rest = [Call(w["id"], w["name"], w["arguments"]) for w in held[index + 1 :]]
            row = decisions.get(waiting["id"])
            call = Call(waiting["id"], waiting["name"], waiting["arguments"])
            if waiting["kind"] == Kind.ELICITATION and row is not None:  # a paused call: sent again, answered
                again = Call(row.request["resume"]["call"], call.name, call.arguments)
                await self._call(run, again, "mcp", answered=resume_of(row))
            elif row is not None and row.decision == ToolApproval.Decision.APPROVED:
                if waiting["kind"] == Kind.MODE_CHANGE:
                    call = Call(call.id, call.name, with_branch(call.arguments, row.branch))
                await self._call(run, call, state.kinds.get(call.name))
            else:
                declined = {"mode_change": DECLINED_MODE_CHANGE, "connect": DECLINED_CONNECT}.get(
                    waiting["kind"], DENIED_TOOL
                )
                metrics.tool_call(call.name, state.kinds.get(call.name), "declined")
                await self._record(run, call, InvokeResult.from_error(declined), 0.0)

    async def _connect_needed(self, run: Run, call: Call, kind: str | None) -> PendingApproval | None:
        """A call of a server that acts as each user, whose user has not given it their credentials
        yet: it waits (durably, as an approval does) until they connect or decline."""
        port = self._server(call.name) if kind == "mcp" else None
        if port is None or not port.per_user:
            return None
        missing = await sync_to_async(port.missing_credentials)(run.turn.session.user_id)
        if not missing:
            return None
        return {
            "id": call.id,
            "name": call.name,
            "arguments": call.arguments,
            "kind": Kind.CONNECT,
            "server": port.name,
            "annotations": {},
            "reason": f"needs your {', '.join(missing)}",
        }

    def _approval_needed(self, run: Run, call: Call, kind: str | None) -> PendingApproval | None:
        state = run.paused_state
        entry = self.mcp.get(call.name) if kind == "mcp" else None
        approval = approval_kind(
            name=call.name,
            kind=kind,
            arguments=call.arguments,
            current_mode=state.mode,
            policy=run.approval_policy,
            grants=[*(run.turn.session.approval_grants or []), *(run.turn.grants or [])],
            choice=run.turn.choice,
            read_only=bool(getattr(entry, "read_only", False)),
            hold_mode_changes=run.turn.session.catalog_test,
        )
        if approval is None:
            return None
        return {
            "id": call.id,
            "name": call.name,
            "arguments": call.arguments,
            "kind": approval,
            "server": call.name.partition(MCP_SEPARATOR)[0] if kind == "mcp" else "",
            "annotations": _annotations(entry),
            "reason": _reason(call.arguments) if approval == Kind.MODE_CHANGE else "",
        }

    async def resume_task(self, run: Run, task: OpenTask) -> None:
        """A run resumed after the process that ran it died while an MCP server ran one of its calls
        as a task (an HTTP server keeps it): follow that task by its id rather than call the tool
        again, then run the rest of that reply's calls."""
        await self._call(run, Call(**task.call), task.kind, resume=task.task_id, resume_session=task.session)
        if rest := [Call(**c) for c in task.rest]:
            await self.run_reply(run, rest)

    def _task_saved(self, run: Run, call: Call, kind: str | None, rest: list[Call]) -> Any:
        """What the first status of a call's task writes with it: the run's state and the task, so the
        sweep can hand the turn to another process if this one dies (agents/run/runners.py)."""

        async def saved(payload: ToolTask, session: str) -> TurnWrite:
            task = OpenTask(
                call=_pending(call),
                kind=kind,
                task_id=payload["taskId"],
                session=session,
                server=payload["server"],
                resumable=payload["resumable"],
                resumes=run.resumes,
                rest=[_pending(c) for c in rest],
            )
            return turns.task_state({**run.paused_state.to_json(), "task": task.to_json()})

        return saved

    async def _call(
        self,
        run: Run,
        call: Call,
        kind: str | None,
        *,
        resume: str = "",
        resume_session: str = "",
        answered: Resume | None = None,
    ) -> None:
        """Run the call (`resume`: follow that task of its server instead, in `resume_session`, the MCP
        session it was created in; `answered`: a call paused on its server's question, sent again with
        the answer)."""
        session = run.turn.session
        started = time.monotonic()
        with tool_span(call.name, call.id, kind, call.arguments) as span:
            try:
                port = self._server(call.name) if kind == "mcp" else None
                tasks = TaskRelay(
                    run.recorder,
                    call.id,
                    call.name,
                    server=call.name.partition(MCP_SEPARATOR)[0] if kind == "mcp" else "",
                    resumable=port is not None and port.transport not in (None, "stdio"),
                    on_created=self._task_saved(run, call, kind, run.rest),
                )
                async with ProgressRelay(run.recorder, call.id, call.name) as progress, tasks:
                    # Its MCP server may ask the user (asking.py), or run the call as a task (tasks.py); a
                    # server that acts as each user serves it over the turn's user's connection (userpool.py).
                    context = CallContext(
                        session_id=session.id,
                        org=session.team,
                        user=session.user,
                        turn_id=run.turn.id,
                        tool_call_id=call.id,
                        knowledge_projects=tuple(run.knowledge_projects),
                        asker=Asker.here(asking_for(run, call), durable=True),
                        watch=TaskWatch(tasks.report, resume=resume, resume_session=resume_session),
                        resume=answered,
                    )
                    result = await self._execute(call, kind, context, run.paused_state, progress.report)
                if run.question_cut:
                    await question_cut_close(run, result)
                if run.ended_while_asking:
                    raise QuestionClosed
            except InputPause as pause:  # the turn waits for the answer like an approval; no result yet
                await question_paused(run, call, pause)
                return
            except asyncio.CancelledError:
                # Stopped while the tool ran: it may have had its effect, so the audit keeps its result
                # (the turn's end, written next, takes it along).
                tool_outcome(span, None)
                elapsed = round((time.monotonic() - started) * 1000, 1)
                metrics.tool_call(call.name, kind, "stopped", elapsed / 1000)
                await self._record(run, call, InvokeResult.from_error(TOOL_STOPPED), elapsed, stopped=True)
                raise
            tool_outcome(span, result)
        elapsed = time.monotonic() - started
        metrics.tool_call(call.name, kind, "ok" if result.successful else "error", elapsed)
        # A task's saved state goes with its result: nothing is left for a resume to follow.
        done = turns.task_state(None) if tasks.task_id else None
        await self._record(run, call, result, round(elapsed * 1000, 1), turn_write=done)
        if result.successful:  # what the tool declares it does to the run (tools/base.py), never its name
            await self._declared_effects(run, call, kind, result.result or "")

    async def _record(
        self,
        run: Run,
        call: Call,
        result: InvokeResult,
        duration_ms: float,
        *,
        repeat: bool = False,
        stopped: bool = False,
        turn_write: TurnWrite | None = None,
    ) -> None:
        state = run.paused_state
        full = result.content_for_model()
        limit = settings.APTIX_TOOL_RESULT_CHARS
        if run.llm is not None and len(full) > MIN_RESULT_CHARS:  # cut to what the context has room for
            run.counter = run.counter or TokenCounter(run.llm.model)
            limit = result_room(state, run.counter, run.llm.context_tokens, full, limit)
        content = budgeted(full, limit)
        if not repeat:
            state.seen_calls.setdefault(call_key(call.name, call.arguments), content)
        message: dict[str, Any] = {"role": "tool", "tool_call_id": call.id, "content": content}
        attachments = [a.payload() for a in getattr(result, "attachments", ()) if result.successful]
        if images := [a for a in attachments if a["kind"] == "image" and a.get("path")]:
            # agents/llm/images.py shows them to a vision model (and drops the key for any other)
            message["images"] = [{"path": a["path"], "mime": a["mime"], "url": a["url"]} for a in images]
        state.messages.append(message)
        state.tool_outputs.append({"name": call.name, "ok": result.successful, "content": content})
        for label, link in result.citations if result.successful else ():
            if [label, link] not in state.citations:
                state.citations.append([label, link])
        payload: ToolResult = {"id": call.id, "name": call.name, "ok": result.successful, "duration_ms": duration_ms}
        if result.successful:
            payload["result"] = (result.result or "")[: settings.APTIX_TOOL_RESULT_STORE_CHARS]
            payload["size"] = len(result.result or "")
        if attachments:
            payload["attachments"] = attachments
            payload["text"] = str(getattr(result, "text", ""))[: settings.APTIX_TOOL_RESULT_STORE_CHARS]
        else:
            payload["error"] = result.error_message
        if content != full:
            payload["cut_for_model"] = limit
        if repeat:
            payload["repeat"] = True
        if stopped:
            payload["stopped"] = True
        if result.view is not None and "server" in result.view:  # an MCP App's, whole (tools/mcp/entry.py)
            payload["app"] = result.view
        await run.recorder.emit(
            "tool.result", payload, defer=True, turn_write=turn_write
        )  # the next event writes it too

    def _server(self, name: str) -> ServerPort | None:
        """The MCP server of tool `name` as this process runs it (transport, per-user, waiting for it
        to start): its entry's, or, for a server still starting whose tools are not listed yet, the
        registry's."""
        entry = self.mcp.get(name)
        return getattr(entry, "server_port", None) or self.mcp.server(name.partition(MCP_SEPARATOR)[0])

    async def _when_started(self, name: str, on_progress: Progress) -> Any:
        """MCP tool `name` once its server is up, if the server is starting now (the tool card says
        so meanwhile); else None."""
        port = self._server(name)
        if port is None or not port.starting():
            return None
        on_progress(0, None, f'Waiting for the MCP server "{port.name}" to start')
        return self.mcp.get(name) if await port.wait_ready() else None

    async def _execute(
        self, call: Call, kind: str | None, context: CallContext, state: PausedState, on_progress: Progress
    ) -> InvokeResult:
        name, arguments = call.name, call.arguments
        if kind is None:
            offered = ", ".join(n for n in state.kinds) or "none"
            return InvokeResult.from_error(f"Unknown tool '{name}'. Tools available in this turn: {offered}.")
        if arguments and arguments.strip():
            try:
                json.loads(arguments)
            except ValueError as exc:
                return InvokeResult.from_error(f"The arguments for tool '{name}' are not valid JSON ({exc}).")
        tool = self.tools.get(name) if kind == "internal" else self.mcp.get(name)
        if tool is None and kind == "internal":  # built per turn (a search's catalog, the servers to read)
            tool = per_turn_tool(name, state, self.mcp)
        if tool is None and kind != "internal":  # its server may still be starting (resumed after a restart)
            tool = await self._when_started(name, on_progress)
        if tool is None:
            return InvokeResult.from_error(f"Tool '{name}' is unavailable right now (its server is down).")
        try:
            if (with_progress := getattr(tool, "execute_with_progress", None)) is not None:
                result = await with_progress(arguments or "{}", context, on_progress)  # MCP tools
            else:
                result = await tool.execute(arguments or "{}", context)
        except (asyncio.CancelledError, InputPause):
            raise
        except Exception as exc:  # noqa: BLE001 - one failing tool does not lose the others
            self.admin_logger.add_exception(exc, "Reasoner.ToolFailed", tool=name, turn_id=context.turn_id)
            return InvokeResult.from_error(f"Tool '{name}' failed unexpectedly.")
        if not isinstance(result, InvokeResult):
            return InvokeResult.from_error(f"Tool '{name}' returned no result.")
        return result

    async def _declared_effects(self, run: Run, call: Call, kind: str | None, result: str) -> None:
        """A successful call's effects on the run, as its tool declares them: the mode it changed, the
        document version it wrote, the tools it found (offered from the next step on)."""
        tool = internal_tool(call.name) if kind == "internal" else None
        if isinstance(tool, ChangesMode) and (change := tool.mode_changed(result)) is not None:
            await self._mode_changed(run, change)
        if isinstance(tool, WritesDocument) and (written := tool.document_written(call.arguments, result)) is not None:
            await self._document_updated(run, written)
        if kind == "internal" and (found := found_by(call.name, result)):
            offer_tools(run.paused_state, found, self.mcp)

    async def _mode_changed(self, run: Run, changed: ModeChanged) -> None:
        """AGN-011 §5: the tool already persisted the change (one ModeHistory row); here the in-flight
        mode follows it and the change is surfaced. The tool list stays as it is until next turn."""
        state = run.paused_state
        change: ModeChange = {
            "previousMode": changed["previousMode"],
            "newMode": changed["newMode"],
            "reason": changed["reason"],
            "branch": changed["branch"],
        }
        state.mode_changes.append(change)
        if not change["branch"]:  # a branch goes on in a new session: this one keeps its mode
            state.mode = change["newMode"]
            system = state.messages[0]
            if system.get("role") == "system":
                system["content"] = with_current_mode(system["content"], state.mode)
        await run.recorder.emit("mode.changed", change, defer=True)

    async def _document_updated(self, run: Run, written: DocumentWritten) -> None:
        """The timeline's "Document … updated" card, and the open panels follow the new version."""
        payload: DocumentUpdated = {
            "documentId": written.get("documentId", ""),
            "title": written.get("title", ""),
            "version": written.get("version", 0),
            "author": "agent",
        }
        if summary := written.get("summary"):
            payload["summary"] = summary
        await run.recorder.emit("document.updated", payload, defer=True)


def _pending(call: Call) -> PendingCall:
    return {"id": call.id, "name": call.name, "arguments": call.arguments}


@sync_to_async
def _decisions(turn: Turn, call_ids: list[str]) -> dict[str, ToolApproval]:
    return {row.tool_call_id: row for row in ToolApproval.objects.filter(turn=turn, tool_call_id__in=call_ids)}


def _annotations(entry: Any) -> dict[str, Any]:
    annotations = getattr(entry, "annotations", None)
    if annotations is None:
        return {}
    dump = getattr(annotations, "model_dump", None)
    return {k: v for k, v in (dump(by_alias=True) if dump else {}).items() if v is not None}


def _reason(arguments: str) -> str:
    return _argument(arguments, "reason")


def _argument(arguments: str, name: str) -> str:
    """A string argument of a call, stripped ("" when absent or not a string)."""
    try:
        args = json.loads(arguments or "{}")
    except ValueError:
        return ""
    value = args.get(name) if isinstance(args, dict) else None
    return value.strip() if isinstance(value, str) else ""
