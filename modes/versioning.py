"""What a version of a catalog entry holds, and how two of them compare.

`VERSIONED_FIELDS` is the one list of the entry's fields a version keeps (ModeVersion.snapshot is keyed
by it): a field added to AgentMode later is one line here. `teams` is kept as the teams' slugs (sorted;
empty: every team). `FRONT_MATTER_NAMES` maps the names the files' front matter and the curator API use
to these fields (DESIGN.md "Round 4 contracts").
"""

from __future__ import annotations

import copy
import difflib
import json
from typing import Any

from .models import AgentMode
from .validators import normal_checks

VERSIONED_FIELDS: list[str] = [
    "display_name",
    "description",
    "system_prompt_summary",
    "system_prompt",
    "is_default",
    "is_active",
    "ordering",
    "human_role_hints",
    "example_utterances",
    "test_utterances",
    "checks",
    "knowledge_scope",
    "tool_policy",
    "approval_policy",
    "model",
    "execution",
    "ask_followup",
    "teams",
]

# Front matter / API name → field.
FRONT_MATTER_NAMES: dict[str, str] = {
    "name": "display_name",
    "description": "description",
    "summary": "system_prompt_summary",
    "prompt": "system_prompt",
    "default": "is_default",
    "active": "is_active",
    "order": "ordering",
    "roles": "human_role_hints",
    "examples": "example_utterances",
    "tests": "test_utterances",
    "checks": "checks",
    "knowledge": "knowledge_scope",
    "tools": "tool_policy",
    "approvals": "approval_policy",
    "model": "model",
    "execution": "execution",
    "ask_followup": "ask_followup",
    "teams": "teams",
}
FIELD_NAMES: dict[str, str] = {field: name for name, field in FRONT_MATTER_NAMES.items()}

# Catalog state rather than content: a restore keeps the entry's current values of these.
CATALOG_STATE_FIELDS = ("is_default", "is_active")
LIST_FIELDS = (
    "human_role_hints",
    "example_utterances",
    "test_utterances",
    "checks",
    "tool_policy",
    "approval_policy",
    "teams",
)
TEXT_FIELDS = ("system_prompt", "system_prompt_summary", "description")


def mode_team_slugs(mode: AgentMode) -> list[str]:
    if mode.pk is None:
        return []
    return sorted(mode.teams.values_list("slug", flat=True))


def snapshot_of(mode: AgentMode) -> dict[str, Any]:
    """The entry's every versioned field as JSON-able values."""
    snapshot: dict[str, Any] = {}
    for name in VERSIONED_FIELDS:
        if name == "teams":
            snapshot[name] = mode_team_slugs(mode)
        else:
            value = getattr(mode, name)
            snapshot[name] = copy.deepcopy(value)
    return snapshot


def mode_with_snapshot(mode: AgentMode, snapshot: dict[str, Any]) -> AgentMode:
    """An unsaved copy of `mode` (same pk and key) holding the snapshot's fields (teams aside: M2M)."""
    candidate = copy.copy(mode)
    candidate._state = copy.copy(mode._state)
    for name in VERSIONED_FIELDS:
        if name != "teams" and name in snapshot:
            setattr(candidate, name, copy.deepcopy(snapshot[name]))
    return candidate


def item_text(item: Any) -> str:
    """A list item as a line: a string as it is, a check (a mapping) as compact JSON with its keys in
    the fixed order (a database may keep a JSON object's keys in an order of its own)."""
    if isinstance(item, str):
        return item
    (item,) = normal_checks([item]) if isinstance(item, dict) else (item,)
    return json.dumps(item, ensure_ascii=False)


def _text_lines(value: Any) -> list[str]:
    return ("" if value is None else str(value)).splitlines()


def snapshot_diff(old: dict[str, Any], new: dict[str, Any]) -> list[dict[str, Any]]:
    """The fields that differ, in VERSIONED_FIELDS order: text as a unified line diff (`lines`), lists
    item by item (`added`, `removed`), other values as `from` → `to`. Each names its `field` and the
    front matter's `name` for it."""
    changes: list[dict[str, Any]] = []
    for field in VERSIONED_FIELDS:
        before, after = old.get(field), new.get(field)
        if before == after:
            continue
        change: dict[str, Any] = {"field": field, "name": FIELD_NAMES.get(field, field), "from": before, "to": after}
        if field in TEXT_FIELDS:
            change["kind"] = "text"
            change["lines"] = list(
                difflib.unified_diff(_text_lines(before), _text_lines(after), "from", "to", lineterm="", n=2)
            )
        elif field in LIST_FIELDS:
            before_items, after_items = list(before or []), list(after or [])
            change["kind"] = "list"
            change["added"] = [item for item in after_items if item not in before_items]
            change["removed"] = [item for item in before_items if item not in after_items]
        else:
            change["kind"] = "value"
        changes.append(change)
    return changes


def diff_text(changes: list[dict[str, Any]]) -> str:
    """The changes as short plain text (a command's output, an audit note)."""
    out: list[str] = []
    for change in changes:
        if change["kind"] == "text":
            out.append(f"{change['name']}:")
            out.extend("  " + line for line in change["lines"][2:])
        elif change["kind"] == "list":
            out.append(f"{change['name']}:")
            out.extend(f"  + {item_text(item)}" for item in change["added"])
            out.extend(f"  - {item_text(item)}" for item in change["removed"])
        else:
            out.append(f"{change['name']}: {change['from']!r} → {change['to']!r}")
    return "\n".join(out)
