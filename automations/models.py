"""An automation (a prompt run on a schedule, a webhook or a click, under its owner's identity), its
runs, the inbox items that route a paused run to a person, and the audit of changes.

Written only by automations/services.py (automations, audit), automations/runs.py (runs) and
automations/inbox.py (inbox items)."""

from __future__ import annotations

from django.conf import settings
from django.db import models

from aptix.ids import new_hex_id


class Overlap(models.TextChoices):
    """What a scheduled time does while the automation's previous run still goes."""

    SKIP = "skip", "Skip it"
    QUEUE = "queue", "Run it after"


class Automation(models.Model):
    id = models.CharField(primary_key=True, max_length=32, default=new_hex_id, editable=False)
    team = models.ForeignKey("aptix.Team", on_delete=models.CASCADE, related_name="automations")
    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="automations")
    # A teammate who may answer the runs' approvals too (their inbox shows them).
    delegate = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="delegated_automations"
    )
    project = models.ForeignKey(
        "projects.Project", on_delete=models.SET_NULL, null=True, blank=True, related_name="automations"
    )
    name = models.CharField(max_length=120)
    # What each run sends: {date}, {time}, {weekday} and a webhook's {payload.<field>} filled in (prompting.py).
    prompt = models.TextField()
    mode = models.CharField(max_length=64, blank=True)  # blank: the project's or the team's default
    execution = models.CharField(max_length=8, default="agent")
    model = models.CharField(max_length=100, blank=True)  # a models.json key; blank: the mode's
    # Append every run to this session; null: a new session per run.
    conversation = models.ForeignKey(
        "agents.AgentSession", on_delete=models.SET_NULL, null=True, blank=True, related_name="automations"
    )
    cron = models.CharField(max_length=120, blank=True)  # five fields (schedule.py); blank: no schedule
    timezone = models.CharField(max_length=64, default="UTC")
    run_at = models.DateTimeField(null=True, blank=True)  # "run once at"
    webhook = models.BooleanField(default=False)
    # The webhook's secret is derived from SECRET_KEY and this salt (webhooks.py), never stored.
    webhook_salt = models.CharField(max_length=32, blank=True)
    # Tools its runs call without asking (each one the owner could approve; an audit row when saved).
    allowed_tools = models.JSONField(default=list, blank=True)
    approval_timeout_hours = models.PositiveIntegerField(default=24)
    catch_up = models.BooleanField(default=True)
    overlap = models.CharField(max_length=8, choices=Overlap.choices, default=Overlap.SKIP)
    max_retries = models.PositiveSmallIntegerField(default=2)
    enabled = models.BooleanField(default=True)
    # Why it stopped by itself (3 failures in a row, its owner left the team…); "" when paused by a person.
    paused_reason = models.CharField(max_length=255, blank=True)
    failures_in_row = models.PositiveSmallIntegerField(default=0)
    # The next scheduled time not yet claimed (schedule.py keeps it); null: nothing scheduled.
    next_run_at = models.DateTimeField(null=True, blank=True, db_index=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["name", "id"]
        constraints = [
            models.CheckConstraint(condition=models.Q(overlap__in=["skip", "queue"]), name="automation_overlap_valid"),
            models.CheckConstraint(
                condition=models.Q(execution__in=["ask", "agent"]), name="automation_execution_valid"
            ),
        ]

    def __str__(self) -> str:
        return self.name


class AutomationRun(models.Model):
    """One run of an automation. A scheduled time is claimed by inserting its row: the unique constraint
    on (automation, scheduled_for, attempt) is what makes it run once however many processes look."""

    class Trigger(models.TextChoices):
        SCHEDULE = "schedule", "Schedule"
        WEBHOOK = "webhook", "Webhook"
        MANUAL = "manual", "Run now"

    class Status(models.TextChoices):
        QUEUED = "queued", "Queued"
        RUNNING = "running", "Running"
        REQUIRES_ACTION = "requires_action", "Requires action"
        AWAITING_APPROVAL = "awaiting_approval", "Awaiting approval"
        COMPLETED = "completed", "Completed"
        FAILED = "failed", "Failed"
        CANCELLED = "cancelled", "Cancelled"
        LIMIT_REACHED = "limit_reached", "Limit reached"
        EXPIRED = "expired", "Expired"
        SKIPPED = "skipped", "Skipped"

    FINAL = frozenset({"completed", "failed", "cancelled", "limit_reached", "expired", "skipped"})

    id = models.CharField(primary_key=True, max_length=32, default=new_hex_id, editable=False)
    automation = models.ForeignKey(Automation, on_delete=models.CASCADE, related_name="runs")
    trigger = models.CharField(max_length=8, choices=Trigger.choices)
    scheduled_for = models.DateTimeField(null=True, blank=True)  # the schedule's time; null for the others
    attempt = models.PositiveSmallIntegerField(default=1)  # 2, 3…: a retry of the failed attempt before it
    status = models.CharField(max_length=20, choices=Status.choices, default=Status.QUEUED, db_index=True)
    payload = models.JSONField(default=dict, blank=True)  # a webhook's JSON body
    prompt = models.TextField(blank=True)  # the prompt as sent, placeholders filled
    session = models.ForeignKey(
        "agents.AgentSession", on_delete=models.SET_NULL, null=True, blank=True, related_name="automation_runs"
    )
    turn = models.OneToOneField(
        "agents.Turn", on_delete=models.SET_NULL, null=True, blank=True, related_name="automation_run"
    )
    error = models.TextField(blank=True)
    tokens = models.PositiveIntegerField(default=0)
    retry_at = models.DateTimeField(null=True, blank=True)  # a failed attempt's next one, when it has one
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    ended_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [
            models.UniqueConstraint(
                fields=["automation", "scheduled_for", "attempt"],
                condition=models.Q(trigger="schedule"),
                name="automation_run_once_per_time",
            ),
        ]
        indexes = [models.Index(fields=["automation", "-created_at"], name="automation_run_recent")]

    def __str__(self) -> str:
        return f"{self.automation_id} {self.trigger} {self.status}"

    @property
    def is_final(self) -> bool:
        return self.status in self.FINAL


class InboxItem(models.Model):
    """Something that waits for a person: an approval a paused run needs (resolved when decided or
    when the run ends), or a notice (a run failed, expired, was refused by the quota; an automation
    paused itself). One row per person it reaches (the owner, the delegate)."""

    class Kind(models.TextChoices):
        APPROVAL = "approval", "Approval"
        NOTICE = "notice", "Notice"

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="inbox_items")
    kind = models.CharField(max_length=8, choices=Kind.choices)
    automation = models.ForeignKey(Automation, on_delete=models.CASCADE, related_name="inbox_items")
    run = models.ForeignKey(AutomationRun, on_delete=models.CASCADE, related_name="inbox_items")
    approval = models.ForeignKey(
        "agents.ToolApproval", on_delete=models.CASCADE, null=True, blank=True, related_name="inbox_items"
    )
    text = models.CharField(max_length=500)
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)
    resolved_at = models.DateTimeField(null=True, blank=True)  # decided, dismissed or its run ended

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [
            models.UniqueConstraint(fields=["user", "approval"], name="inbox_item_once_per_approval"),
        ]
        indexes = [models.Index(fields=["user", "resolved_at"], name="inbox_open_items")]

    def __str__(self) -> str:
        return self.text


