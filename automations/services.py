"""The only writer of automations and their audit: create, change, pause, resume, delete (each an
AutomationAudit row; each tool added to or taken from the pre-approved list one more), and the reads
every access check goes through (`automation_get`: anyone but the owner, or an admin of its team for
reading, gets AutomationNotFoundError, a 404).

Input comes in the API's names (`AutomationInput`, what `automation_json` answers); the pages' forms
hand the same dictionary. A bad value is a ValidationError naming the API's field; nothing is written."""

from __future__ import annotations

import secrets
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models import QuerySet
from django.utils import timezone
from django.utils.dateparse import parse_datetime

from agents.llm.catalog import models_config
from agents.sessions import SessionNotFoundError, session_get
from aptix.models import Membership
from modes.catalog import ModeValidationError, mode_validate
from projects.models import Project
from projects.services import ProjectNotFoundError, project_get
from tools.mcp import TOOL_SEPARATOR, McpConfigError, load_config
from tools.registry import INTERNAL_TOOLS, mcp_registry

from .models import Automation, AutomationAudit, Overlap
from .schedule import cron_clean, next_time, zone

MAX_PROMPT = 20_000
MAX_TIMEOUT_HOURS = 24 * 30
MAX_RETRIES = 10
FIELDS = (
    "name",
    "prompt",
    "mode",
    "execution",
    "model",
    "projectId",
    "conversationId",
    "schedule",
    "runAt",
    "webhook",
    "allowedTools",
    "approvalTimeoutHours",
    "catchUp",
    "overlap",
    "enabled",
    "maxRetries",
    "delegate",
)
ERROR_UNKNOWN_FIELD = "Unknown field {name!r}. Fields: {fields}."
ERROR_UNKNOWN_TOOL = "Unknown tool {name!r}: name an internal tool or an MCP server's tool as <server>__<tool>."
ERROR_SCHEDULE = 'A schedule is {"cron": "<five fields>", "timezone": "<IANA name>"} or null.'
ERROR_MODE_CHANGE_TOOL = "Mode changes always ask a person; agent_change_mode cannot be pre-approved."


class AutomationNotFoundError(LookupError):
    """No automation with this id that the user may see (a 404, whoever's it is)."""


def automations_of(*, user: Any) -> QuerySet[Automation]:
    """The user's own automations, in the teams they are still a member of."""
    teams = Membership.objects.filter(user=user).values("team_id")
    return Automation.objects.filter(owner=user, team_id__in=teams).select_related("team", "project", "owner")


def automation_get(*, user: Any, automation_id: str) -> Automation:
    """The user's own automation, or AutomationNotFoundError (another's, another team's, none)."""
    found = automations_of(user=user).filter(pk=str(automation_id)).first()
    if found is None:
        raise AutomationNotFoundError(automation_id)
    return found


def automation_json(automation: Automation) -> dict[str, Any]:
    """An automation as the API (and the pages) show it: the input's fields, never the webhook's secret."""
    return {
        "id": automation.pk,
        "name": automation.name,
        "prompt": automation.prompt,
        "mode": automation.mode or None,
        "execution": automation.execution,
        "model": automation.model or None,
        "projectId": automation.project_id,
        "conversationId": automation.conversation_id,
        "schedule": {"cron": automation.cron, "timezone": automation.timezone} if automation.cron else None,
        "runAt": _iso(automation.run_at),
        "webhook": automation.webhook,
        "allowedTools": list(automation.allowed_tools or []),
        "approvalTimeoutHours": automation.approval_timeout_hours,
        "catchUp": automation.catch_up,
        "overlap": automation.overlap,
        "enabled": automation.enabled,
        "maxRetries": automation.max_retries,
        "delegate": automation.delegate.get_username() if automation.delegate is not None else None,
        "nextRunAt": _iso(automation.next_run_at),
        "pausedReason": automation.paused_reason or None,
        "createdAt": _iso(automation.created_at),
        "updatedAt": _iso(automation.updated_at),
    }


def _iso(value: datetime | None) -> str | None:
    """A time in ISO 8601, in UTC (as it reads back from the database, whatever zone it was given in)."""
    return value.astimezone(UTC).isoformat() if value else None


