"""Where usage shows: the user's own on Settings → Usage and `GET /api/v1/usage`; every team's on the
admin's usage page for superusers and auditors only (a chart, filters, a CSV export whose cells a
spreadsheet will not run as formulas)."""

from __future__ import annotations

import csv
import io
from datetime import datetime
from decimal import Decimal

from django.urls import reverse
from django.utils import timezone

from aptix.models import Team
from aptix.tokens import api_token_create
from usage.services import Charge, usage_charge


def spend(team, user, day: str, *, model="m", mode="general", tokens=(100, 10), cost="0.25") -> None:
    when = timezone.make_aware(datetime.fromisoformat(day + "T12:00"))
    usage_charge(Charge(team.pk, user.pk, model, mode, *tokens, Decimal(cost), True), now=when)


def test_the_api_gives_the_users_own_usage_grouped(client, team_a, alice, bob):
    spend(team_a, alice, "2026-03-01")
    spend(team_a, alice, "2026-03-02", model="big")
    spend(team_a, bob, "2026-03-02")  # not alice's
    _, secret = api_token_create(user=alice, name="t")
    auth = {"Authorization": f"Bearer {secret}"}
    body = client.get("/api/v1/usage?from=2026-03-01&to=2026-03-31&groupBy=model", headers=auth).json()
    assert body["from"] == "2026-03-01" and body["groupBy"] == "model"
    assert [(r["model"], r["turns"], r["prompt_tokens"], r["cost"]) for r in body["rows"]] == [
        ("big", 1, 100, 0.25),
        ("m", 1, 100, 0.25),
    ]
    assert body["total"] == {
        "turns": 2,
        "prompt_tokens": 200,
        "completion_tokens": 20,
        "cost": 0.5,
        "unpriced_tokens": 0,
    }
    default = client.get("/api/v1/usage", headers=auth).json()  # this calendar month
    assert default["from"] == timezone.localdate().replace(day=1).isoformat() and default["groupBy"] == "day"
    bad = client.get("/api/v1/usage?from=March&groupBy=day", headers=auth)
    assert bad.status_code == 400 and bad.json()["error"]["field"] == "from"
    bad = client.get("/api/v1/usage?groupBy=user", headers=auth)  # others' usage is not the API's
    assert bad.status_code == 400 and bad.json()["error"]["field"] == "groupBy"
    assert client.get("/api/v1/usage").status_code == 401


def test_settings_usage_shows_the_users_own_usage_and_quota(client, team_a, alice, bob):
    team_a.monthly_token_quota = 1000
    team_a.save()
    today = timezone.localdate().isoformat()
    spend(team_a, alice, today, tokens=(800, 50))
    spend(team_a, bob, today, model="bobs-model")
    client.force_login(alice)
    page = client.get(reverse("settings-usage")).content.decode()
    assert "<th scope=\"row\">" + today + "</th>" in page and "850" in page
    assert "bobs-model" not in client.get(reverse("settings-usage") + "?groupBy=model").content.decode()
    assert "96% of Team A&#x27;s monthly quota of 1,000 tokens is used" in page  # 850 + bob's 110
    assert client.get(reverse("settings-usage") + "?from=x").status_code == 400


def test_the_admin_usage_page_is_for_auditors_and_superusers(
    client, team_a, alice, auditor, password, django_user_model
):
    spend(team_a, alice, timezone.localdate().isoformat())
    staff = django_user_model.objects.create_user("staff", password=password, is_staff=True)
    url = reverse("admin:usage_usageday_changelist")
    client.force_login(staff)
    assert client.get(url).status_code == 403
    client.force_login(auditor)
    response = client.get(url)
    page = response.content.decode()
    assert response.status_code == 200 and '<svg class="usage-chart"' in page and "Tokens per day" in page
    assert "<script" not in page.split('<svg class="usage-chart"')[1].split("</svg>")[0]
    by_user = client.get(url + "?group=user").content.decode()
    assert '<th scope="row">alice</th>' in by_user


def test_the_csv_export_neutralises_formulas(client, team_a, alice, auditor):
    evil = Team.objects.create(name="=HYPERLINK(\"http://x.invalid\")", slug="evil")
    spend(evil, alice, "2026-03-01", model="+cmd|' /C calc'!A0<script>")
    client.force_login(auditor)
    url = reverse("admin:usage_usageday_changelist")
    page = client.get(url, {"start": "2026-03-01", "end": "2026-03-31", "group": "model"}).content.decode()
    assert "A0&lt;script&gt;</th>" in page and "<script>" not in page.split('id="usage-table"')[1]
    chart = client.get(url, {"start": "2026-03-01", "end": "2026-03-31"}).content.decode()
    assert "<title>2026-03-01: 110 tokens</title>" in chart
    for group, cell in (("team", "'=HYPERLINK"), ("model", "'+cmd")):
        response = client.get(url, {"start": "2026-03-01", "end": "2026-03-31", "group": group, "format": "csv"})
        assert response["Content-Type"].startswith("text/csv")
        rows = list(csv.reader(io.StringIO(response.content.decode())))
        assert rows[0][0] == "group" and rows[1][0].startswith(cell) and rows[-1][0] == "total"
