"""Ask and Agent loops (spec 004 §3, §6) with AGN-011's mode handling (§5).

Ask: one model call; internal tool calls in that reply run; no second call unless the mode's
Ask follow-up, else the model's `askFollowup`, else APTIX_ASK_FOLLOWUP allows it (`ask_followup`).
Agent: model → tools → results → model until a reply has no tool calls, the step limit, the token
budget, or a cancel. Every step is recorded as events (agents/events). Each step returns a typed
outcome (agents/run/outcomes.py); the run's ending is turned into the turn's end status by
agents/turns.py.
"""

from __future__ import annotations

import asyncio
import logging
from functools import partial
from typing import Any

from asgiref.sync import sync_to_async
from django.conf import settings
from django.utils import timezone

from aptix import logcontext, metrics
from aptix.logging import admin_logger
from modes.catalog import catalog_drafts_applied, catalog_team
from modes.models import AgentMode
from tools.registry import ToolRegistry, mcp_registry

from .. import turns
from ..approvals import approvals_request
from ..events import EventRecorder
from ..events.payloads import ModelMessage, final_payload
from ..llm import LLMClient, ModelError, ModelReply, get_llm_client
from ..llm.catalog import ModelsConfigError, model_for, models_config_problem
from ..llm.text_calls import text_tool_calls
from ..models import Turn
from ..state import PausedState
from .answers import ask_answer, ask_followup, with_sources
from .asking import QuestionClosed
from .attached import turn_message
from .context import TokenCounter, context_budget, documents_context, fit_request, load_history
from .limits import FINAL_REQUEST, NUDGE, limit_hit, plain_answer
from .loading import LoadedRun, load_run
from .metering import meter_start, meter_step, quota_message
from .outcomes import (
    Ending,
    Failed,
    FinalAnswer,
    LimitReached,
    PausedForApproval,
    PausedForClientTools,
    RunAgain,
    RunOutcome,
    StepOutcome,
    Stopped,
)
from .pipeline import ToolSelection, build_system_prompt, mcp_instructions, select_tools
from .run import AfterClientTools, AfterDecisions, Call, FollowTask, Run, start_of
from .tool_calls import ToolCalls
from .toolbox import build_internal_tools
from .toolsearch import remembered_tools
from .trace import prefix_size, turn_trace_fields

logger = logging.getLogger("aptix.reasoner")

ERROR_INTERNAL = "Something went wrong while running this turn. The error was logged for the administrators."
ERROR_MODELS = "This deployment's models configuration cannot be used; the administrators can see why in the admin."


