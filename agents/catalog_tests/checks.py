"""Check runs: each check of every active mode (AgentMode.checks: a prompt, an execution, what the turn
must show) runs as the first turn of a new, hidden session in its mode and execution, through the real
turn machinery (agents/submit.py and the deployment's runner), and passes when every `expect` holds
(docs/curating-the-catalog.md "Check runs").

What the run answers for the curator while the turn runs — for that run alone, through the same
services as a user's decisions (the API's execute with `approvals`, its answer to a question):

- A **tool approval** (a call the mode's approval policy says to ask about, or an MCP tool that is not
  read-only) is approved *once* (`approval_decide`, scope "once": never "allow for this session", so
  the session gets no grant), listed in the result's `approved`, and the run is resumed and waited for
  again.
- A **mode change** the model asks for is *refused*, like a user's "stay", and listed in `declined`:
  a check tests its own mode, and approving would move the session to another mode (its answer then
  another mode's, with a follow-up turn there) or, with `branch`, make a new session outside the
  hidden one (in the curator's sidebar, never deleted). The turn then ends as after a user's "stay",
  in the check's mode; `tool: agent_change_mode` still holds, since the call was made.
- An **MCP server's question** (elicitation) and a **connect** card (a server that needs the user's
  own credentials) are declined, and listed in `declined`.
- A check that *expects* `awaiting_approval` tests that its mode asks: nothing is answered, and its
  turn is recorded at the first pause.

At most `MAX_APPROVAL_ROUNDS` rounds are answered, so a model that keeps asking cannot hang the run;
a turn still open then is cancelled (which closes what waits). The session is deleted after, as a
routing case's.

    cases = check_cases(team=team)                        # every active mode's checks, catalog order
    result = await checks_run(user=user, team=team)       # ChecksResult: checks, passed, failed, seconds
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import asdict, dataclass, field
from typing import Any

from asgiref.sync import sync_to_async
from django.core.exceptions import ValidationError
from django.db import transaction

from modes.catalog import active_modes, drafts_applied
from modes.models import AgentMode
from modes.validators import CHECK_EXECUTIONS

from ..approvals import UserDecision, approval_decide
from ..elicitations import elicitation_answer_to_resume, events_last_seq, turn_after_answer
from ..models import ToolApproval, Turn, TurnEvent
from ..runner import get_runner
from ..submit import turn_submit
from ..turns import turn_cancel, turn_start
from .cases import case_session_create, case_session_delete
from .routing import concurrency

Kind = ToolApproval.Kind

DEFAULT_EXECUTION = "ask"  # modes/validators.py normal_check: a check without one runs in Ask
DEFAULT_STATUS = "completed"  # a check's turn must complete unless its expect names another status
ASKS = Turn.Status.AWAITING_APPROVAL
MAX_APPROVAL_ROUNDS = 10

REASON_TOOL = "tool {tool} was not called"
REASON_CONTAINS = "answer does not contain {text!r}"
REASON_NOT_CONTAINS = "answer contains {text!r}"
REASON_STATUS = "status is {status}, expected {expected}"
REASON_ROUNDS = "still waiting for approvals after {rounds} rounds"


@dataclass(frozen=True)
class CheckCase:
    mode: str  # the mode's key: the check's session runs in it
    prompt: str
    execution: str = DEFAULT_EXECUTION
    expect: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class CheckResult:
    mode: str
    prompt: str
    execution: str
    ok: bool
    failed: list[str]  # why it failed, one reason per expectation that does not hold (none: it passed)
    approved: list[str]  # the tools whose approvals the run approved (once each, for this run)
    tokens: int
    seconds: float
    status: str  # the check turn's final status
    declined: list[str] = field(default_factory=list)  # refused mode changes, declined questions and connects

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class ChecksResult:
    checks: list[CheckResult] = field(default_factory=list)
    passed: int = 0
    failed: int = 0
    seconds: float = 0.0

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def checks_of(mode: AgentMode) -> list[CheckCase]:
    """A mode's checks as cases: the execution defaults to Ask, the expected status to `completed`."""
    cases = []
    for check in mode.checks or []:
        if not isinstance(check, dict) or not str(check.get("prompt") or "").strip():
            continue  # the catalog's validation refuses such an item; a row written around it is skipped
        execution = check.get("execution") or DEFAULT_EXECUTION
        expect = {str(key): str(value) for key, value in (check.get("expect") or {}).items()}
        expect.setdefault("status", DEFAULT_STATUS)
        cases.append(
            CheckCase(
                mode=mode.key,
                prompt=str(check["prompt"]),
                execution=execution if execution in CHECK_EXECUTIONS else DEFAULT_EXECUTION,
                expect=expect,
            )
        )
    return cases


