"""The automation form (new and edit pages): its choices come from the team (modes, members), the
user (projects, sessions) and the deployment (models, tools). Its cleaned data becomes the services'
dictionary (`as_input`, in the API's names), and a ValidationError the service raises is put back on
the field it names (`add_service_errors`)."""

from __future__ import annotations

from datetime import datetime
from typing import Any, cast
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from django import forms
from django.core.exceptions import ValidationError
from django.utils import timezone

from agents.llm.catalog import models_config
from automations.models import Automation, Overlap
from automations.selectors import sessions_to_append_to, team_others
from modes.catalog import modes_for_team
from projects.services import project_list
from tools.registry import INTERNAL_TOOLS, mcp_registry

# The API's field (as the service's ValidationError names it) → the form's field.
API_TO_FIELD = {
    "name": "name",
    "prompt": "prompt",
    "mode": "mode",
    "execution": "execution",
    "model": "model",
    "projectId": "project",
    "conversationId": "conversation",
    "schedule": "cron",
    "cron": "cron",
    "timezone": "timezone",
    "runAt": "run_at",
    "webhook": "webhook",
    "allowedTools": "allowed_tools",
    "approvalTimeoutHours": "approval_timeout_hours",
    "catchUp": "catch_up",
    "overlap": "overlap",
    "enabled": "enabled",
    "maxRetries": "max_retries",
    "delegate": "delegate",
}
PROMPT_HELP = (
    "Placeholders filled in when it runs: {date}, {time} and {weekday} (in the time zone below); "
    "for a webhook, {payload.<field>} takes a field of the JSON body it was called with."
)
ERROR_TIMEZONE = "Unknown time zone {name!r}: use an IANA name such as 'Europe/Paris' or 'UTC'."


def tool_choices() -> list[tuple[str, str]]:
    """The tools an automation may pre-approve: the internal ones but the mode change (always asks),
    and the MCP tools the registry knows."""
    internal = [name for name in INTERNAL_TOOLS if name != "agent_change_mode"]
    return [(name, name) for name in sorted(internal) + sorted(mcp_registry.names())]