# --- writing ------------------------------------------------------------------------------------


def automation_create(*, user: Any, team: Any, data: Mapping[str, Any]) -> tuple[Automation, str | None]:
    """A new automation of `user` in `team` from `data` (the API's fields; `name` and `prompt`
    required). Answers it and, when it has a webhook, the webhook's secret (shown once)."""
    automation = Automation(team=team, owner=user)
    _apply(automation, {"webhook": False, **data}, creating=True)
    if automation.webhook:
        automation.webhook_salt = secrets.token_hex(16)
    automation.next_run_at = first_time(automation, timezone.now())
    with transaction.atomic():
        automation.save()
        _audit(automation, user, AutomationAudit.Action.CREATED, _summary(automation))
        for tool in automation.allowed_tools:
            _audit(automation, user, AutomationAudit.Action.TOOL_ALLOWED, tool)
    return automation, (webhook_secret(automation) if automation.webhook else None)


def automation_update(*, user: Any, automation: Automation, data: Mapping[str, Any]) -> tuple[Automation, str | None]:
    """Change the fields `data` names (PATCH). Turning the webhook on answers a new secret (once)."""
    before_tools = list(automation.allowed_tools or [])
    before = _summary(automation)
    had_webhook, was_enabled = automation.webhook, automation.enabled
    schedule_before = (automation.cron, automation.timezone, automation.run_at)
    _apply(automation, data, creating=False)
    secret = None
    if automation.webhook and not had_webhook:
        automation.webhook_salt = secrets.token_hex(16)
        secret = webhook_secret(automation)
    if not automation.webhook:
        automation.webhook_salt = ""
    now = timezone.now()
    if (automation.cron, automation.timezone, automation.run_at) != schedule_before or (
        automation.enabled and not was_enabled
    ):
        automation.next_run_at = first_time(automation, now)
    if automation.enabled and not was_enabled:
        automation.paused_reason, automation.failures_in_row = "", 0
    with transaction.atomic():
        automation.save()
        if automation.enabled != was_enabled:
            action = AutomationAudit.Action.RESUMED if automation.enabled else AutomationAudit.Action.PAUSED
            _audit(automation, user, action, "")
        after = _summary(automation)
        if after != before:
            _audit(automation, user, AutomationAudit.Action.CHANGED, after)
        for tool in automation.allowed_tools:
            if tool not in before_tools:
                _audit(automation, user, AutomationAudit.Action.TOOL_ALLOWED, tool)
        for tool in before_tools:
            if tool not in automation.allowed_tools:
                _audit(automation, user, AutomationAudit.Action.TOOL_DISALLOWED, tool)
    return automation, secret


def automation_pause(*, automation: Automation, by: Any | None, reason: str = "") -> Automation:
    """Stop its schedule and webhook (by a person: `by`; by Aptix itself: `reason` says why)."""
    with transaction.atomic():
        updated = Automation.objects.filter(pk=automation.pk, enabled=True).update(
            enabled=False, paused_reason=reason[:255], updated_at=timezone.now()
        )
        automation.enabled, automation.paused_reason = False, reason[:255]
        if updated:
            action = AutomationAudit.Action.STOPPED if by is None else AutomationAudit.Action.PAUSED
            _audit(automation, by, action, reason)
    return automation


def automation_resume(*, automation: Automation, by: Any) -> Automation:
    automation, _ = automation_update(user=by, automation=automation, data={"enabled": True})
    return automation


def automation_delete(*, automation: Automation, by: Any) -> None:
    with transaction.atomic():
        _audit(automation, by, AutomationAudit.Action.DELETED, "")
        automation.delete()


def _audit(automation: Automation, actor: Any | None, action: str, detail: str) -> None:
    AutomationAudit.objects.create(
        action=action,
        actor=actor,
        actor_name=getattr(actor, "username", "") if actor is not None else "Aptix",
        team_id=automation.team_id,
        automation_id=automation.pk,
        automation_name=automation.name,
        detail=detail[:500],
    )


