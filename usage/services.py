"""The only writers of the usage counters: a run charges each model call's tokens (and cost, when
its model has a price) to the day's, the team's day's and the month's rows (usage/models.py).

Each table gets one `INSERT … ON CONFLICT … DO UPDATE SET n = n + excluded.n`: an atomic increment
in the database (PostgreSQL and SQLite alike), so charges from any number of processes at once are
never lost, and whoever reads the month's rows next sees every charge committed before it."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, datetime
from decimal import Decimal
from typing import Any

from django.db import connection, models, transaction
from django.utils import timezone

from .models import UsageDay, UsageMonth, UsageTeamDay


@dataclass(frozen=True)
class Charge:
    """One model call's use, for the turn's team and user."""

    team_id: int
    user_id: int
    model: str
    mode: str
    prompt_tokens: int
    completion_tokens: int
    cost: Decimal | None  # None: the model has no price
    new_turn: bool = False  # the turn's first model call: counts the turn once

    @property
    def tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens


def month_of(day: date) -> date:
    return day.replace(day=1)


def usage_charge(charge: Charge, *, now: datetime | None = None) -> None:
    """Add `charge` to today's and this month's counters, in one transaction."""
    day = timezone.localdate(now or timezone.now())
    cost = charge.cost if charge.cost is not None else Decimal(0)
    unpriced = 0 if charge.cost is not None else charge.tokens
    counters: list[Any] = [
        int(charge.new_turn),
        charge.prompt_tokens,
        charge.completion_tokens,
        cost,
        unpriced,
    ]
    what: list[Any] = [charge.team_id, charge.model[:100], charge.mode[:64]]
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(_upsert(UsageDay, ["day", "user_id"]), [*what, day, charge.user_id, *counters])
        cursor.execute(_upsert(UsageTeamDay, ["day"]), [*what, day, *counters])
        cursor.execute(_upsert(UsageMonth, ["month", "user_id"]), [*what, month_of(day), charge.user_id, *counters])


_STATEMENTS: dict[tuple[str, ...], str] = {}


COUNTERS = ["turns", "prompt_tokens", "completion_tokens", "cost", "unpriced_tokens"]


def _upsert(model: type[models.Model], grain: list[str]) -> str:
    """INSERT the row (team, model, mode, the `grain` columns, the counters), or add its counters to
    the existing one (built once per table)."""
    key, add = ["team_id", "model", "mode", *grain], COUNTERS
    cache_key = (model._meta.db_table, *key)
    if cache_key not in _STATEMENTS:
        quote = connection.ops.quote_name
        table = quote(model._meta.db_table)
        columns = [*key, *add]
        _STATEMENTS[cache_key] = (
            f"INSERT INTO {table} ({', '.join(quote(c) for c in columns)}) "
            f"VALUES ({', '.join(['%s'] * len(columns))}) "
            f"ON CONFLICT ({', '.join(quote(c) for c in key)}) DO UPDATE SET "
            + ", ".join(f"{quote(c)} = {table}.{quote(c)} + EXCLUDED.{quote(c)}" for c in add)
        )
    return _STATEMENTS[cache_key]
