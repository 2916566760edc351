"""The usage page of the admin (/admin/usage/usageday/): every team's tokens and cost by day as a
chart, grouped by day, model, mode, user or team in a table, filtered, exported as CSV. For superusers
and the Auditors group (the view permission on usage); other staff are refused (403). The counters
are written by the runs only (usage/services.py): nobody adds, edits or deletes them here."""

from __future__ import annotations

from datetime import timedelta
from html import escape
from typing import Any

from django import forms
from django.contrib import admin
from django.contrib.auth import get_user_model
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse
from django.template.response import TemplateResponse
from django.utils import timezone
from django.utils.safestring import SafeString, mark_safe

from aptix.audit_admin import AuditTrailAdminMixin
from aptix.models import Team
from modes.admin import csv_download
from modes.models import AgentMode

from .chart import bar_chart
from .models import UsageDay
from .selectors import GROUPS, UsageFilter, UsageRow, month_range, tokens_per_day, usage_report, usage_total

CSV_COLUMNS = ["group", "turns", "prompt_tokens", "completion_tokens", "tokens", "cost", "unpriced_tokens"]
MAX_CHART_DAYS = 731


class UsageFilterForm(forms.Form):
    start = forms.DateField(required=False, label="From", widget=forms.DateInput(attrs={"type": "date"}))
    end = forms.DateField(required=False, label="To", widget=forms.DateInput(attrs={"type": "date"}))
    team = forms.ModelChoiceField(queryset=Team.objects.all(), required=False, empty_label="All teams")
    user = forms.ModelChoiceField(
        queryset=get_user_model().objects.order_by("username"), required=False, empty_label="All users"
    )
    model = forms.CharField(required=False, max_length=100, help_text="A models.json key; empty: all.")
    mode = forms.ChoiceField(required=False)
    group = forms.ChoiceField(choices=[(g, g.capitalize()) for g in GROUPS], required=False, label="Group by")

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # The catalog's modes (not a DISTINCT over a year of counters, which a page load would pay for).
        modes = AgentMode.objects.order_by("key").values_list("key", flat=True)
        self.fields["mode"].choices = [("", "All modes"), *((m, m) for m in modes)]  # type: ignore[attr-defined]

    def selection(self) -> tuple[UsageFilter, str]:
        first, last = month_range(timezone.localdate())
        data = self.cleaned_data if self.is_valid() else {}
        start, end = data.get("start") or first, data.get("end") or last
        if end < start:
            start, end = end, start
        team, user = data.get("team"), data.get("user")
        selected = UsageFilter(
            start=start,
            end=end,
            team_ids=[team.pk] if team else None,
            user_id=user.pk if user else None,
            model=data.get("model") or "",
            mode=data.get("mode") or "",
        )
        return selected, data.get("group") or "day"


def daily_points(selected: UsageFilter, tokens: list[tuple[str, float]]) -> list[tuple[str, float]]:
    """Tokens per day over the range, days without use at 0 (the chart's bars)."""
    by_day = dict(tokens)
    days = min((selected.end - selected.start).days + 1, MAX_CHART_DAYS)
    return [
        (day.isoformat(), float(by_day.get(day.isoformat(), 0)))
        for day in (selected.start + timedelta(days=i) for i in range(days))
    ]


def table_rows(rows: list[UsageRow]) -> SafeString:
    """The table's body, built here: a year by day is 365 rows, which the template language renders
    several times slower than this. The key (a user's or team's name, a model key) is escaped; the
    rest are numbers."""
    return mark_safe(  # every text cell is escaped; the others are ints and a Decimal
        "".join(
            f'<tr><th scope="row">{escape(r.key)}</th><td class="num">{r.turns}</td><td class="num">'
            f'{r.prompt_tokens}</td><td class="num">{r.completion_tokens}</td><td class="num">{r.cost:.4f}</td>'
            f'<td class="num">{r.unpriced_tokens}</td></tr>'
            for r in rows
        )
    )


@admin.register(UsageDay)
class UsageDayAdmin(AuditTrailAdminMixin, admin.ModelAdmin):
    def changelist_view(self, request: HttpRequest, extra_context: dict[str, Any] | None = None) -> HttpResponse:
        if not self.has_view_permission(request):
            raise PermissionDenied
        form = UsageFilterForm(request.GET or None)
        selected, group = form.selection()
        if request.GET.get("format") == "csv":
            rows = usage_report(selected, group_by=group)
            total = usage_total(rows)
            cells = (
                [r.key, r.turns, r.prompt_tokens, r.completion_tokens, r.tokens, r.cost, r.unpriced_tokens]
                for r in [*rows, total]
            )
            return csv_download(f"usage-by-{group}", CSV_COLUMNS, cells)
        rows = usage_report(selected, group_by=group)
        total = usage_total(rows)
        daily = [(r.key, float(r.tokens)) for r in rows] if group == "day" else tokens_per_day(selected)
        query = request.GET.copy()
        query["format"] = "csv"
        context = {
            **self.admin_site.each_context(request),
            "title": "Usage and cost",
            "opts": self.model._meta,
            "form": form,
            "selected": selected,
            "group": group,
            "rows": rows,
            "table_rows": table_rows(rows),
            "total": total,
            "chart": bar_chart(daily_points(selected, daily), title="Tokens per day", unit="tokens"),
            "csv_query": query.urlencode(),
            **(extra_context or {}),
        }
        return TemplateResponse(request, "admin/usage/report.html", context)