class AutomationForm(forms.Form):
    name = forms.CharField(max_length=120)
    prompt = forms.CharField(widget=forms.Textarea(attrs={"rows": 5}), help_text=PROMPT_HELP)
    mode = forms.ChoiceField(required=False)
    execution = forms.ChoiceField(
        choices=[("agent", "Agent"), ("ask", "Ask")], initial="agent", widget=forms.RadioSelect
    )
    model = forms.ChoiceField(required=False)
    project = forms.ChoiceField(required=False)
    conversation = forms.ChoiceField(required=False, label="Append to session")
    cron = forms.CharField(
        required=False,
        label="Cron schedule",
        help_text="Five fields: minute hour day month weekday (0 8 * * 1: Mondays at 08:00). Blank: no schedule.",
        widget=forms.TextInput(attrs={"placeholder": "0 8 * * 1", "spellcheck": "false"}),
    )
    timezone = forms.CharField(initial="UTC", max_length=64, label="Time zone", help_text="An IANA name: Europe/Paris.")
    run_at = forms.DateTimeField(
        required=False,
        label="Run once at",
        help_text="In the time zone above.",
        widget=forms.DateTimeInput(attrs={"type": "datetime-local"}, format="%Y-%m-%dT%H:%M"),
        input_formats=["%Y-%m-%dT%H:%M", "%Y-%m-%dT%H:%M:%S", "%Y-%m-%d %H:%M"],
    )
    webhook = forms.BooleanField(
        required=False, label="Webhook", help_text="Run when a signed POST arrives (its secret is shown once)."
    )
    allowed_tools = forms.MultipleChoiceField(
        required=False,
        label="Pre-approved tools",
        widget=forms.CheckboxSelectMultiple,
        help_text="Its runs call these without asking; any other tool that asks waits in your inbox.",
    )
    approval_timeout_hours = forms.IntegerField(
        min_value=1, max_value=24 * 30, initial=24, label="Approval timeout (hours)"
    )
    catch_up = forms.BooleanField(
        required=False, initial=True, label="Catch up: run once at start-up for a time missed while Aptix was down"
    )
    overlap = forms.ChoiceField(choices=Overlap.choices, initial=Overlap.SKIP, label="While the previous run goes")
    max_retries = forms.IntegerField(min_value=0, max_value=10, initial=2, label="Retries after a failure")
    delegate = forms.ChoiceField(
        required=False, help_text="A teammate who may answer its approvals too (their inbox shows them)."
    )
    enabled = forms.BooleanField(required=False, initial=True, label="Enabled")

    def __init__(self, *args: Any, user: Any, team: Any, automation: Automation | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.user, self.team = user, team
        choices = {
            "mode": [("", "The team's default"), *((m.key, m.display_name) for m in modes_for_team(team))],
            "model": [("", "The mode's model"), *((m.key, m.label) for m in models_config().choices)],
            "project": [("", "None"), *((p.pk, p.name) for p in project_list(user=user, team=team))],
            "conversation": [
                ("", "A new session per run"),
                *(
                    (s.pk, s.title or "Untitled session")
                    for s in sessions_to_append_to(
                        user=user, team=team, keep=automation.conversation if automation else None
                    )
                ),
            ],
            "delegate": [("", "Nobody"), *((name, name) for name in team_others(team=team, user=user))],
            "allowed_tools": tool_choices(),
        }
        for name, values in choices.items():
            cast(forms.ChoiceField, self.fields[name]).choices = values

    def clean_timezone(self) -> str:
        name = self.cleaned_data["timezone"].strip() or "UTC"
        try:
            ZoneInfo(name)
        except (ZoneInfoNotFoundError, ValueError):
            raise ValidationError(ERROR_TIMEZONE.format(name=name)) from None
        return name

    def as_input(self, *, unchanged_from: Automation | None = None) -> dict[str, Any]:
        """The cleaned data in the services' (the API's) names. Editing (`unchanged_from`: the
        automation as it is), a "run once at" left as it was is not sent: once passed, it would be
        refused as a time in the past whatever else changed."""
        data = self.cleaned_data
        cron = data["cron"].strip()
        run_at: datetime | None = data["run_at"]
        if run_at is not None:  # the datetime-local input has no zone: the form's time zone says it
            run_at = run_at.replace(tzinfo=None).replace(tzinfo=ZoneInfo(data["timezone"]))
        values = {
            "name": data["name"],
            "prompt": data["prompt"],
            "mode": data["mode"],
            "execution": data["execution"],
            "model": data["model"],
            "projectId": data["project"] or None,
            "conversationId": data["conversation"] or None,
            "schedule": {"cron": cron, "timezone": data["timezone"]} if cron else None,
            "runAt": run_at.isoformat() if run_at else None,
            "webhook": data["webhook"],
            "allowedTools": list(data["allowed_tools"]),
            "approvalTimeoutHours": data["approval_timeout_hours"],
            "catchUp": data["catch_up"],
            "overlap": data["overlap"],
            "enabled": data["enabled"],
            "maxRetries": data["max_retries"],
            "delegate": data["delegate"] or None,
        }
        if unchanged_from is not None and _same_minute(run_at, unchanged_from.run_at):
            del values["runAt"]  # the input shows minutes: what it showed, sent back, is no change
        return values

    def mark_invalid(self) -> None:
        """Each field with an error says so to assistive technology (aria-invalid, and its message
        as the description: templates/automations/_field.html draws it under this id)."""
        for name in self.errors:
            if name in self.fields:
                attrs = self.fields[name].widget.attrs
                attrs["aria-invalid"] = "true"
                attrs["aria-describedby"] = f"{self[name].auto_id}-error"

    def add_service_errors(self, exc: ValidationError) -> None:
        """Put the service's refusal on the field it names (else above the form)."""
        named = exc.message_dict if hasattr(exc, "error_dict") else {"": exc.messages}
        for key, messages in named.items():
            field = API_TO_FIELD.get(key.split("[", 1)[0])
            for message in messages:
                self.add_error(field if field in self.fields else None, message)


def _same_minute(a: datetime | None, b: datetime | None) -> bool:
    if a is None or b is None:
        return a is b
    return a.replace(second=0, microsecond=0) == b.replace(second=0, microsecond=0)


def form_initial(automation: Automation) -> dict[str, Any]:
    """The edit form's values: the automation's settings (its "run once at" in its own time zone)."""
    run_at = automation.run_at
    if run_at is not None:
        run_at = timezone.localtime(run_at, ZoneInfo(automation.timezone))
    return {
        "name": automation.name,
        "prompt": automation.prompt,
        "mode": automation.mode,
        "execution": automation.execution,
        "model": automation.model,
        "project": automation.project_id or "",
        "conversation": automation.conversation_id or "",
        "cron": automation.cron,
        "timezone": automation.timezone,
        "run_at": run_at.replace(tzinfo=None) if run_at else None,
        "webhook": automation.webhook,
        "allowed_tools": list(automation.allowed_tools or []),
        "approval_timeout_hours": automation.approval_timeout_hours,
        "catch_up": automation.catch_up,
        "overlap": automation.overlap,
        "max_retries": automation.max_retries,
        "delegate": automation.delegate.get_username() if automation.delegate else "",
        "enabled": automation.enabled,
    }
