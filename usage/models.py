"""What the teams spend: tokens and cost per day (the reports) and per calendar month (the quotas).

Both tables are counters that a run adds to after each model call (usage/services.py, one atomic
upsert per table), so a report is a sum over at most a few thousand small rows however many turns a
year had, and a quota check reads a handful of rows."""

from __future__ import annotations

from django.conf import settings
from django.db import models

# Exact for prices with up to four decimals per million tokens.
COST_DIGITS, COST_PLACES = 20, 10


class UsageDay(models.Model):
    """One team member's use of one model in one mode on one day (UTC)."""

    day = models.DateField()
    team = models.ForeignKey("aptix.Team", on_delete=models.CASCADE, related_name="+")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    model = models.CharField(max_length=100, help_text="The models.json key (the model's name without the file).")
    mode = models.CharField(max_length=64, help_text="The session's mode when the turn started.")
    turns = models.PositiveIntegerField(default=0)
    prompt_tokens = models.BigIntegerField(default=0)
    completion_tokens = models.BigIntegerField(default=0)
    cost = models.DecimalField(
        max_digits=COST_DIGITS, decimal_places=COST_PLACES, default=0, help_text="Of the priced tokens only."
    )
    unpriced_tokens = models.BigIntegerField(default=0, help_text="Tokens of a model without a price: cost unknown.")

    class Meta:
        verbose_name = "usage"
        verbose_name_plural = "usage"
        constraints = [
            models.UniqueConstraint(fields=["day", "team", "user", "model", "mode"], name="usageday_unique_key"),
        ]
        indexes = [
            models.Index(fields=["team", "day"], name="usageday_team_day"),
            models.Index(fields=["user", "day"], name="usageday_user_day"),
        ]

    def __str__(self) -> str:
        return f"{self.day} {self.user_id} {self.model} {self.mode}"


class UsageMonth(models.Model):
    """One team member's tokens and cost in one calendar month (the first day names it): the counter
    the quotas are checked against. The team's use is the sum of its members' rows."""

    month = models.DateField()
    team = models.ForeignKey("aptix.Team", on_delete=models.CASCADE, related_name="+")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    tokens = models.BigIntegerField(default=0)
    cost = models.DecimalField(max_digits=COST_DIGITS, decimal_places=COST_PLACES, default=0)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["team", "month", "user"], name="usagemonth_unique_key"),
        ]

    def __str__(self) -> str:
        return f"{self.month:%Y-%m} {self.team_id} {self.user_id}"
