"""Admin form for the catalog: list fields are edited one item per line."""

from __future__ import annotations

from django import forms
from django.utils.html import escape

from .models import AgentMode


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


class AgentModeForm(forms.ModelForm):
    human_role_hints = LinesField(label="Human role hints")
    example_utterances = LinesField(label="Example utterances")
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
            "tool_policy",
            "approval_policy",
            "model",
            "is_default",
            "is_active",
            "ordering",
        ]

    def clean_key(self):
        return (self.cleaned_data.get("key") or "").strip().lower()