class Reasoner:
    def __init__(
        self,
        *,
        llm: LLMClient | None = None,
        session_manager: Any = None,
        logger: Any = None,
        max_steps: int | None = None,
        token_budget: int | None = None,
        ask_followup: bool | None = None,
        image_remote: Any = None,
        mcp: ToolRegistry | None = None,
    ) -> None:
        self.ended_here = False  # whether this run wrote its turn's end (runners.Runner._keep_alive)
        self.stopping = False  # whether a Stop reached it (it is writing its end): no second cancel
        self.llm_override = llm  # tests hand in a scripted model; otherwise each turn's model (catalog.py)
        self.llm = llm or get_llm_client()
        self.max_steps = max_steps or settings.APTIX_MAX_STEPS
        self.token_budget = token_budget or settings.APTIX_TOKEN_BUDGET
        self.ask_followup = ask_followup  # None: each turn's mode and model decide (ask_followup below)
        self.admin_logger = logger or admin_logger
        self.mcp = mcp if mcp is not None else mcp_registry  # handed in by the runner
        if image_remote is None and not self.llm.is_offline:
            image_remote = self.llm.generate_image  # a real provider draws with its Images API
        self.tools = build_internal_tools(
            session_manager=session_manager, logger=self.admin_logger, image_remote=image_remote
        )
        self.calls = ToolCalls(tools=self.tools, mcp=self.mcp, admin_logger=self.admin_logger)

    # --- entry point ------------------------------------------------------------------------

    async def run(
        self, turn_id: str, *, client_tools: list[dict] | None = None, tool_results: list[dict] | None = None
    ) -> Turn:
        """Run (or continue) a turn to its end state. Never raises for model or tool failures."""
        loaded = await load_run(turn_id)
        turn = loaded.turn
        logcontext.bind(turn_id=turn.id, session_id=turn.session_id, user_id=turn.session.user_id)
        catalog_team.set(turn.session.team_id)  # this run's task: the offline model proposes from its catalog
        # and everything the run reads of the catalog (tools, proposals, mode changes) is the published
        # one, or, for a catalog test over the drafts, the catalog with its drafts applied
        catalog_drafts_applied.set(turn.session.catalog_drafts)
        if turn.is_finished:  # ended before it got here (cancelled while queued, ended as an orphan)
            return turn
        spec = model_for(session_model=turn.session.model, mode_model=loaded.mode.model if loaded.mode else "")
        run = Run(
            turn=turn,
            recorder=EventRecorder(turn, start_seq=loaded.last_seq),
            llm=self.llm_override or get_llm_client(spec),
            spec=spec,
            start=start_of(turn),
        )
        run.recorder.first_token = metrics.first_token_timer(spec.key)
        await meter_start(run)
        run.ask_followup = ask_followup(self.ask_followup, loaded.mode, spec)
        run.approval_policy = list(loaded.mode.approval_policy or []) if loaded.mode else []
        run.knowledge_projects = loaded.knowledge_projects
        if isinstance(run.start, AfterDecisions | AfterClientTools) and not await turns.turn_resume(turn):
            # Ended while this run was on its way (a cancel, a new message): it owns nothing any more,
            # so nothing runs and nothing is written; the turn's end event was the last.
            logger.info("Turn %s ended before its run resumed it", turn.id, extra={"event": "runs.resume_lost"})
            return turn
        try:
            if (models := models_config_problem()) is not None and not models[1]:
                raise ModelsConfigError(models[0])  # no good configuration to run on: fail, saying so
            if isinstance(run.start, AfterClientTools):
                run.state = self._continue_state(turn, tool_results or [])
            elif isinstance(run.start, AfterDecisions | FollowTask):
                run.state = PausedState.from_json(turn.state)
            else:
                metrics.turn_started(execution=turn.execution, mode=turn.mode, model=spec.key)
                run.state = await self._start(run, loaded, client_tools)
            await self._end(run, await self._loop(run))
        except asyncio.CancelledError:
            self.stopping = True
            current = asyncio.current_task()
            if current is not None:
                current.uncancel()
            await self._stopped(run)
        except QuestionClosed:  # the turn's end is written already (asking.py): nothing more is
            logger.info("Turn %s ended while an MCP server's question waited", turn.id)
        except ModelsConfigError:
            await self._end(run, Failed(message=ERROR_MODELS, kind="config"))
        except ModelError as exc:  # a cut-off answer keeps what arrived, as a failed turn's partial answer
            await self._end(run, Failed(message=str(exc), kind=exc.kind, answer=exc.partial))
        except Exception as exc:  # noqa: BLE001 - a turn never stays running
            self.admin_logger.add_exception(exc, "Reasoner.Run", turn_id=turn.id, session_id=turn.session_id)
            await self._end(run, Failed(message=ERROR_INTERNAL, kind="internal"))
        return turn

    async def _stopped(self, run: Run) -> None:
        """The run was cancelled (a Stop): its end says so, unless it wrote its end already (a Stop
        landing while it broadcast that end changes nothing)."""
        if not self.ended_here:
            await self._end(run, Stopped(answer=run.recorder.streamed))

    # --- set-up -----------------------------------------------------------------------------

    async def _start(self, run: Run, loaded: LoadedRun, client_tools: list[dict] | None) -> PausedState:
        turn = run.turn
        mode = loaded.mode
        if mode is None:  # deleted from the catalog since: run with an empty prompt layer
            mode = AgentMode(key=turn.mode, display_name=turn.mode, description="", tool_policy=[])
        select = partial(
            select_tools,
            policy=mode.tool_policy,
            toggles=turn.session.tool_toggles,
            execution=turn.execution,
            client_tools=client_tools,
            mcp=self.mcp,
            context_tokens=run.llm.context_tokens,
            session_has_files=loaded.has_files,
            knowledge=bool(loaded.knowledge_projects),
        )
        selection = select()
        if selection.on_demand and (remembered := await remembered_tools(turn.session_id, turn.index)):
            selection = select(remembered=remembered)  # what earlier searches found, while it fits
        if not run.llm.supports_tools:  # the models configuration says so: no tool goes out
            selection = ToolSelection(allowed=selection.allowed, left_out=selection.names)
        if selection.left_out:
            logger.warning(
                "Turn %s: %d tools allowed, %d offered (APTIX_MAX_TOOLS); left out: %s",
                turn.id,
                selection.allowed,
                len(selection.kinds),
                ", ".join(selection.left_out),
                extra={"event": "pipeline.tool_budget", "turn_id": turn.id, "left_out": selection.left_out},
            )
        counter = self._counter(run)
        system_prompt = build_system_prompt(
            mode=mode,
            execution=turn.execution,
            selection=selection,
            instructions=mcp_instructions(selection),
            project_instructions=loaded.project_instructions,
        )
        if loaded.has_documents:  # the session's documents as they are now (a user's edit included)
            system_prompt += await documents_context(turn.session_id, counter, context_budget(run.llm.context_tokens))
        system = {"role": "system", "content": system_prompt}
        current = await turn_message(turn, vision=run.llm.vision)  # and its files and MCP resources
        fixed = counter.tools(selection.schemas) + counter.messages([system, current])
        history = await load_history(turn, counter, max(context_budget(run.llm.context_tokens) - fixed, 0))
        messages = [system, *history.messages, current]
        # Written with turn.started (the run holds the turn: nothing reads its status meanwhile
        # but the orphan check, which knows the run's task), and with it the trace every step shares
        # (system prompt, tool schemas, earlier turns by reference: trace.py), stored once per turn.
        write = turns.started(model_label=run.llm.label)
        write.fields["trace"] = turn_trace_fields(
            system_prompt=system_prompt,
            tools=selection.schemas,
            history=history,
            mode_version=loaded.mode_version,  # None: the mode was deleted
            mode_draft=loaded.draft,
        )
        turns.apply_locally(turn, write)
        await run.recorder.emit(
            "turn.started",
            defer=True,
            turn_write=write,
            payload={
                "mode": turn.mode,
                "execution": turn.execution,
                "model": run.llm.label,
                "max_steps": self.max_steps if turn.execution == "agent" else 1,
                "tool_kinds": selection.kinds,
                "tools_allowed": selection.allowed,
                "tools_left_out": selection.left_out,
                "tools_on_demand": selection.on_demand,
                "tools_unsupported": not run.llm.supports_tools,
                "history": {
                    "turns_sent": len(history.sizes),
                    "turns_dropped": history.dropped,
                    "tokens": history.tokens,
                    "exact": counter.exact,
                },
            },
        )
        return PausedState(
            messages=messages,
            tools=selection.schemas,
            kinds=selection.kinds,
            mode=turn.mode,
            history_sizes=history.sizes,
            traced=prefix_size(history),  # the system prompt and earlier turns are in Turn.trace
            on_demand=selection.on_demand,
        )

    def _continue_state(self, turn: Turn, tool_results: list[dict]) -> PausedState:
        state = PausedState.from_json(turn.state)
        given = {r["toolCallId"]: r["content"] for r in tool_results}
        for call in state.pending:
            state.messages.append({"role": "tool", "tool_call_id": call["id"], "content": given[call["id"]]})
            state.tool_outputs.append({"name": call["name"], "ok": True, "content": given[call["id"]]})
        state.pending = []
        return state

    # --- the loop ---------------------------------------------------------------------------

    async def _loop(self, run: Run) -> RunOutcome:
        start = run.start  # resumed in run(), before anything was written
        if isinstance(start, AfterDecisions | FollowTask):
            if isinstance(start, FollowTask):
                await self.calls.resume_task(run, start.task)
            else:
                await self.calls.resume_approved(run)
            if after := self._after_tools(run):
                return after
        elif isinstance(start, AfterClientTools) and not run.agent and not run.ask_followup:
            return FinalAnswer(answer=ask_answer(self._state(run)))
        while True:
            outcome = await self._step_once(run)
            if not isinstance(outcome, RunAgain):
                return outcome

    async def _step_once(self, run: Run) -> StepOutcome:
        state = self._state(run)
        limit = self._limit_hit(run)
        if limit:
            return LimitReached(answer=await self._final_answer(run, limit), limit=limit)
        followup = not run.agent and run.turn.step_count >= 1  # Ask's optional second call: no tools
        reply = await self._step(run, tools=None if followup else state.tools)
        run.last_content = reply.content
        if not reply.tool_calls and not reply.content.strip() and run.agent and not state.nudged:
            state.nudged = True  # one nudge for an empty reply, then it is accepted
            state.messages[-1:] = [{"role": "user", "content": NUDGE}]
            return RunAgain()
        if not reply.tool_calls or followup:
            return FinalAnswer(answer=reply.content)
        state.tool_outputs = []
        await self.calls.run_reply(run, [Call(c.id, c.name, c.arguments) for c in reply.tool_calls])
        return self._after_tools(run, reply.content) or RunAgain()

    async def _final_answer(self, run: Run, limit: dict[str, Any]) -> str:
        """One last call without tools for an answer from what was gathered (limits.py)."""
        state = self._state(run)
        state.messages.append({"role": "user", "content": FINAL_REQUEST.format(message=limit["message"])})
        try:
            reply = await self._step(run, tools=None)
        except ModelError:
            return plain_answer(state, limit)
        return reply.content if reply.content.strip() else plain_answer(state, limit)

    def _after_tools(
        self, run: Run, content: str = ""
    ) -> PausedForApproval | PausedForClientTools | FinalAnswer | None:
        """Where the run goes once a reply's tool calls ran (or were held): None to call the model again."""
        state = self._state(run)
        if state.awaiting:
            return PausedForApproval()
        if state.pending:
            return PausedForClientTools()
        if not run.agent and not run.ask_followup:
            return FinalAnswer(answer=ask_answer(state, content))
        return None

    def _limit_hit(self, run: Run) -> dict[str, Any] | None:
        turn = run.turn
        return limit_hit(
            agent=run.agent,
            steps=turn.step_count,
            tokens=turn.prompt_tokens + turn.completion_tokens,
            state=self._state(run),
            max_steps=self.max_steps,
            budget=self.token_budget,
            quota=quota_message(run),
        )

    async def _step(self, run: Run, *, tools: list[dict] | None) -> ModelReply:
        turn, state = run.turn, self._state(run)
        turn.step_count += 1
        tokens = self._fit(run, tools)
        # The trace keeps each message once: Turn.trace holds the system prompt and the earlier turns,
        # each step what was appended since (step 1 the user's message, later ones the replies and tool
        # results), so neither a long turn nor a long session stores a message twice (trace.py).
        sent_before = state.traced
        state.traced = len(state.messages)
        await run.recorder.emit(
            "step.started",
            {
                "step": turn.step_count,
                "max_steps": self.max_steps if run.agent else None,
                "mode": state.mode,
                "messages_from": sent_before,
                "messages": state.messages[sent_before:],
                "tools": [t["function"]["name"] for t in tools or []],
                "tokens": tokens,
                "history_turns": len(state.history_sizes),
            },
        )

        async def restart(reason: str = "cut_off") -> None:  # the text streamed so far in this step goes
            await run.recorder.flush_delta()
            run.recorder.streamed = ""
            await run.recorder.emit("model.retry", {"step": turn.step_count, "reason": reason})

        reply = await run.llm.stream_chat(
            messages=state.messages, tools=tools, on_delta=run.recorder.delta, on_restart=restart
        )
        offered = {t["function"]["name"] for t in tools or []}
        if not reply.tool_calls and (written := text_tool_calls(reply.content, offered)):
            await restart("text_tool_call")  # a call written as the reply's text (text_calls.py)
            reply.content, reply.tool_calls = "", written
        turn.prompt_tokens += reply.prompt_tokens
        turn.completion_tokens += reply.completion_tokens
        metrics.model_tokens(run.model_key, prompt=reply.prompt_tokens, completion=reply.completion_tokens)
        await meter_step(run, reply)
        calls = [{"id": c.id, "name": c.name, "arguments": c.arguments} for c in reply.tool_calls]
        message: ModelMessage = {
            "step": turn.step_count,
            "content": reply.content,
            "tool_calls": calls,  # type: ignore[typeddict-item]
            "finish_reason": reply.finish_reason,
            "usage": {
                "prompt_tokens": reply.prompt_tokens,
                "completion_tokens": reply.completion_tokens,
                "turn_total": turn.prompt_tokens + turn.completion_tokens,
            },
        }
        for name, value in [
            ("reasoning", reply.reasoning),  # shown apart, never sent back as content
            ("tools_dropped", reply.tools_dropped),  # the server refused tools: the step ran without
            ("usage_estimated", reply.usage_estimated),  # the server sent no usage: counted here
            ("truncated", reply.truncated),  # finish_reason "length": the model's output limit
        ]:
            if value:
                message[name] = value  # type: ignore[literal-required]
        # Written with the turn's counters; deferred when tool calls follow (tool.called writes both).
        await run.recorder.emit("model.message", message, defer=bool(calls), turn_write=turns.counters(turn))
        assistant: dict[str, Any] = {"role": "assistant", "content": reply.content or None}
        if calls:
            assistant["tool_calls"] = [
                {"id": c["id"], "type": "function", "function": {"name": c["name"], "arguments": c["arguments"]}}
                for c in calls
            ]
        state.messages.append(assistant)
        return reply

    # --- endings ----------------------------------------------------------------------------

    async def _end(self, run: Run, outcome: RunOutcome) -> None:
        if isinstance(outcome, PausedForClientTools):
            await run.recorder.drain()  # the columns written with the events so far go first
            await turns.turn_pause(run.turn, self._state(run))
        elif isinstance(outcome, PausedForApproval):
            state = self._state(run)
            await run.recorder.drain()
            await sync_to_async(approvals_request)(run.turn, state.awaiting)
            write = turns.awaiting_approval(state)
            turns.apply_locally(run.turn, write)
            requested = {"calls": list(state.awaiting), "mode": state.mode}
            await run.recorder.emit("approval.requested", requested, turn_write=write)
        else:
            await self._finish(run, outcome)
        await run.recorder.drain()

    async def _finish(self, run: Run, ending: Ending) -> None:
        turn, state = run.turn, run.state
        changes = state.mode_changes if state else []
        if len(changes) > 1:
            last, extra = changes[-1]["newMode"], {"event": "reasoner.multiple_mode_changes", "turn_id": turn.id}
            message = "Turn %s changed mode %d times; the last successful change wins (%s)."
            logger.warning(message, turn.id, len(changes), last, extra=extra)
        mode = state.mode if state else turn.mode
        answer = ending.answer
        if state and ending.status in (Turn.Status.COMPLETED, Turn.Status.LIMIT_REACHED):
            answer = with_sources(answer, state.citations)
        write = turns.finished(
            status=ending.status,
            answer=answer,
            error=ending.error,
            mode=mode,
            mode_changes=changes,
            counters=turns.counters(turn).fields,
        )
        turns.apply_locally(turn, write)
        self.ended_here = True  # its end is about to be written: a failed lease renewal then is no loss
        metrics.turn_finished(
            status=ending.status, execution=turn.execution, mode=turn.mode, model=run.model_key, seconds=_age(turn)
        )
        await run.recorder.emit(
            ending.event_type,
            turn_write=write,
            payload=final_payload(
                ending.extra(),
                status=ending.status,
                answer=answer,
                mode=mode,
                mode_changes=changes,
                usage={"prompt_tokens": turn.prompt_tokens, "completion_tokens": turn.completion_tokens},
                steps=turn.step_count,
            ),
        )
        await run.recorder.drain()

    def _counter(self, run: Run) -> TokenCounter:
        if run.counter is None:
            run.counter = TokenCounter(run.llm.model)
        return run.counter

    def _fit(self, run: Run, tools: list[dict] | None) -> int:
        """The request's tokens, after dropping the oldest earlier turns if the turn outgrew the budget."""
        return fit_request(self._state(run), self._counter(run), run.llm.context_tokens, tools)

    @staticmethod
    def _state(run: Run) -> PausedState:
        return run.paused_state


def _age(turn: Turn) -> float | None:
    """Seconds since the turn was created (its duration once it ends)."""
    return (timezone.now() - turn.created_at).total_seconds() if turn.created_at else None
