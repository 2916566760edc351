"""The usage reports: sums over the daily counters (usage/models.py), filtered and grouped.

Each report reads the coarsest counters that answer it (usage/models.py): one member's days, the
teams' days (no member dimension), or whole months by member plus the days at the range's ends.
A year of 1,000,000 turns by 50 members is then at most some 16,000 rows per report."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, timedelta
from decimal import Decimal
from typing import Any

from django.db.models import F, QuerySet, Sum

from .models import UsageDay, UsageMonth, UsageTeamDay

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


SUMS = {
    "n_turns": Sum("turns"),
    "n_prompt": Sum("prompt_tokens"),
    "n_completion": Sum("completion_tokens"),
    "n_cost": Sum("cost"),
    "n_unpriced": Sum("unpriced_tokens"),
}


def _filtered(rows: QuerySet[Any], selected: UsageFilter) -> QuerySet[Any]:
    if selected.team_ids is not None:
        rows = rows.filter(team_id__in=selected.team_ids)
    if selected.user_id is not None:
        rows = rows.filter(user_id=selected.user_id)
    if selected.model:
        rows = rows.filter(model=selected.model)
    if selected.mode:
        rows = rows.filter(mode=selected.mode)
    return rows


def _days(selected: UsageFilter, start: date | None = None, end: date | None = None) -> QuerySet[Any]:
    """The daily counters of the selection: one member's (UsageDay, by its (user, day) index), or the
    teams' (UsageTeamDay: a tenth of the rows of fifty members)."""
    table = UsageDay if selected.user_id is not None else UsageTeamDay
    rows = table.objects.filter(day__gte=start or selected.start, day__lte=end or selected.end)
    return _filtered(rows, selected).order_by()


def _grouped(rows: QuerySet[Any], column: str) -> dict[str, list]:
    sums: dict[str, list] = {}
    for row in rows.values(key=F(column)).annotate(**SUMS):
        key = row["key"].isoformat() if isinstance(row["key"], date) else str(row["key"])
        totals = sums.setdefault(key, [0, 0, 0, Decimal(0), 0])
        for i, name in enumerate(SUMS):
            totals[i] += row[name] or 0
    return sums


def usage_report(selected: UsageFilter, *, group_by: str = "day") -> list[UsageRow]:
    """The sums of the selected days, one row per `group_by` value (day, model, mode, user, team),
    in that value's order. By user across members: the whole months of the range from UsageMonth,
    the days at its ends from UsageDay."""
    column = GROUPS[group_by]
    if group_by != "user" or selected.user_id is not None:
        sums = _grouped(_days(selected), column)
    else:
        sums = {}
        for rows in _by_user_sources(selected):
            for key, totals in _grouped(rows, column).items():
                mine = sums.setdefault(key, [0, 0, 0, Decimal(0), 0])
                for i, value in enumerate(totals):
                    mine[i] += value
    return [UsageRow(key, t[0], t[1], t[2], Decimal(t[3]), t[4]) for key, t in sorted(sums.items())]


def _by_user_sources(selected: UsageFilter) -> list[QuerySet[Any]]:
    first_whole = selected.start if selected.start.day == 1 else month_range(selected.start)[1] + timedelta(days=1)
    end_month_last = month_range(selected.end)[1]
    last_whole = selected.end if selected.end == end_month_last else selected.end.replace(day=1) - timedelta(days=1)
    if first_whole > last_whole:  # no whole month in the range
        return [_filtered(UsageDay.objects.filter(day__gte=selected.start, day__lte=selected.end), selected)]
    sources = [_filtered(UsageMonth.objects.filter(month__gte=first_whole, month__lte=last_whole), selected)]
    if selected.start < first_whole:
        sources.append(_filtered(UsageDay.objects.filter(day__gte=selected.start, day__lt=first_whole), selected))
    if last_whole < selected.end:
        sources.append(_filtered(UsageDay.objects.filter(day__gt=last_whole, day__lte=selected.end), selected))
    return [rows.order_by() for rows in sources]


def tokens_per_day(selected: UsageFilter) -> list[tuple[str, float]]:
    """Tokens per day with any use (the admin's chart)."""
    rows = _days(selected).values("day").annotate(p=Sum("prompt_tokens"), c=Sum("completion_tokens"))
    return sorted((row["day"].isoformat(), float((row["p"] or 0) + (row["c"] or 0))) for row in rows)


def usage_total(rows: list[UsageRow]) -> UsageRow:
    return UsageRow(
        key="total",
        turns=sum(r.turns for r in rows),
        prompt_tokens=sum(r.prompt_tokens for r in rows),
        completion_tokens=sum(r.completion_tokens for r in rows),
        cost=sum((r.cost for r in rows), Decimal(0)),
        unpriced_tokens=sum(r.unpriced_tokens for r in rows),
    )
