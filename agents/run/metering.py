"""What a run's model calls cost and whether the month's quota still allows the next one: after each
call its tokens (and cost, at the model's models.json price) are charged to the usage counters
(usage/services.py) and the quota is read back (usage/quotas.py); the loop ends the run at its next
step with the final-answer call once the quota is used up (limits.py). One charge per model call,
never per streamed delta."""

from __future__ import annotations

from decimal import Decimal

from asgiref.sync import sync_to_async

from usage.quotas import QuotaState, quota_state
from usage.services import Charge, usage_charge

from ..llm import ModelReply
from ..llm.catalog import ModelSpec
from .run import Run


def _charge_and_check(charge: Charge) -> QuotaState | None:
    usage_charge(charge)
    return quota_state(team_id=charge.team_id, user_id=charge.user_id)


async def meter_step(run: Run, reply: ModelReply) -> None:
    """Charge one model call to the turn (model_key, cost) and the usage counters; keep the quota's
    state on the run for the next step's check."""
    turn, spec = run.turn, run.spec
    cost = call_cost(spec, reply)
    turn.model_key = spec.key
    if cost is not None:
        turn.cost = (turn.cost or Decimal(0)) + cost
    session = turn.session
    charge = Charge(
        team_id=session.team_id,
        user_id=session.user_id,
        model=turn.model_key,
        mode=turn.mode,
        prompt_tokens=reply.prompt_tokens,
        completion_tokens=reply.completion_tokens,
        cost=cost,
        new_turn=turn.step_count == 1,
    )
    run.quota = await sync_to_async(_charge_and_check)(charge)


async def meter_start(run: Run) -> None:
    """The quota's state as the run starts or resumes (after an approval, after client tool results):
    a turn resumed past the quota takes no step before the final-answer call."""
    session = run.turn.session
    run.quota = await sync_to_async(quota_state)(team_id=session.team_id, user_id=session.user_id)


def quota_message(run: Run) -> str | None:
    """Why the run must stop now, when the month's quota is used up (as of the last model call)."""
    quota = run.quota
    return quota.message if quota is not None and quota.exceeded else None


def call_cost(spec: ModelSpec, reply: ModelReply) -> Decimal | None:
    """A model call's cost at the model's models.json price (None: the model has no price)."""
    price = spec.price
    return price.cost(reply.prompt_tokens, reply.completion_tokens) if price is not None else None


def session_call_allowed(*, team_id: int, user_id: int) -> bool:
    """Whether the member's quota still allows a model call outside a turn's steps (a session's title)."""
    quota = quota_state(team_id=team_id, user_id=user_id)
    return quota is None or not quota.exceeded


def charge_session_call(*, team_id: int, user_id: int, mode: str, spec: ModelSpec, reply: ModelReply) -> None:
    """Charge a model call made for a session outside a turn's steps (its title) to the usage counters,
    at the model's price: every call is metered, not only a turn's. It counts no turn."""
    usage_charge(
        Charge(
            team_id=team_id,
            user_id=user_id,
            model=spec.key,
            mode=mode,
            prompt_tokens=reply.prompt_tokens,
            completion_tokens=reply.completion_tokens,
            cost=call_cost(spec, reply),
        )
    )