def check_cases(*, team: Any, drafts: bool = False) -> list[CheckCase]:
    """Every check of every active mode `team` may use, in the catalog's order: of the published
    catalog, or, with `drafts`, of the catalog with its drafts applied (the drafts' checks)."""
    with drafts_applied(drafts):
        modes = active_modes(team=team)
    return [case for mode in modes for case in checks_of(mode)]


def check_failures(*, expect: dict[str, str], called: list[str], answer: str, status: str) -> list[str]:
    """Why a check's turn fails its `expect` (none: it passes): the tool must have been called, the
    answer must (not) contain the text, case-insensitively, and the status must be the expected one
    (`completed` unless named)."""
    text = (answer or "").casefold()
    failed = []
    if "tool" in expect and expect["tool"] not in called:
        failed.append(REASON_TOOL.format(tool=expect["tool"]))
    if "contains" in expect and expect["contains"].casefold() not in text:
        failed.append(REASON_CONTAINS.format(text=expect["contains"]))
    if "not_contains" in expect and expect["not_contains"].casefold() in text:
        failed.append(REASON_NOT_CONTAINS.format(text=expect["not_contains"]))
    wanted = expect.get("status") or DEFAULT_STATUS
    if status != wanted:
        failed.append(REASON_STATUS.format(status=status, expected=wanted))
    return failed


def check_turn_start(*, case: CheckCase, user: Any, team: Any, model: str = "", drafts: bool = False) -> Turn:
    """A hidden session in the check's mode and execution, and its prompt as the first turn (queued;
    the caller dispatches it)."""
    with transaction.atomic():
        session = case_session_create(
            user=user, team=team, mode=case.mode, execution=case.execution, model=model, drafts=drafts
        )
        return turn_start(session=session, text=case.prompt)


def _called(turn_id: str) -> list[str]:
    names = TurnEvent.objects.filter(turn_id=turn_id, type="tool.called").order_by("seq")
    return [str(payload.get("name") or "") for payload in names.values_list("payload", flat=True)]


def _pending(turn_id: str) -> list[ToolApproval]:
    return list(ToolApproval.objects.filter(turn_id=turn_id, decision="").order_by("requested_at", "pk"))


def _decided(*, turn: Turn, decisions: list[UserDecision], user: Any) -> Turn | None:
    """Record the run's decisions as a user's (the API's `approvals`); the turn to resume once nothing
    waits, else None."""
    return turn if approval_decide(turn=turn, decisions=decisions, user=user, complete=True) else None


