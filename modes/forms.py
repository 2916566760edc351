"""Admin form for the catalog: list fields are edited one item per line."""

from __future__ import annotations

import json

from django import forms
from django.core.exceptions import ValidationError
from django.utils.html import escape

from .catalog import ModeValidationError, mode_validate
from .models import AgentMode, TeamDefaultMode
from .services import mode_teams_check
from .validators import KNOWLEDGE_NONE, KNOWLEDGE_PROJECT, normal_checks, validate_checks

TEAMS_HELP = "None: every team. Chosen teams: only their members see and use this mode."


class LinesField(forms.Field):
    """A list of strings edited as a textarea, one item per line; blank lines are dropped."""

    widget = forms.Textarea(attrs={"rows": 5, "cols": 80})

    def __init__(self, *args, **kwargs):
        kwargs.setdefault("required", False)
        kwargs.setdefault("help_text", "One item per line.")
        super().__init__(*args, **kwargs)

    def prepare_value(self, value):
        if isinstance(value, (list, tuple)):
            return "\n".join(str(item) for item in value)
        return value

    def to_python(self, value):
        if isinstance(value, (list, tuple)):
            return [str(item).strip() for item in value if str(item).strip()]
        if not value:
            return []
        return [line.strip() for line in str(value).splitlines() if line.strip()]

    def has_changed(self, initial, data):
        return self.to_python(initial) != self.to_python(data)


class ChecksField(forms.Field):
    """The checks as pretty-printed JSON in a textarea; an error names the check and its key."""

    widget = forms.Textarea(attrs={"rows": 12, "cols": 80, "spellcheck": "false"})

    def __init__(self, *args, **kwargs):
        kwargs.setdefault("required", False)
        super().__init__(*args, **kwargs)

    def prepare_value(self, value):
        if isinstance(value, list):
            return json.dumps(normal_checks(value), indent=2, ensure_ascii=False) if value else ""
        return value

    def to_python(self, value):
        if isinstance(value, list):
            return value
        if not value or not str(value).strip():
            return []
        try:
            parsed = json.loads(value)
        except json.JSONDecodeError as exc:
            raise ValidationError(
                f"Not valid JSON (line {exc.lineno}, column {exc.colno}): {exc.msg}.", code="bad_json"
            ) from None
        validate_checks(parsed)
        return normal_checks(parsed)

    def has_changed(self, initial, data):
        try:
            return self.to_python(initial) != self.to_python(data)
        except ValidationError:
            return True


class KnowledgeScopeField(forms.Field):
    """A mode's knowledge scope as lines: "project" or "none" alone, or one project id or name a line."""

    widget = forms.Textarea(attrs={"rows": 2, "cols": 80})

    def __init__(self, *args, **kwargs):
        kwargs.setdefault("required", False)
        super().__init__(*args, **kwargs)

    def prepare_value(self, value):
        return "\n".join(value) if isinstance(value, list) else value

    def to_python(self, value):
        if isinstance(value, list):
            return value
        lines = [line.strip() for line in str(value or "").splitlines() if line.strip()]
        if not lines:
            return KNOWLEDGE_PROJECT
        if len(lines) == 1 and lines[0].casefold() in (KNOWLEDGE_PROJECT, KNOWLEDGE_NONE):
            return lines[0].casefold()
        return lines

    def has_changed(self, initial, data):
        return self.to_python(initial) != self.to_python(data)


class AgentModeForm(forms.ModelForm):
    human_role_hints = LinesField(label="Human role hints")
    example_utterances = LinesField(label="Example utterances")
    test_utterances = LinesField(
        label="Test utterances",
        help_text="One request per line that belongs to this mode, for routing tests. Unlike the example "
        "utterances, these are never shown to the model.",
    )
    checks = ChecksField(
        label="Checks",
        help_text=escape(
            'A JSON list; each check: {"prompt": "...", "execution": "ask" or "agent", "expect": {"tool": "...", '
            '"contains": "...", "not_contains": "...", "status": "completed"}} — expect needs one or more of '
            "its keys; execution defaults to ask, status to completed."
        ),
    )
    knowledge_scope = KnowledgeScopeField(
        label="Knowledge scope",
        help_text="What knowledge_search searches in this mode: project (the session's project; empty means "
        "this too), none, or one project id or name per line that the mode always searches. A search never "
        "returns a passage of a project the user is not a member of.",
    )
    tool_policy = LinesField(
        label="Tool policy",
        # Escaped: the admin renders help text as HTML, where "<server>" would be read as a tag.
        help_text=escape(
            "One entry per line: '*', an internal tool such as 'image_gen', '<server>.*' or "
            "'<server>.<tool>'. agent_change_mode is always offered. An entry that names no known tool "
            "or server is saved with a warning."
        ),
    )
    approval_policy = LinesField(
        label="Approval policy",
        help_text=escape(
            "One entry per line: '<pattern>: auto' (runs) or '<pattern>: ask' (waits for the user's "
            "approval), the pattern as in the tool policy, e.g. 'sql.*: auto', 'notes.add_note: ask', '*: ask'. "
            "The most specific entry wins. Unmatched: read-only MCP tools run, other MCP tools ask, internal "
            "tools run. Mode changes always need the user's consent."
        ),
    )

    change_note = forms.CharField(
        required=False,
        max_length=500,
        help_text="What this change is for: kept with the new version and in the catalog's audit trail.",
    )

    class Meta:
        model = AgentMode
        widgets = {"description": forms.Textarea(attrs={"rows": 3, "cols": 80})}
        fields = [
            "key",
            "display_name",
            "description",
            "system_prompt_summary",
            "system_prompt",
            "human_role_hints",
            "example_utterances",
            "test_utterances",
            "checks",
            "knowledge_scope",
            "tool_policy",
            "approval_policy",
            "model",
            "is_default",
            "is_active",
            "ordering",
            "teams",
        ]

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        if "teams" in self.fields:
            self.fields["teams"].help_text = TEAMS_HELP

    def clean_key(self):
        return (self.cleaned_data.get("key") or "").strip().lower()

    def clean(self):
        cleaned = super().clean() or {}
        if "teams" in self.fields:
            try:
                mode_teams_check(is_default=bool(cleaned.get("is_default")), teams=cleaned.get("teams"))
            except ValidationError as exc:
                self.add_error("teams", exc.message_dict["teams"])
        return cleaned


class TeamDefaultModeForm(forms.ModelForm):
    """The admin's form of a team's default mode: only an active mode the team may use."""

    class Meta:
        model = TeamDefaultMode
        fields = ["team", "mode"]

    def clean(self):
        cleaned = super().clean() or {}
        # On its change page the team is read-only (not in the form): the row's own.
        team = cleaned.get("team") or (self.instance.team if self.instance.pk else None)
        mode = cleaned.get("mode")
        if team is not None and mode is not None:
            try:
                mode_validate(mode.key, team=team)
            except ModeValidationError as exc:
                self.add_error("mode", str(exc))
        return cleaned
