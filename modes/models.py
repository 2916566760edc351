from __future__ import annotations

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import models

from aptix.ids import new_hex_id

from .validators import (
    KNOWLEDGE_PROJECT,
    normal_checks,
    validate_approval_policy,
    validate_checks,
    validate_knowledge_scope,
    validate_mode_key,
    validate_string_list,
    validate_test_utterances,
    validate_tool_policy,
)

DEFAULT_MODE_KEY = "general"


def default_knowledge_scope() -> str:
    return KNOWLEDGE_PROJECT


ERROR_DEFAULT_MUST_BE_ACTIVE = "The default mode cannot be deactivated. Make another mode the default first."
ERROR_DEFAULT_CANNOT_BE_UNSET = (
    "There must always be a default mode. Make another mode the default instead of unsetting this one."
)
ERROR_DEFAULT_CANNOT_BE_DELETED = "The default mode cannot be deleted. Make another mode the default first."


class AgentMode(models.Model):
    """A catalog entry (TUL-010 §2): a behavioural context a session runs in."""

    id = models.CharField(primary_key=True, max_length=32, default=new_hex_id, editable=False)
    key = models.CharField(
        max_length=64,
        unique=True,
        validators=[validate_mode_key],
        help_text="Stable key stored on sessions, e.g. 'data-analysis'. Lower-case letters, digits, hyphens.",
    )
    display_name = models.CharField(max_length=120)
    description = models.TextField(help_text="Short explanation of what the mode is for.")
    system_prompt_summary = models.TextField(
        blank=True, help_text="Single paragraph summarising how prompts treat this mode."
    )
    system_prompt = models.TextField(
        blank=True, help_text="The prompt layer sent to the model for sessions in this mode."
    )
    is_default = models.BooleanField(
        default=False, help_text="New sessions start in the default mode. Exactly one mode is the default."
    )
    human_role_hints = models.JSONField(default=list, blank=True, validators=[validate_string_list])
    example_utterances = models.JSONField(default=list, blank=True, validators=[validate_string_list])
    test_utterances = models.JSONField(
        default=list,
        blank=True,
        validators=[validate_test_utterances],
        help_text="Requests that belong to this mode, kept for routing tests: unlike the example utterances "
        "they are never shown to the model.",
    )
    checks = models.JSONField(
        default=list,
        blank=True,
        validators=[validate_checks],
        help_text='What a turn in this mode must do: a list of {"prompt", "execution": "ask"|"agent", "expect": '
        '{"tool", "contains", "not_contains", "status"}}.',
    )
    knowledge_scope = models.JSONField(
        default=default_knowledge_scope,
        blank=True,
        validators=[validate_knowledge_scope],
        verbose_name="Knowledge scope",
        help_text='What knowledge_search searches in this mode: "project" (the session\'s project), "none", or '
        "a list of project ids or names it always searches (a company-wide policy library). A search never "
        "returns a passage of a project the user is not a member of.",
    )
    tool_policy = models.JSONField(
        default=list,
        blank=True,
        validators=[validate_tool_policy],
        help_text="Tools this mode offers: '*', an internal tool such as 'image_gen', '<server>.*' or "
        "'<server>.<tool>'. agent_change_mode is always offered.",
    )
    model = models.CharField(
        max_length=100,
        blank=True,
        help_text="A model from the deployment's models configuration for this mode's turns (e.g. a stronger one "
        "for data analysis); empty: the default model. A user may pick another for their session.",
    )
    approval_policy = models.JSONField(
        default=list,
        blank=True,
        validators=[validate_approval_policy],
        help_text="Which tool calls wait for the user's approval: entries '<pattern>: auto' or '<pattern>: ask' "
        "with the tool policy's patterns ('fs.write_file: ask', 'sql.*: auto', '*: ask'); the most specific "
        "wins. Unmatched: read-only MCP tools run, other MCP tools ask, internal tools run. Mode changes "
        "always need the user's consent.",
    )
    execution = models.CharField(
        max_length=8,
        blank=True,
        default="",
        choices=[("", "Keep the session's"), ("ask", "Ask"), ("agent", "Agent")],
        help_text="How a session branched into this mode, or carrying a request on after switching to it, runs "
        "(e.g. Agent for a mode whose work needs MCP tools); empty: it keeps the session's Ask or Agent.",
    )
    ask_followup = models.BooleanField(
        null=True,
        blank=True,
        default=None,
        choices=[(None, "The model's setting"), (True, "Yes"), (False, "No")],
        verbose_name="Ask follow-up",
        help_text="Whether an Ask turn may call the model once more, without tools, to answer from its tool "
        "results (a small model that answers with a tool call and no text needs it). Unset: the model's "
        "askFollowup in the models configuration, else APTIX_ASK_FOLLOWUP.",
    )
    is_active = models.BooleanField(default=True)
    ordering = models.PositiveIntegerField(default=100)
    teams = models.ManyToManyField(
        "aptix.Team",
        blank=True,
        related_name="catalog_modes",
        help_text="The teams that may use this mode; none chosen: every team.",
    )
    version = models.PositiveIntegerField(
        default=1, editable=False, help_text="The number of the published version: the one sessions run with."
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["ordering", "display_name"]
        verbose_name = "agent mode"
        permissions = [("publish_agentmode", "Can publish agent modes")]
        constraints = [
            # The database refuses two defaults; the service layer guarantees at least one.
            models.UniqueConstraint(
                fields=["is_default"], condition=models.Q(is_default=True), name="agentmode_single_default"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.display_name} ({self.key})"

    def save(self, *args, **kwargs) -> None:
        self.checks = normal_checks(self.checks)  # stored in canonical form, however it was written
        super().save(*args, **kwargs)

    def validate_constraints(self, exclude=None) -> None:
        # The single-default constraint is kept by modes.services.mode_save, which unsets the
        # previous default in the same transaction; validating it here would refuse every switch.
        super().validate_constraints(exclude={*(exclude or ()), "is_default"})

    def clean(self) -> None:
        self.key = (self.key or "").strip().lower()
        self.checks = normal_checks(self.checks)
        if self.is_default and not self.is_active:
            raise ValidationError({"is_active": ERROR_DEFAULT_MUST_BE_ACTIVE})
        if not self.is_default and not self._state.adding:
            was_default = AgentMode.objects.filter(pk=self.pk, is_default=True).exists()
            if was_default:
                raise ValidationError({"is_default": ERROR_DEFAULT_CANNOT_BE_UNSET})


class ModeHistory(models.Model):
    """Append-only audit trail of session mode changes (AGN-011 §3.2). Never edited or deleted."""

    class Source(models.TextChoices):
        TOOL = "tool", "Tool (agent_change_mode)"
        USER = "user", "User"
        SYSTEM = "system", "System (the mode was deactivated)"

    # Sessions and turns are referenced by string so `modes` never imports `agents`. PROTECT keeps
    # the audit trail from disappearing with them.
    session = models.ForeignKey("agents.AgentSession", on_delete=models.PROTECT, related_name="mode_history")
    previous_mode = models.CharField(max_length=64)
    new_mode = models.CharField(max_length=64)
    reason = models.TextField(blank=True)
    branch = models.BooleanField(default=False)
    team = models.ForeignKey("aptix.Team", on_delete=models.PROTECT, related_name="mode_history")
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, null=True, blank=True, related_name="mode_history"
    )
    turn = models.ForeignKey(
        "agents.Turn", on_delete=models.PROTECT, null=True, blank=True, related_name="mode_history"
    )
    tool_call_id = models.CharField(max_length=128, blank=True)
    source = models.CharField(max_length=8, choices=Source.choices, default=Source.TOOL)
    # The published version of the new mode when the session moved to it (None: before versions).
    mode_version = models.PositiveIntegerField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        verbose_name = "mode history entry"
        verbose_name_plural = "mode history"
        permissions = [("export_modehistory", "Can export mode history as CSV")]

    def __str__(self) -> str:
        return f"{self.previous_mode} → {self.new_mode} ({self.session_id})"


class ModeVersion(models.Model):
    """One immutable version of a catalog entry (modes/versions.py writes them): every field the
    entry has, as `snapshot` keyed by modes.versioning.VERSIONED_FIELDS. Only `state` and the review
    fields change after it is made; the fields never do."""

    class State(models.TextChoices):
        DRAFT = "draft", "Draft"
        PENDING = "pending", "Waiting for review"
        APPROVED = "approved", "Approved"
        REJECTED = "rejected", "Rejected"
        PUBLISHED = "published", "Published"
        SUPERSEDED = "superseded", "Superseded"

    mode = models.ForeignKey(AgentMode, on_delete=models.CASCADE, related_name="versions")
    number = models.PositiveIntegerField()
    state = models.CharField(max_length=10, choices=State.choices, default=State.DRAFT)
    snapshot = models.JSONField(default=dict)
    note = models.TextField(blank=True)
    restored_from = models.PositiveIntegerField(null=True, blank=True)
    author = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    reviewer = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    review_comment = models.TextField(blank=True)
    reviewed_at = models.DateTimeField(null=True, blank=True)
    published_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["mode", "-number"]
        verbose_name = "mode version"
        constraints = [models.UniqueConstraint(fields=["mode", "number"], name="modeversion_unique_number")]

    def __str__(self) -> str:
        return f"{self.mode_id} v{self.number} ({self.state})"


class CatalogEvent(models.Model):
    """Append-only audit trail of the catalog (modes/versions.py catalog_event_record). Never edited or
    deleted; the mode is kept by key so a deleted mode's rows stay."""

    class Action(models.TextChoices):
        DRAFT_SAVED = "draft_saved", "Draft saved"
        SUBMITTED = "submitted", "Submitted for review"
        APPROVED = "approved", "Approved"
        REJECTED = "rejected", "Rejected"
        PUBLISHED = "published", "Published"
        RESTORED = "restored", "Restored"
        DEFAULT_CHANGED = "default_changed", "Default changed"
        ACTIVATED = "activated", "Activated"
        DEACTIVATED = "deactivated", "Deactivated"
        IMPORTED = "imported", "Imported"
        DELETED = "deleted", "Deleted"

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, null=True, blank=True, related_name="catalog_events"
    )
    mode_key = models.CharField(max_length=64, db_index=True)
    version = models.PositiveIntegerField(null=True, blank=True)
    action = models.CharField(max_length=16, choices=Action.choices)
    note = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        verbose_name = "catalog event"
        permissions = [("export_catalogevent", "Can export catalog events as CSV")]

    def __str__(self) -> str:
        return f"{self.action} {self.mode_key} v{self.version}"


class TeamDefaultMode(models.Model):
    """A team's own default mode (AGN-011 §3.1: a new session in the team starts here unless its caller
    names a mode). Set by a team owner or an administrator (modes.services.team_default_mode_set).

    A choice that no longer applies — its mode deactivated, or no longer for this team — is kept but
    ignored (modes.catalog.default_mode_for_team falls back to the catalog's default), so reactivating
    the mode brings it back; deleting the mode deletes the choice."""

    team = models.OneToOneField("aptix.Team", on_delete=models.CASCADE, related_name="default_mode_choice")
    mode = models.ForeignKey(AgentMode, on_delete=models.CASCADE, related_name="team_defaults")
    set_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        verbose_name = "team default mode"

    def __str__(self) -> str:
        return f"{self.team} → {self.mode.key}"
