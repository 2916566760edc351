"""Monthly quotas: a team's (Team.monthly_token_quota / monthly_cost_quota), or a member's own
(Membership's, which replace the team's for that member's turns). Checked before a turn starts and
after each of its model calls, against the month's counters (usage/models.py UsageMonth).

Why concurrent turns overshoot by at most one step each, across processes: every model call adds
its tokens to the month's row with one atomic `UPDATE … SET n = n + excluded.n` (usage/services.py)
before the run takes its next step, and the run reads the committed sum again before that step. So a
charge is never lost, and once the sum passes the quota every turn sees it at its next check: a turn
already in a model call finishes that one call (the overshoot), then ends with the final-answer call
as at the token budget; a new turn is refused."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import date, timedelta
from decimal import Decimal

from django.core.exceptions import ValidationError
from django.db import connection
from django.utils import timezone
from django.utils.formats import date_format

from aptix.models import Membership, Team

from .models import UsageMonth
from .services import month_of

NOTICE_AT = 0.8  # the share of a quota at which the composer shows a notice


@dataclass(frozen=True)
class QuotaState:
    """The tightest quota of a member's turns this month, and how much of it is used."""

    team_name: str
    own: bool  # the member's own quota (Membership), not the team's
    unit: str  # "tokens" or "cost"
    used: Decimal
    limit: Decimal
    resets_on: date

    @property
    def share(self) -> float:
        return float(self.used / self.limit) if self.limit else 1.0

    @property
    def exceeded(self) -> bool:
        return self.used >= self.limit

    @property
    def near(self) -> bool:
        return self.share >= NOTICE_AT

    def amount(self, value: Decimal) -> str:
        return f"{int(value):,} tokens" if self.unit == "tokens" else f"{value:,.2f} in cost"

    @property
    def used_text(self) -> str:
        return f"{self.amount(self.used)} used"

    @property
    def message(self) -> str:
        resets = date_format(self.resets_on, "F j, Y")
        if self.exceeded:
            who = (
                f"You have used your monthly quota in {self.team_name}"
                if self.own
                else (f"{self.team_name} has used its monthly quota")
            )
            return f"{who} of {self.amount(self.limit)}; it resets on {resets}."
        whose = "your monthly quota" if self.own else f"{self.team_name}'s monthly quota"
        return f"{self.share:.0%} of {whose} of {self.amount(self.limit)} is used; it resets on {resets}."


def next_month(today: date) -> date:
    return (today.replace(day=1) + timedelta(days=32)).replace(day=1)


def quota_state(*, team_id: int, user_id: int, today: date | None = None) -> QuotaState | None:
    """The member's quota this month (the most used of its token and cost limits), or None when
    unlimited. One query (the team's and the member's limits, the month's sums of the team and of
    the member, from UsageMonth's unique index): it runs at every turn start and after every model call."""
    states = quota_states(team_id=team_id, user_id=user_id, today=today)
    return max(states, key=lambda s: s.share) if states else None


def quota_states(*, team_id: int, user_id: int, today: date | None = None) -> list[QuotaState]:
    """Each limit of the member's quota this month (tokens, cost: those set), with its use (one query)."""
    today = today or timezone.localdate()
    with connection.cursor() as cursor:
        cursor.execute(_quota_sql(), [user_id, user_id, user_id, month_of(today), team_id])
        row = cursor.fetchone()
    if row is None:
        return []
    name, team_tokens, team_cost, my_tokens, my_cost, used_tokens, used_cost, my_used_tokens, my_used_cost = row
    own = (my_tokens, my_cost) != (None, None)
    token_quota, cost_quota = (my_tokens, my_cost) if own else (team_tokens, team_cost)
    used = {"tokens": my_used_tokens, "cost": my_used_cost} if own else {"tokens": used_tokens, "cost": used_cost}
    return [
        QuotaState(name, own, unit, Decimal(str(used[unit] or 0)), Decimal(limit), next_month(today))
        for unit, limit in (("tokens", token_quota), ("cost", cost_quota))
        if limit is not None
    ]


_SQL: list[str] = []


def _quota_sql() -> str:
    if not _SQL:
        q = connection.ops.quote_name
        team, member, month = (q(m._meta.db_table) for m in (Team, Membership, UsageMonth))
        tokens = f"u.{q('prompt_tokens')} + u.{q('completion_tokens')}"
        _SQL.append(
            f"SELECT t.{q('name')}, t.{q('monthly_token_quota')}, t.{q('monthly_cost_quota')}, "
            f"m.{q('monthly_token_quota')}, m.{q('monthly_cost_quota')}, "
            f"SUM({tokens}), SUM(u.{q('cost')}), "
            f"SUM(CASE WHEN u.{q('user_id')} = %s THEN {tokens} END), "
            f"SUM(CASE WHEN u.{q('user_id')} = %s THEN u.{q('cost')} END) "
            f"FROM {team} t "
            f"LEFT JOIN {member} m ON m.{q('team_id')} = t.{q('id')} AND m.{q('user_id')} = %s "
            f"LEFT JOIN {month} u ON u.{q('team_id')} = t.{q('id')} AND u.{q('month')} = %s "
            f"WHERE t.{q('id')} = %s "
            f"GROUP BY t.{q('id')}, m.{q('id')}"
        )
    return _SQL[0]


CODE_QUOTA = "quota"  # the ValidationError code of a refusal: the API answers 429


ERROR_HELD = (
    "{whose} of {limit} is taken by turns open now ({used} used, {held} held until they end): send again "
    "when one of them has ended."
)


def quota_refuse(*, team_id: int, user_id: int, held: Callable[[bool], int] | None = None) -> list[QuotaState]:
    """Refuse to start a turn past the month's quota (a ValidationError on the field "quota", saying
    whose quota it is and when it resets); raised before anything is written. `held(own)`: the tokens
    the open turns hold of the quota (the member's own turns when it is their own quota, else the
    team's), called with the team's row locked: a token quota they take up refuses the turn too, so
    turns sent at once cannot all start on the room left for one. The quota's limits, when it has any."""
    states = quota_states(team_id=team_id, user_id=user_id)
    for state in states:
        if state.exceeded:
            raise ValidationError({"quota": ValidationError(state.message, code=CODE_QUOTA)})
    if held is None:
        return states
    for state in states:
        taken = Decimal(held(state.own)) if state.unit == "tokens" else Decimal(0)
        if taken and state.used + taken >= state.limit:
            whose = "Your monthly quota" if state.own else f"{state.team_name}'s monthly quota"
            message = ERROR_HELD.format(
                whose=whose, limit=state.amount(state.limit), used=state.amount(state.used), held=state.amount(taken)
            )
            raise ValidationError({"quota": ValidationError(message, code=CODE_QUOTA)})
    return states


def quota_states_for(*, user_id: int, team_ids: list[int]) -> list[QuotaState]:
    """The member's quota in each of their teams that has one (Settings → Usage)."""
    return [s for team_id in team_ids if (s := quota_state(team_id=team_id, user_id=user_id)) is not None]
