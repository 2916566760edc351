"""An automation's times: its cron expression read in its time zone (croniter), and "run once at".

A cron expression has five fields (minute hour day-of-month month day-of-week) or six, the sixth being
seconds ("* * * * * */10": every ten seconds). Times are computed in the automation's time zone, so
"0 8 * * 1" is Monday 08:00 there, summer and winter; a time the clock skips (02:30 on the night the
clocks go forward) runs at the first minute that exists."""

from __future__ import annotations

from datetime import datetime
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from croniter import CroniterError, croniter
from django.core.exceptions import ValidationError

ERROR_CRON_FIELDS = "A cron expression has five fields (minute hour day month weekday), or six with seconds last."
ERROR_CRON = "Not a cron expression: {problem}"
ERROR_TIMEZONE = "Unknown time zone {name!r}: use an IANA name such as 'Europe/Paris' or 'UTC'."


def zone(name: str) -> ZoneInfo:
    """The IANA time zone `name`, or a ValidationError naming `timezone`."""
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        raise ValidationError({"timezone": ERROR_TIMEZONE.format(name=name)}) from None


def cron_clean(expression: str) -> str:
    """The expression with its fields single-spaced, or a ValidationError naming `cron`."""
    fields = (expression or "").split()
    if len(fields) not in (5, 6):
        raise ValidationError({"cron": ERROR_CRON_FIELDS})
    cleaned = " ".join(fields)
    try:
        croniter(cleaned)
    except (CroniterError, ValueError, KeyError) as exc:
        raise ValidationError({"cron": ERROR_CRON.format(problem=exc)}) from None
    return cleaned


def next_time(cron: str, timezone_name: str, after: datetime) -> datetime:
    """The first time of `cron` strictly after `after`, as an aware datetime (in the automation's zone)."""
    start = after.astimezone(zone(timezone_name))
    found: datetime = croniter(cron, start).get_next(datetime)
    return found


def latest_time(cron: str, timezone_name: str, at_or_before: datetime) -> datetime:
    """The last time of `cron` at or before `at_or_before` (what catch-up runs once)."""
    start = at_or_before.astimezone(zone(timezone_name))
    if croniter.match(cron, start) and (len(cron.split()) == 6 or start.second == 0):
        return start.replace(microsecond=0)
    found: datetime = croniter(cron, start).get_prev(datetime)
    return found