class WebhookDelivery(models.Model):
    """A signature a webhook call carried: a second call with it is a replay (refused). Rows older than
    the signature window are deleted as new ones come."""

    automation = models.ForeignKey(Automation, on_delete=models.CASCADE, related_name="deliveries")
    signature = models.CharField(max_length=64)
    at = models.DateTimeField(auto_now_add=True, db_index=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["automation", "signature"], name="webhook_signature_once")]

    def __str__(self) -> str:
        return f"{self.automation_id} {self.at:%Y-%m-%d %H:%M:%S}"


class AutomationAudit(models.Model):
    """Who created, changed, paused, resumed or deleted an automation, or pre-approved a tool for it,
    when: append-only, copies the automation's id and name so it outlives it."""

    class Action(models.TextChoices):
        CREATED = "created"
        CHANGED = "changed"
        PAUSED = "paused"
        RESUMED = "resumed"
        DELETED = "deleted"
        TOOL_ALLOWED = "tool_allowed"
        TOOL_DISALLOWED = "tool_disallowed"
        STOPPED = "stopped"  # paused by Aptix itself: failures in a row, its owner gone

    action = models.CharField(max_length=16, choices=Action.choices)
    at = models.DateTimeField(auto_now_add=True, db_index=True)
    actor = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True)
    actor_name = models.CharField(max_length=150, blank=True)
    team = models.ForeignKey("aptix.Team", on_delete=models.SET_NULL, null=True, blank=True, related_name="+")
    automation_id = models.CharField(max_length=32, db_index=True)
    automation_name = models.CharField(max_length=120)
    detail = models.CharField(max_length=500, blank=True)

    class Meta:
        ordering = ["-at", "-id"]
        verbose_name = "automation audit entry"
        verbose_name_plural = "automation audit"

    def __str__(self) -> str:
        return f"{self.action} {self.automation_name}"
