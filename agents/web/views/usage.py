"""Settings → Usage (/settings/usage/): the user's own tokens and cost, by day, model or mode, over a
range (the current calendar month by default), and their quotas. The same query as the API's
`GET /api/v1/usage` (api_usage.usage_query); a bad parameter gets the page with the reason (400)."""

from __future__ import annotations

from typing import Any

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from aptix.teams import team_list_for_user
from usage.quotas import quota_states_for
from usage.selectors import usage_report, usage_total

from ..api_support import ApiError
from ..api_usage import GROUP_BY, usage_query


@require_GET
@login_required
def settings_usage(request: HttpRequest) -> HttpResponse:
    user: Any = request.user  # signed in (login_required)
    quotas = quota_states_for(user_id=user.pk, team_ids=[t.pk for t in team_list_for_user(user=user)])
    try:
        selected, group = usage_query(request.GET, user_id=user.pk)
    except ApiError as exc:
        context: dict[str, Any] = {"error": exc.message, "quotas": quotas, "groups": GROUP_BY, "group": "day"}
        return render(request, "agents/settings_usage.html", context, status=400)
    rows = usage_report(selected, group_by=group)
    context = {
        "selected": selected,
        "group": group,
        "groups": GROUP_BY,
        "rows": rows,
        "total": usage_total(rows),
        "quotas": quotas,
    }
    return render(request, "agents/settings_usage.html", context)
