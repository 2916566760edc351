"""The usage reports: sums over the daily counters (usage/models.py), filtered and grouped.

A year of a 50-person deployment is at most days × members × models × modes rows (tens of thousands,
not the million turns behind them), and every filter starts from an index on (team, day) or
(user, day), so a report stays a sub-second GROUP BY however many turns there were."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, timedelta
from decimal import Decimal
from typing import Any

from django.db.models import F, QuerySet, Sum

from .models import UsageDay

GROUPS = {"day": "day", "model": "model", "mode": "mode", "user": "user__username", "team": "team__name"}


@dataclass(frozen=True)
class UsageFilter:
    start: date
    end: date  # inclusive
    team_ids: list[int] | None = None  # None: every team
    user_id: int | None = None
    model: str = ""
    mode: str = ""


@dataclass(frozen=True)
class UsageRow:
    key: str
    turns: int
    prompt_tokens: int
    completion_tokens: int
    cost: Decimal
    unpriced_tokens: int

    @property
    def tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    def as_json(self, group_by: str) -> dict[str, Any]:
        return {
            group_by: self.key,
            "turns": self.turns,
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "cost": float(self.cost),
            "unpriced_tokens": self.unpriced_tokens,
        }


def month_range(today: date) -> tuple[date, date]:
    """The calendar month of `today`: its first and last day."""
    first = today.replace(day=1)
    following = (first + timedelta(days=32)).replace(day=1)
    return first, following - timedelta(days=1)


def _rows(selected: UsageFilter) -> QuerySet[UsageDay]:
    rows = UsageDay.objects.filter(day__gte=selected.start, day__lte=selected.end)
    if selected.team_ids is not None:
        rows = rows.filter(team_id__in=selected.team_ids)
    if selected.user_id is not None:
        rows = rows.filter(user_id=selected.user_id)
    if selected.model:
        rows = rows.filter(model=selected.model)
    if selected.mode:
        rows = rows.filter(mode=selected.mode)
    return rows


def usage_report(selected: UsageFilter, *, group_by: str = "day") -> list[UsageRow]:
    """The sums of the selected days, one row per `group_by` value (day, model, mode, user, team),
    in that value's order."""
    column = GROUPS[group_by]
    grouped = (
        _rows(selected)
        .order_by()
        .values(key=F(column))
        .annotate(
            n_turns=Sum("turns"),
            n_prompt=Sum("prompt_tokens"),
            n_completion=Sum("completion_tokens"),
            n_cost=Sum("cost"),
            n_unpriced=Sum("unpriced_tokens"),
        )
        .order_by("key")
    )
    return [
        UsageRow(
            key=row["key"].isoformat() if isinstance(row["key"], date) else str(row["key"]),
            turns=row["n_turns"] or 0,
            prompt_tokens=row["n_prompt"] or 0,
            completion_tokens=row["n_completion"] or 0,
            cost=Decimal(row["n_cost"] or 0),
            unpriced_tokens=row["n_unpriced"] or 0,
        )
        for row in grouped
    ]


def usage_total(rows: list[UsageRow]) -> UsageRow:
    return UsageRow(
        key="total",
        turns=sum(r.turns for r in rows),
        prompt_tokens=sum(r.prompt_tokens for r in rows),
        completion_tokens=sum(r.completion_tokens for r in rows),
        cost=sum((r.cost for r in rows), Decimal(0)),
        unpriced_tokens=sum(r.unpriced_tokens for r in rows),
    )


def usage_by_day_and(selected: UsageFilter, group_by: str) -> tuple[list[UsageRow], list[tuple[str, float]]]:
    """The report grouped by `group_by` and the tokens per day (the chart), from one scan of the
    selected days (GROUP BY day and the group, summed up here: at most days × groups rows)."""
    if group_by == "day":
        rows = usage_report(selected, group_by="day")
        return rows, [(row.key, float(row.tokens)) for row in rows]
    grouped = (
        _rows(selected)
        .order_by()
        .values("day", key=F(GROUPS[group_by]))
        .annotate(
            n_turns=Sum("turns"),
            n_prompt=Sum("prompt_tokens"),
            n_completion=Sum("completion_tokens"),
            n_cost=Sum("cost"),
            n_unpriced=Sum("unpriced_tokens"),
        )
    )
    sums: dict[str, list] = {}
    days: dict[str, float] = {}
    for row in grouped:
        totals = sums.setdefault(str(row["key"]), [0, 0, 0, Decimal(0), 0])
        for i, name in enumerate(("n_turns", "n_prompt", "n_completion", "n_cost", "n_unpriced")):
            totals[i] += row[name] or 0
        day = row["day"].isoformat()
        days[day] = days.get(day, 0.0) + float((row["n_prompt"] or 0) + (row["n_completion"] or 0))
    rows = [UsageRow(key, t[0], t[1], t[2], Decimal(t[3]), t[4]) for key, t in sorted(sums.items())]
    return rows, sorted(days.items())
