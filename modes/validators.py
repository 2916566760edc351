"""Validators for catalog fields (lists edited one item per line in the admin)."""

from __future__ import annotations

import re

from django.core.exceptions import ValidationError

MODE_KEY_RE = re.compile(r"^[a-z0-9](?:[a-z0-9-]{0,62}[a-z0-9])?$")
# A tool policy entry: "*", an internal tool ("image_gen"), an MCP server ("sql.*") or one MCP tool
# ("time.get_current_time").
TOOL_POLICY_ENTRY_RE = re.compile(r"^(\*|[A-Za-z0-9_-]{1,64}(\.(\*|[A-Za-z0-9_-]{1,64}))?)$")

MAX_LIST_ITEMS = 50
MAX_ITEM_LENGTH = 500


def validate_mode_key(value: str) -> None:
    if not MODE_KEY_RE.match(value or ""):
        raise ValidationError(
            "Mode keys use lower-case letters, digits and hyphens (for example 'data-analysis').",
            code="invalid_key",
        )


def validate_string_list(value) -> None:
    if not isinstance(value, list):
        raise ValidationError("Expected a list of strings.", code="not_a_list")
    if len(value) > MAX_LIST_ITEMS:
        raise ValidationError(f"At most {MAX_LIST_ITEMS} items.", code="too_many_items")
    for position, item in enumerate(value, start=1):
        if not isinstance(item, str) or not item.strip():
            raise ValidationError(f"Item {position} must be a non-empty string.", code="bad_item")
        if len(item) > MAX_ITEM_LENGTH:
            raise ValidationError(f"Item {position} is longer than {MAX_ITEM_LENGTH} characters.", code="item_too_long")


def validate_tool_policy(value) -> None:
    validate_string_list(value)
    bad = [item for item in value if not TOOL_POLICY_ENTRY_RE.match(item)]
    if bad:
        raise ValidationError(
            "Invalid tool policy entries: %(entries)s. Use '*', a tool name such as 'image_gen', "
            "'<server>.*' or '<server>.<tool>'.",
            params={"entries": ", ".join(repr(b) for b in bad)},
            code="bad_policy",
        )


APPROVAL_DECISIONS = ("auto", "ask")


def parse_approval_entry(entry: str) -> tuple[str, str] | None:
    """("sql.*", "auto") from "sql.*: auto"; None when the entry is malformed."""
    pattern, sep, decision = entry.rpartition(":")
    pattern, decision = pattern.strip(), decision.strip().lower()
    if not sep or decision not in APPROVAL_DECISIONS or not TOOL_POLICY_ENTRY_RE.match(pattern):
        return None
    return pattern, decision


def validate_approval_policy(value) -> None:
    validate_string_list(value)
    bad = [item for item in value if parse_approval_entry(item) is None]
    if bad:
        raise ValidationError(
            "Invalid approval policy entries: %(entries)s. Use '<pattern>: auto' or '<pattern>: ask', the "
            "pattern as in the tool policy: '*', 'image_gen', '<server>.*' or '<server>.<tool>'.",
            params={"entries": ", ".join(repr(b) for b in bad)},
            code="bad_approval_policy",
        )
