"""What the teams spend, as counters a run adds to after each model call (usage/services.py, one
atomic upsert per table), at three grains so that every report reads a few thousand rows however
many turns a year had:

- UsageDay: per day, team, member, model and mode — one member's reports (Settings, the API);
- UsageTeamDay: per day, team, model and mode — the admin's reports across members, and its chart;
- UsageMonth: per calendar month, team, member, model and mode — the quotas (the team's month is
  the sum of its members' rows) and the admin's "by user" over whole months."""

from __future__ import annotations

from django.conf import settings
from django.db import models

# Exact for prices with up to four decimals per million tokens.
COST_DIGITS, COST_PLACES = 20, 10


class Counters(models.Model):
    team = models.ForeignKey("aptix.Team", on_delete=models.CASCADE, related_name="+")
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
        abstract = True


class UsageDay(Counters):
    """One team member's use of one model in one mode on one day."""

    day = models.DateField()
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")

    class Meta:
        verbose_name = "usage"
        verbose_name_plural = "usage"
        constraints = [
            models.UniqueConstraint(fields=["day", "team", "user", "model", "mode"], name="usageday_unique_key"),
        ]
        indexes = [
            models.Index(fields=["user", "day"], name="usageday_user_day"),
            models.Index(fields=["team", "day"], name="usageday_team_day"),
        ]

    def __str__(self) -> str:
        return f"{self.day} {self.user_id} {self.model} {self.mode}"


class UsageTeamDay(Counters):
    """A team's use of one model in one mode on one day, all members together."""

    day = models.DateField()

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["day", "team", "model", "mode"], name="usageteamday_unique_key"),
        ]
        indexes = [models.Index(fields=["team", "day"], name="usageteamday_team_day")]

    def __str__(self) -> str:
        return f"{self.day} {self.team_id} {self.model} {self.mode}"


class UsageMonth(Counters):
    """One team member's use of one model in one mode in one calendar month (its first day names it)."""

    month = models.DateField()
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["team", "month", "user", "model", "mode"], name="usagemonth_unique_key"),
        ]
        indexes = [models.Index(fields=["month"], name="usagemonth_month")]

    def __str__(self) -> str:
        return f"{self.month:%Y-%m} {self.team_id} {self.user_id}"
