"""Benchmark: usage reports and the quota check with a year of turns.

1,000,000 turns over 365 days, 50 users in 5 teams, 3 models (one without a price) and 3 modes, are
written straight into the database with one INSERT … SELECT over generate_series (PostgreSQL), and
the usage counters are built from them as the runs maintain them (usage/services.py charges each
model call to the member's day, the team's day and the member's month: here GROUP BYs give the same
sums, checked against the turns). Then, each `--runs` times, timed end to end through Django's test client:

- the admin usage page (a superuser): the whole year by day (365 bars), by user, by model for one
  team, one user's month, and its CSV export;
- the API `GET /api/v1/usage` (a bearer token): a year by day, by model and by mode;
- the quota check a turn start adds (usage/quotas.py quota_refuse, a team with a quota);
- one charge (usage_charge: the three upserts after each model call).

Printed: p50 and p95 per request (targets: pages and API p95 ≤ 300 ms, the quota check ≤ 5 ms).

    bin/with-postgres .venv/bin/python bench/usage.py [--turns 1000000] [--runs 30]
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable
from decimal import Decimal

from benchenv import setup_django  # bench/benchenv.py: this script runs from bench/

setup_django(APTIX_MCP_AUTOSTART="false", APTIX_RUN_SWEEP="false", LOG_LEVEL="ERROR", ALLOWED_HOSTS="testserver")

from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.db import connection
from django.test import Client

from agents.models import AgentSession
from aptix.models import Membership, Team
from aptix.tokens import api_token_create
from usage.models import UsageDay, UsageMonth, UsageTeamDay
from usage.quotas import quota_refuse
from usage.services import Charge, usage_charge

USERS, TEAMS, DAYS, SESSIONS_PER_USER = 50, 5, 365, 20
# models.json keys and their price per million tokens (input, output); None: no price.
MODELS = [("gpt-4.1", ("2", "8")), ("gpt-4.1-mini", ("0.4", "1.6")), ("local", None)]
MODES = ["general", "data-analysis", "agentic"]


def seed(turns: int) -> None:
    User = get_user_model()
    teams = [Team.objects.create(name=f"Team {t}", slug=f"team-{t}") for t in range(TEAMS)]
    users = User.objects.bulk_create([User(username=f"user{u:02}", password="!") for u in range(USERS)])
    for u, user in enumerate(users):
        Membership.objects.create(team=teams[u % TEAMS], user=user)
    sessions = [
        AgentSession(team=teams[u % TEAMS], user=user, mode="general")
        for u, user in enumerate(users)
        for _ in range(SESSIONS_PER_USER)
    ]
    AgentSession.objects.bulk_create(sessions)
    ids = [s.pk for s in sessions]
    price_in = " ".join(f"WHEN {i} THEN {p[0]}" for i, (_, p) in enumerate(MODELS) if p)
    price_out = " ".join(f"WHEN {i} THEN {p[1]}" for i, (_, p) in enumerate(MODELS) if p)
    # The cost of a turn of a priced model; NULL (unknown) for the one without a price.
    cost_sql = f"(m.p * CASE m.mi {price_in} END + m.c * CASE m.mi {price_out} END) / 1000000.0"
    models = "ARRAY[" + ", ".join(f"'{k}'" for k, _ in MODELS) + "]"
    modes = "ARRAY[" + ", ".join(f"'{m}'" for m in MODES) + "]"
    with connection.cursor() as cursor:
        cursor.execute("CREATE TEMP TABLE bench_sessions (n int PRIMARY KEY, id varchar(32))")
        cursor.executemany("INSERT INTO bench_sessions VALUES (%s, %s)", list(enumerate(ids)))
        # Turn i: session i mod 1000, spread evenly over the 365 days before today, tokens varying.
        cursor.execute(
            f"""
            INSERT INTO agents_turn (id, session_id, index, user_message, mode, response_mode, execution, status,
                answer, error, prompt_tokens, completion_tokens, step_count, model_label, model_key, cost,
                cancel_requested, state, trace, created_at, started_at, finished_at, dispatch, worker, origin)
            SELECT md5(g::text), s.id, g, 'q', m.mode, m.mode, 'ask', 'completed', 'a', '',
                m.p, m.c, 1, m.model, m.model,
                {cost_sql},
                false, '{{}}', '{{}}', ts, ts, ts, '', '', 'message'
            FROM generate_series(1, %s) AS g
            JOIN bench_sessions s ON s.n = g %% {len(ids)}
            CROSS JOIN LATERAL (
                SELECT (g %% 3) AS mi, ({models})[(g %% 3) + 1] AS model, ({modes})[((g / 3) %% 3) + 1] AS mode,
                       500 + (g::bigint * 7919) %% 3000 AS p, 50 + (g::bigint * 104729) %% 700 AS c,
                       now() - ((g %% {DAYS}) || ' days')::interval AS ts
            ) m
            """,
            [turns],
        )
        # The counters, as the runs' charges would have left them (one charge per turn here).
        cursor.execute(
            """
            INSERT INTO usage_usageday (day, team_id, user_id, model, mode, turns, prompt_tokens, completion_tokens,
                cost, unpriced_tokens)
            SELECT t.created_at::date, s.team_id, s.user_id, t.model_key, t.mode, count(*), sum(t.prompt_tokens),
                sum(t.completion_tokens), coalesce(sum(t.cost), 0),
                sum(CASE WHEN t.cost IS NULL THEN t.prompt_tokens + t.completion_tokens ELSE 0 END)
            FROM agents_turn t JOIN agents_agentsession s ON s.id = t.session_id
            GROUP BY 1, 2, 3, 4, 5
            """
        )
        counters = "sum(turns), sum(prompt_tokens), sum(completion_tokens), sum(cost), sum(unpriced_tokens)"
        cursor.execute(
            f"""
            INSERT INTO usage_usageteamday (day, team_id, model, mode, turns, prompt_tokens, completion_tokens, cost,
                unpriced_tokens)
            SELECT day, team_id, model, mode, {counters} FROM usage_usageday GROUP BY 1, 2, 3, 4
            """
        )
        cursor.execute(
            f"""
            INSERT INTO usage_usagemonth (month, team_id, user_id, model, mode, turns, prompt_tokens,
                completion_tokens, cost, unpriced_tokens)
            SELECT date_trunc('month', day)::date, team_id, user_id, model, mode, {counters}
            FROM usage_usageday GROUP BY 1, 2, 3, 4, 5
            """
        )
        cursor.execute("VACUUM ANALYZE")  # as autovacuum leaves a table that stopped growing


def timed(label: str, runs: int, call: Callable[[], object], unit: float = 1000.0) -> tuple[float, float]:
    call()  # warm: the first request compiles templates, opens the connection
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        call()
        times.append((time.perf_counter() - started) * unit)
    times.sort()
    p50, p95 = statistics.median(times), times[max(0, int(len(times) * 0.95) - 1)]
    print(f"  {label:<58} p50 {p50:7.2f} ms   p95 {p95:7.2f} ms")
    return p50, p95


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=1_000_000)
    parser.add_argument("--runs", type=int, default=30)
    args = parser.parse_args()
    if connection.vendor != "postgresql":
        raise SystemExit("Run it on PostgreSQL: bin/with-postgres .venv/bin/python bench/usage.py")
    call_command("migrate", verbosity=0)
    started = time.perf_counter()
    seed(args.turns)
    days, team_days, months = UsageDay.objects.count(), UsageTeamDay.objects.count(), UsageMonth.objects.count()
    print(
        f"{args.turns:,} turns seeded in {time.perf_counter() - started:.0f} s: {days:,} member-days, "
        f"{team_days:,} team-days, {months:,} member-months"
    )
    with connection.cursor() as cursor:  # the counters are the turns' sums
        cursor.execute("SELECT sum(prompt_tokens + completion_tokens) FROM agents_turn")
        tokens = cursor.fetchone()[0]
    assert tokens == sum(m.prompt_tokens + m.completion_tokens for m in UsageMonth.objects.all())

    User = get_user_model()
    admin = User.objects.create(username="bench-admin", is_staff=True, is_superuser=True)
    page = Client()
    page.force_login(admin)
    member = User.objects.get(username="user07")
    _, secret = api_token_create(user=member, name="bench")
    api = Client(headers={"Authorization": f"Bearer {secret}"})
    today = time.strftime("%Y-%m-%d")
    year = {"start": time.strftime("%Y-%m-%d", time.localtime(time.time() - 365 * 86400)), "end": today}
    url = "/admin/usage/usageday/"
    team = Team.objects.get(slug="team-2")

    def get(client: Client, path: str, params: dict | None = None) -> Callable[[], object]:
        def call() -> object:
            response = client.get(path, params or {})
            assert response.status_code == 200, response.status_code
            return response

        return call

    print("admin usage page (superuser):")
    results = [
        timed("a year by day (365 bars)", args.runs, get(page, url, {**year, "group": "day"})),
        timed("a year by user", args.runs, get(page, url, {**year, "group": "user"})),
        timed("a year by model, one team", args.runs, get(page, url, {**year, "group": "model", "team": team.pk})),
        timed("this month, one user, by mode", args.runs, get(page, url, {"user": member.pk, "group": "mode"})),
        timed("a year by day, CSV export", args.runs, get(page, url, {**year, "group": "day", "format": "csv"})),
    ]
    print("API GET /api/v1/usage (one user's own):")
    api_year = {"from": year["start"], "to": today}
    results += [
        timed(f"a year, groupBy={group}", args.runs, get(api, "/api/v1/usage", {**api_year, "groupBy": group}))
        for group in ("day", "model", "mode")
    ]
    print("turn start and run:")
    Team.objects.filter(pk=team.pk).update(monthly_token_quota=10**12, monthly_cost_quota=Decimal(10**9))
    teammate = Membership.objects.filter(team=team).first()
    assert teammate is not None
    _, quota_p95 = timed(
        "quota check at a turn start (quota_refuse)",
        args.runs * 10,
        lambda: quota_refuse(team_id=team.pk, user_id=teammate.user_id),
    )
    charge = Charge(team.pk, teammate.user_id, "gpt-4.1", "general", 1000, 100, Decimal("0.0028"), True)
    timed("one model call charged (usage_charge: three upserts)", args.runs * 10, lambda: usage_charge(charge))
    worst = max(p95 for _, p95 in results)
    print(f"worst page/API p95 {worst:.1f} ms (target ≤ 300); quota check p95 {quota_p95:.2f} ms (target ≤ 5)")


if __name__ == "__main__":
    main()