def _summary(automation: Automation) -> str:
    """What an audit row says the automation is now: its triggers and how it runs."""
    triggers = []
    if automation.cron:
        triggers.append(f"cron {automation.cron} ({automation.timezone})")
    if automation.run_at:
        triggers.append(f"once at {automation.run_at.isoformat()}")
    if automation.webhook:
        triggers.append("webhook")
    mode = automation.mode or "default mode"
    return f"{'; '.join(triggers) or 'run now only'}; {mode}, {automation.execution}; enabled={automation.enabled}"


# --- the schedule -------------------------------------------------------------------------------


def first_time(automation: Automation, after: datetime) -> datetime | None:
    """The automation's next scheduled time after `after` (its cron's, or its "run once at" if not past)."""
    times = []
    if automation.cron:
        times.append(next_time(automation.cron, automation.timezone, after))
    if automation.run_at and automation.run_at > after:
        times.append(automation.run_at)
    return min(times) if times else None


def webhook_secret(automation: Automation) -> str:
    """The webhook's secret: derived from SECRET_KEY, the automation and its salt, so nothing secret is
    stored (a new salt is a new secret; changing SECRET_KEY changes every webhook's secret)."""
    from .webhooks import derive_secret

    return derive_secret(automation.pk, automation.webhook_salt)


# --- reading the input --------------------------------------------------------------------------


def _apply(automation: Automation, data: Mapping[str, Any], *, creating: bool) -> None:
    """Set the fields `data` names on `automation` (unsaved), each read by its parser below."""
    unknown = [name for name in data if name not in FIELDS]
    if unknown:
        raise ValidationError({unknown[0]: ERROR_UNKNOWN_FIELD.format(name=unknown[0], fields=", ".join(FIELDS))})
    if creating:
        for required in ("name", "prompt"):
            if required not in data:
                raise ValidationError({required: "This field is required."})
    owner, team = automation.owner, automation.team
    parsers: dict[str, Any] = {
        "name": lambda v: {"name": _text(v, "name", 120)},
        "prompt": lambda v: {"prompt": _text(v, "prompt", MAX_PROMPT)},
        "mode": lambda v: {"mode": _mode(v, team)},
        "execution": lambda v: {"execution": _choice(v, "execution", ("ask", "agent"))},
        "model": lambda v: {"model": _model(v)},
        "projectId": lambda v: {"project": _project(v, owner, team)},
        "conversationId": lambda v: {"conversation": _conversation(v, owner, team)},
        "schedule": lambda v: dict(zip(("cron", "timezone"), _schedule(v), strict=True)),
        "runAt": lambda v: {"run_at": _future(_when(v, "runAt"), "runAt")},
        "webhook": lambda v: {"webhook": _flag(v, "webhook")},
        "catchUp": lambda v: {"catch_up": _flag(v, "catchUp")},
        "enabled": lambda v: {"enabled": _flag(v, "enabled")},
        "allowedTools": lambda v: {"allowed_tools": _tools(v)},
        "approvalTimeoutHours": lambda v: {
            "approval_timeout_hours": _number(v, "approvalTimeoutHours", 1, MAX_TIMEOUT_HOURS)
        },
        "maxRetries": lambda v: {"max_retries": _number(v, "maxRetries", 0, MAX_RETRIES)},
        "overlap": lambda v: {"overlap": _choice(v, "overlap", tuple(Overlap.values))},
        "delegate": lambda v: {"delegate": _delegate(v, owner, team)},
    }
    for name, value in data.items():
        for attr, parsed in parsers[name](value).items():
            setattr(automation, attr, parsed)


def _flag(value: Any, name: str) -> bool:
    if not isinstance(value, bool):
        raise ValidationError({name: f"{name} must be true or false."})
    return value


def _choice(value: Any, name: str, allowed: tuple[str, ...]) -> str:
    if value not in allowed:
        raise ValidationError({name: f"The {name} must be one of: {', '.join(repr(a) for a in allowed)}."})
    return str(value)


def _text(value: Any, name: str, limit: int) -> str:
    if not isinstance(value, str) or not value.strip():
        raise ValidationError({name: f"The {name} must be a non-empty string."})
    if len(value.strip()) > limit:
        raise ValidationError({name: f"The {name} is longer than {limit} characters."})
    return value.strip()