class _Answers:
    """What one check's run answered: approved and declined tool names, in order."""

    def __init__(self) -> None:
        self.approved: list[str] = []
        self.declined: list[str] = []

    async def round(self, turn: Turn, user: Any) -> Turn:
        """Answer everything the paused turn waits for, resume it and wait for its end or next pause."""
        pending = await sync_to_async(_pending)(turn.pk)
        if not pending:  # nothing to answer (closed meanwhile): it is as it is
            return await Turn.objects.select_related("session").aget(pk=turn.pk)
        questions = [row for row in pending if row.kind == Kind.ELICITATION]
        if questions:
            return await self._decline_questions(turn, user, questions)
        # Tool approvals approved once; mode changes refused, connects declined (the module's docstring).
        approve = {row.tool_call_id: row.kind == Kind.TOOL for row in pending}
        decisions = [UserDecision(call, approve=yes, scope=ToolApproval.Scope.ONCE) for call, yes in approve.items()]
        submitted = await turn_submit(lambda: _decided(turn=turn, decisions=decisions, user=user))
        for row in pending:  # recorded (a stale turn raised before this): listed
            (self.approved if approve[row.tool_call_id] else self.declined).append(row.tool)
        if submitted is None:
            return await Turn.objects.select_related("session").aget(pk=turn.pk)
        return await get_runner().wait(submitted.turn.id, submitted.started, session_id=submitted.turn.session_id)

    async def _decline_questions(self, turn: Turn, user: Any, questions: list[ToolApproval]) -> Turn:
        """Decline an MCP server's questions as the API's answer does: a question a run holds goes on
        in that run; one no run holds is resumed here once nothing else waits."""
        seq = await sync_to_async(events_last_seq)(turn.pk)
        resumed: Turn | None = None
        for row in questions:
            self.declined.append(row.tool)
            answered = await sync_to_async(elicitation_answer_to_resume)(
                turn=turn, item_id=row.tool_call_id, action="decline", content=None, user=user
            )
            resumed = answered or resumed
        if resumed is not None:
            submitted = await turn_submit(lambda: resumed)
            return await get_runner().wait(submitted.turn.id, submitted.started, session_id=submitted.turn.session_id)
        return await turn_after_answer(turn.pk, seq)


async def check_case_run(
    *, case: CheckCase, user: Any, team: Any, model: str = "", drafts: bool = False
) -> CheckResult:
    """Run one check to its end, answering what its turn waits for (the module's docstring), and
    judge it; its session is deleted after, whatever happened."""
    began = time.monotonic()
    submitted = await turn_submit(lambda: check_turn_start(case=case, user=user, team=team, model=model, drafts=drafts))
    answers, rounds = _Answers(), 0
    expects_pause = case.expect.get("status") == ASKS
    try:
        turn = await get_runner().wait(submitted.turn.id, submitted.started, session_id=submitted.turn.session_id)
        while turn.status == ASKS and not expects_pause and rounds < MAX_APPROVAL_ROUNDS:
            rounds += 1
            try:
                turn = await answers.round(turn, user)
            except ValidationError:  # the turn ended meanwhile (stale): take it as it is
                turn = await Turn.objects.select_related("session").aget(pk=turn.pk)
        status, answer = turn.status, turn.answer or ""
        called = await sync_to_async(_called)(turn.pk)
    finally:
        turn = await _ended(submitted.turn)
    failed = check_failures(expect=case.expect, called=called, answer=answer, status=status)
    if status == ASKS and not expects_pause:
        failed.append(REASON_ROUNDS.format(rounds=rounds))
    return CheckResult(
        mode=case.mode,
        prompt=case.prompt,
        execution=case.execution,
        ok=not failed,
        failed=failed,
        approved=answers.approved,
        tokens=turn.prompt_tokens + turn.completion_tokens,
        seconds=round(time.monotonic() - began, 3),
        status=status,
        declined=answers.declined,
    )


async def _ended(started: Turn) -> Turn:
    """The check's turn, ended (one left waiting — the rounds ran out, a pause expected — is cancelled,
    which closes what waits), and its session deleted."""
    turn = await Turn.objects.select_related("session").aget(pk=started.pk)
    if not turn.is_finished:
        await turn_cancel(turn=turn)
        await turn.arefresh_from_db()
    await sync_to_async(case_session_delete)(session_id=turn.session_id)
    return turn


async def checks_run(
    *,
    user: Any,
    team: Any,
    model: str = "",
    cases: list[CheckCase] | None = None,
    limit: int | None = None,
    drafts: bool = False,
) -> ChecksResult:
    """Every check (the active catalog's, by default) with at most `limit` (the setting's) at once;
    the results in the cases' order."""
    began = time.monotonic()
    if cases is None:
        cases = await sync_to_async(check_cases)(team=team, drafts=drafts)
    gate = asyncio.Semaphore(limit or concurrency())

    async def one(case: CheckCase) -> CheckResult:
        async with gate:
            return await check_case_run(case=case, user=user, team=team, model=model, drafts=drafts)

    results = list(await asyncio.gather(*(one(case) for case in cases)))
    passed = sum(result.ok for result in results)
    return ChecksResult(
        checks=results, passed=passed, failed=len(results) - passed, seconds=round(time.monotonic() - began, 3)
    )
