"""Running a routing run: each case through the real turn machinery (agents/submit.py and the
deployment's runner, as the JSON API's execute), at most `APTIX_CATALOG_TEST_CONCURRENCY` at once.

A case's turn runs until it ends or pauses. A mode change the model asks for is never made: with
consent required (the default) the call waits for the user; the case records the mode it asks for and
cancels the turn, which closes the waiting approval, so nothing is left pending. Then its session is
deleted."""

from __future__ import annotations

import asyncio
import time
from dataclasses import asdict, dataclass, field
from typing import Any

from asgiref.sync import sync_to_async
from django.conf import settings

from ..runner import get_runner
from ..submit import turn_submit
from ..turns import turn_cancel
from .cases import RoutingCase, case_outcome, case_session_delete, case_turn_start, routing_cases
from .summary import routing_summary


@dataclass(frozen=True)
class CaseResult:
    utterance: str
    expected: str
    got: str
    ok: bool
    tokens: int
    seconds: float
    mode: str = ""  # the mode the utterance belongs to
    status: str = ""  # the case turn's final status

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class RoutingResult:
    cases: list[CaseResult] = field(default_factory=list)
    modes: dict[str, dict[str, float | None]] = field(default_factory=dict)
    accuracy: float | None = None
    matrix: dict[str, dict[str, int]] = field(default_factory=dict)  # expected → got → count
    seconds: float = 0.0


def concurrency() -> int:
    return max(1, int(getattr(settings, "APTIX_CATALOG_TEST_CONCURRENCY", 4)))


async def routing_case_run(
    *, case: RoutingCase, user: Any, team: Any, model: str = "", drafts: bool = False
) -> CaseResult:
    """Run one case to its end and read where the agent moved; its session is deleted after. With
    `drafts` the case's session runs over the catalog with its drafts applied."""
    began = time.monotonic()
    submitted = await turn_submit(
        lambda: case_turn_start(user=user, team=team, utterance=case.utterance, model=model, drafts=drafts)
    )
    turn = await get_runner().wait(submitted.turn.id, submitted.started, session_id=submitted.turn.session_id)
    got = await sync_to_async(case_outcome)(turn=turn)
    status = turn.status
    if not turn.is_finished:  # a mode change waiting for consent: never made, the turn ends here
        await turn_cancel(turn=turn)
        await turn.arefresh_from_db()
    await sync_to_async(case_session_delete)(session_id=turn.session_id)
    return CaseResult(
        utterance=case.utterance,
        expected=case.expected,
        got=got,
        ok=got == case.expected,
        tokens=turn.prompt_tokens + turn.completion_tokens,
        seconds=round(time.monotonic() - began, 3),
        mode=case.mode,
        status=status,
    )


async def routing_run(
    *,
    user: Any,
    team: Any,
    model: str = "",
    cases: list[RoutingCase] | None = None,
    limit: int | None = None,
    drafts: bool = False,
) -> RoutingResult:
    """Every case (the active catalog's, by default) with at most `limit` (the setting's) at once; the
    results in the cases' order, with their summary. With `drafts`, over the catalog with its drafts
    applied: its cases, and its sessions' every read of the catalog."""
    began = time.monotonic()
    if cases is None:
        cases = await sync_to_async(routing_cases)(team=team, drafts=drafts)
    gate = asyncio.Semaphore(limit or concurrency())

    async def one(case: RoutingCase) -> CaseResult:
        async with gate:
            return await routing_case_run(case=case, user=user, team=team, model=model, drafts=drafts)

    results = list(await asyncio.gather(*(one(case) for case in cases)))
    modes, accuracy, matrix = routing_summary(results)
    return RoutingResult(
        cases=results, modes=modes, accuracy=accuracy, matrix=matrix, seconds=round(time.monotonic() - began, 3)
    )