def _mode(value: Any, team: Any) -> str:
    if value in (None, ""):
        return ""
    try:
        return mode_validate(value, team=team).key
    except ModeValidationError as exc:
        raise ValidationError({"mode": str(exc)}) from None


def _model(value: Any) -> str:
    if value in (None, ""):
        return ""
    config = models_config()
    if not isinstance(value, str) or config.get(value) is None:
        raise ValidationError({"model": f"Unknown model {value!r}. Available: {', '.join(config.models)}."})
    return value


def _project(value: Any, owner: Any, team: Any) -> Project | None:
    if value in (None, ""):
        return None
    try:
        project = project_get(user=owner, project_id=str(value))
    except ProjectNotFoundError:
        raise ValidationError({"projectId": "No project with this id in your projects."}) from None
    if project.team_id != team.pk:
        raise ValidationError({"projectId": "The project belongs to another team than the automation."})
    return project


def _conversation(value: Any, owner: Any, team: Any) -> Any:
    if value in (None, ""):
        return None
    try:
        session = session_get(user=owner, session_id=str(value))
    except SessionNotFoundError:
        raise ValidationError({"conversationId": "No conversation with this id."}) from None
    if session.team_id != team.pk:
        raise ValidationError({"conversationId": "The conversation belongs to another team than the automation."})
    return session


def _schedule(value: Any) -> tuple[str, str]:
    if value is None:
        return "", "UTC"
    if not isinstance(value, dict) or set(value) - {"cron", "timezone"} or "cron" not in value:
        raise ValidationError(
            {"schedule": 'A schedule is {"cron": "<five fields>", "timezone": "<IANA name>"} or null.'}
        )
    name = value.get("timezone") or "UTC"
    if not isinstance(name, str):
        raise ValidationError({"timezone": "The time zone must be a string."})
    zone(name)
    if not isinstance(value["cron"], str):
        raise ValidationError({"cron": "The cron expression must be a string."})
    return cron_clean(value["cron"]), name


def _when(value: Any, name: str) -> datetime | None:
    if value in (None, ""):
        return None
    parsed = parse_datetime(value) if isinstance(value, str) else None
    if parsed is None:
        raise ValidationError({name: f"{name} must be an ISO 8601 date and time, such as 2026-12-01T08:00:00+01:00."})
    if timezone.is_naive(parsed):
        raise ValidationError({name: f"{name} needs a time zone offset (…+01:00 or …Z)."})
    return parsed


def _future(value: datetime | None, name: str) -> datetime | None:
    if value is not None and value <= timezone.now():
        raise ValidationError({name: f"{name} is in the past; give a time to come."})
    return value


def _number(value: Any, name: str, low: int, high: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise ValidationError({name: f"{name} must be a whole number from {low} to {high}."})
    return value


def _tools(value: Any) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(name, str) for name in value):
        raise ValidationError({"allowedTools": "allowedTools must be a list of tool names."})
    known = set(INTERNAL_TOOLS) | set(mcp_registry.names())
    servers = _configured_servers()
    tools: list[str] = []
    for i, name in enumerate(name.strip() for name in value):
        if name == "agent_change_mode":
            raise ValidationError({f"allowedTools[{i}]": ERROR_MODE_CHANGE_TOOL})
        server, separator, tool = name.partition(TOOL_SEPARATOR)
        if name not in known and not (separator and tool and server in servers):
            raise ValidationError({f"allowedTools[{i}]": ERROR_UNKNOWN_TOOL.format(name=name)})
        if name not in tools:
            tools.append(name)
    return tools


def _configured_servers() -> set[str]:
    """The servers of mcp.json (a per-user server's tools are listed only once its user connected)."""
    try:
        return set(load_config(settings.APTIX_MCP_CONFIG).names)
    except McpConfigError:
        return set()


def _delegate(value: Any, owner: Any, team: Any) -> Any:
    if value in (None, ""):
        return None
    user = get_user_model().objects.filter(username=str(value), is_active=True).first()
    if user is None or user == owner or not Membership.objects.filter(team=team, user=user).exists():
        raise ValidationError({"delegate": "The delegate must be another active member of the automation's team."})
    return user
