"""`GET /api/v1/usage?from=YYYY-MM-DD&to=YYYY-MM-DD&groupBy=day|model|mode`: the token's user's own
usage and cost (usage/selectors.py), in every team they belong to. `from`/`to` default to the current
calendar month; a model is grouped under its models.json key. The Settings → Usage page reads the
same query (usage_query)."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import date

from asgiref.sync import sync_to_async
from django.http import HttpRequest, JsonResponse
from django.utils import timezone
from django.views.decorators.csrf import csrf_exempt

from usage.selectors import UsageFilter, UsageRow, month_range, usage_report, usage_total

from .api_support import ApiError, authenticate

GROUP_BY = ("day", "model", "mode")
MAX_DAYS = 3660  # ten years: a range is a sum over daily rows, this keeps one request bounded


def usage_query(params: Mapping[str, str], *, user_id: int) -> tuple[UsageFilter, str]:
    """The user's selection from the query string, or an ApiError naming the parameter."""
    first, last = month_range(timezone.localdate())
    start, end = _day(params, "from", first), _day(params, "to", last)
    if end < start:
        raise ApiError(400, "'to' is before 'from'.", "to")
    if (end - start).days > MAX_DAYS:
        raise ApiError(400, f"The range is longer than {MAX_DAYS} days.", "to")
    group = params.get("groupBy") or "day"
    if group not in GROUP_BY:
        raise ApiError(400, f"'groupBy' is one of: {', '.join(GROUP_BY)}.", "groupBy")
    return UsageFilter(start=start, end=end, user_id=user_id), group


def _day(params: Mapping[str, str], name: str, default: date) -> date:
    raw = params.get(name)
    if not raw:
        return default
    try:
        return date.fromisoformat(raw)
    except ValueError:
        raise ApiError(400, f"'{name}' must be a date, YYYY-MM-DD.", name) from None


def usage_json(selected: UsageFilter, group: str, rows: list[UsageRow]) -> dict:
    total = usage_total(rows).as_json(group)
    del total[group]
    return {
        "from": selected.start.isoformat(),
        "to": selected.end.isoformat(),
        "groupBy": group,
        "rows": [row.as_json(group) for row in rows],
        "total": total,
    }


@csrf_exempt
async def usage_api(request: HttpRequest) -> JsonResponse:
    try:
        user = await authenticate(request)
        if request.method != "GET":
            raise ApiError(405, "Use GET.")
        selected, group = usage_query(request.GET, user_id=user.pk)
    except ApiError as exc:
        return exc.response()
    rows = await sync_to_async(usage_report)(selected, group_by=group)
    return JsonResponse(usage_json(selected, group, rows))
