"""Usage and cost (usage/): each model call's tokens and cost, at the models.json price, are charged
to the day's and the month's counters; a turn's cost is on the turn; the reports group the days."""

from __future__ import annotations

from datetime import date, datetime
from decimal import Decimal

from django.utils import timezone

from tests.helpers import inline_db
from usage.models import UsageDay, UsageMonth, UsageTeamDay
from usage.selectors import UsageFilter, usage_report, usage_total
from usage.services import Charge, usage_charge


@inline_db
async def test_a_turn_of_a_priced_model_records_its_cost_and_is_charged_to_the_day_and_month(
    priced_models, make_session, run_turn, model, alice, team_a
):
    session = await make_session()
    model.reply("Hello there.", prompt_tokens=1200, completion_tokens=300)
    turn = await run_turn(session, "Hi")
    assert turn.status == "completed" and turn.model_key == "priced"
    assert turn.cost == Decimal("0.006")  # 1200 × 2.5 / 1e6 + 300 × 10 / 1e6
    day = await UsageDay.objects.aget(team=team_a, user=alice)
    assert (day.model, day.mode, day.turns, day.prompt_tokens, day.completion_tokens, day.cost) == (
        "priced",
        "general",
        1,
        1200,
        300,
        Decimal("0.006"),
    )
    assert day.unpriced_tokens == 0 and day.day == timezone.localdate()
    month = await UsageMonth.objects.aget(team=team_a, user=alice)
    assert (month.prompt_tokens, month.cost, month.month) == (
        1200,
        Decimal("0.006"),
        timezone.localdate().replace(day=1),
    )
    team_day = await UsageTeamDay.objects.aget(team=team_a)
    assert (team_day.turns, team_day.completion_tokens, team_day.model) == (1, 300, "priced")


@inline_db
async def test_a_model_without_a_price_counts_tokens_and_leaves_the_cost_unknown(
    priced_models, make_session, run_turn, model
):
    session = await make_session()
    await type(session).objects.filter(pk=session.pk).aupdate(model="free")
    session.model = "free"
    model.reply("Hi.", prompt_tokens=100, completion_tokens=20)
    turn = await run_turn(session, "Hi")
    assert turn.model_key == "free" and turn.cost is None
    day = await UsageDay.objects.aget(model="free")
    assert (day.prompt_tokens, day.completion_tokens, day.cost, day.unpriced_tokens) == (100, 20, 0, 120)


def charge(team, user, model="m", mode="general", tokens=(100, 10), cost="0.5", new_turn=True) -> Charge:
    return Charge(
        team_id=team.pk,
        user_id=user.pk,
        model=model,
        mode=mode,
        prompt_tokens=tokens[0],
        completion_tokens=tokens[1],
        cost=None if cost is None else Decimal(cost),
        new_turn=new_turn,
    )


def at(day: str) -> datetime:
    return timezone.make_aware(datetime.fromisoformat(day + "T12:00"))


def test_the_reports_sum_the_days_per_day_model_mode_user_and_team(team_a, team_b, alice, bob, carol):
    usage_charge(charge(team_a, alice), now=at("2026-03-01"))
    usage_charge(charge(team_a, alice, new_turn=False), now=at("2026-03-01"))  # a second call of the same turn
    usage_charge(charge(team_a, bob, model="big", mode="agentic", cost="2"), now=at("2026-03-02"))
    usage_charge(charge(team_b, carol, cost=None), now=at("2026-03-02"))
    usage_charge(charge(team_a, alice), now=at("2026-04-01"))  # outside the range
    march = UsageFilter(start=date(2026, 3, 1), end=date(2026, 3, 31))

    by_day = usage_report(march, group_by="day")
    assert [(r.key, r.turns, r.tokens, r.cost, r.unpriced_tokens) for r in by_day] == [
        ("2026-03-01", 1, 220, Decimal(1), 0),
        ("2026-03-02", 2, 220, Decimal(2), 110),
    ]
    assert [(r.key, r.turns) for r in usage_report(march, group_by="model")] == [("big", 1), ("m", 2)]
    assert [(r.key, r.turns) for r in usage_report(march, group_by="mode")] == [("agentic", 1), ("general", 2)]
    assert [(r.key, r.tokens) for r in usage_report(march, group_by="user")] == [
        ("alice", 220),
        ("bob", 110),
        ("carol", 110),
    ]
    team_a_only = UsageFilter(start=march.start, end=march.end, team_ids=[team_a.pk])
    assert [(r.key, r.cost) for r in usage_report(team_a_only, group_by="team")] == [("Team A", Decimal(3))]
    mine = UsageFilter(start=march.start, end=march.end, user_id=alice.pk, model="m")
    assert usage_total(usage_report(mine)).turns == 1
    assert UsageMonth.objects.get(team=team_a, user=alice, month=date(2026, 3, 1)).prompt_tokens == 200


def test_by_user_across_members_adds_whole_months_and_the_days_at_the_ends(team_a, alice, bob):
    for day in ("2026-01-30", "2026-02-01", "2026-02-15", "2026-03-01", "2026-03-02", "2026-03-31"):
        usage_charge(charge(team_a, alice), now=at(day))
    usage_charge(charge(team_a, bob), now=at("2026-02-28"))
    for start, end, alice_turns in [
        (date(2026, 1, 30), date(2026, 3, 1), 4),  # days of January, all February, a day of March
        (date(2026, 2, 1), date(2026, 2, 28), 2),  # one whole month
        (date(2026, 2, 2), date(2026, 3, 30), 3),  # no whole month
        (date(2026, 1, 1), date(2026, 3, 31), 6),  # whole months only
    ]:
        by_user = {r.key: r.turns for r in usage_report(UsageFilter(start=start, end=end), group_by="user")}
        by_day = usage_report(UsageFilter(start=start, end=end, user_id=alice.pk), group_by="day")
        assert by_user["alice"] == alice_turns == sum(r.turns for r in by_day), (start, end)
        assert by_user["bob"] == 1
