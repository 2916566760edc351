"""Schedules: cron expressions (five fields, or six with seconds) read in the automation's time zone,
the latest due time catch-up runs, and the prompt's placeholders."""

from __future__ import annotations

from datetime import UTC, datetime
from zoneinfo import ZoneInfo

import pytest
from django.core.exceptions import ValidationError

from automations.prompting import prompt_fill
from automations.schedule import cron_clean, latest_time, next_time, zone

PARIS = ZoneInfo("Europe/Paris")


def test_monday_at_eight_is_eight_in_the_automations_zone_summer_and_winter():
    winter = next_time("0 8 * * 1", "Europe/Paris", datetime(2026, 11, 28, 12, tzinfo=UTC))
    summer = next_time("0 8 * * 1", "Europe/Paris", datetime(2026, 6, 27, 12, tzinfo=UTC))
    assert winter.astimezone(PARIS) == datetime(2026, 11, 30, 8, tzinfo=PARIS)
    assert winter.astimezone(UTC).hour == 7 and summer.astimezone(UTC).hour == 6


def test_a_time_the_clock_skips_runs_at_the_first_minute_that_exists():
    found = next_time("30 2 * * *", "Europe/Paris", datetime(2026, 3, 28, 12, tzinfo=PARIS))
    assert found.astimezone(PARIS).replace(tzinfo=None) == datetime(2026, 3, 29, 3, 0)


def test_the_latest_due_time_is_the_last_one_at_or_before_now():
    now = datetime(2026, 11, 29, 7, 3, 20, tzinfo=UTC)
    assert latest_time("* * * * *", "UTC", now) == datetime(2026, 11, 29, 7, 3, tzinfo=UTC)
    assert latest_time("*/5 * * * *", "Europe/Paris", now).astimezone(UTC) == datetime(2026, 11, 29, 7, 0, tzinfo=UTC)
    assert latest_time("* * * * * */10", "UTC", now) == datetime(2026, 11, 29, 7, 3, 20, tzinfo=UTC)


@pytest.mark.parametrize(
    ("expression", "message"),
    [
        ("* * * *", "five fields"),
        ("* * * * * * *", "five fields"),
        ("61 * * * *", "Not a cron expression"),
        ("* * * * mon-xyz", "Not a cron expression"),
    ],
)
def test_a_bad_cron_expression_is_refused_naming_the_field(expression, message):
    with pytest.raises(ValidationError) as refused:
        cron_clean(expression)
    assert list(refused.value.message_dict) == ["cron"] and message in refused.value.message_dict["cron"][0]


def test_cron_fields_are_single_spaced_and_an_unknown_zone_is_refused():
    assert cron_clean("  0   8 * *  1 ") == "0 8 * * 1"
    with pytest.raises(ValidationError) as refused:
        zone("Mars/Olympus")
    assert "Unknown time zone 'Mars/Olympus'" in refused.value.message_dict["timezone"][0]


def test_placeholders_are_filled_in_the_zone_and_other_braces_stay():
    at = datetime(2026, 11, 30, 7, 0, tzinfo=UTC)
    text = prompt_fill(
        'On {weekday} {date} at {time}: review {payload.file.name} by {payload.author} {payload.none} {"keep": 1}',
        at=at,
        timezone_name="Europe/Paris",
        payload={"file": {"name": "ddr-12.md"}, "author": "sam"},
    )
    assert text == 'On Monday 2026-11-30 at 08:00: review ddr-12.md by sam  {"keep": 1}'
    assert prompt_fill("{payload.list}", at=at, timezone_name="UTC", payload={"list": [1, 2]}) == "[1, 2]"
