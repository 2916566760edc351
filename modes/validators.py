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


# A mode's checks (AgentMode.checks): each a prompt run in a new session in the mode, with what the
# turn must show. The keys in the order an exported file writes them.
CHECK_KEYS = ("prompt", "execution", "expect")
EXPECT_KEYS = ("tool", "contains", "not_contains", "status")
CHECK_EXECUTIONS = ("ask", "agent")
CHECK_STATUSES = (
    "completed",
    "failed",
    "cancelled",
    "limit_reached",
    "requires_action",
    "awaiting_approval",
)  # a Turn's final statuses (agents.models.Turn.Status, which modes does not import)
MAX_CHECKS = 20


KNOWLEDGE_PROJECT, KNOWLEDGE_NONE = "project", "none"
MAX_KNOWLEDGE_PROJECTS = 20
ERROR_KNOWLEDGE_SCOPE = (
    'Expected "project" (the session\'s project), "none", or a list of project ids or names the mode always searches.'
)


def validate_knowledge_scope(value) -> None:
    """A mode's knowledge scope (docs/workspace.md#knowledge-scopes): "project", "none", or a list of
    project ids or names (resolved among the projects the session's user is a member of when it searches)."""
    if value in (KNOWLEDGE_PROJECT, KNOWLEDGE_NONE):
        return
    if not isinstance(value, list) or not value:
        raise ValidationError(ERROR_KNOWLEDGE_SCOPE, code="bad_scope")
    if len(value) > MAX_KNOWLEDGE_PROJECTS:
        raise ValidationError(f"At most {MAX_KNOWLEDGE_PROJECTS} projects.", code="too_many_items")
    validate_string_list(value)
    seen: set[str] = set()
    for position, item in enumerate(value, start=1):
        if item.strip().casefold() in seen:
            raise ValidationError(f"Item {position} names a project already in the list.", code="duplicate")
        seen.add(item.strip().casefold())


def validate_test_utterances(value) -> None:
    """The routing tests: like the example utterances, a list of non-empty strings."""
    validate_string_list(value)


def _check_problem(index: int, path: str, message: str) -> ValidationError:
    return ValidationError(f"checks[{index}]{path}: {message}", code="bad_check")


def validate_check(index: int, check) -> None:
    """One check; the error names the item and the key: "checks[1].expect.tool: expected a string"."""
    if not isinstance(check, dict):
        raise _check_problem(index, "", "expected a mapping with prompt, execution and expect")
    if unknown := [key for key in check if key not in CHECK_KEYS]:
        raise _check_problem(index, f".{unknown[0]}", "unknown key; a check has " + ", ".join(CHECK_KEYS))
    prompt = check.get("prompt")
    if not isinstance(prompt, str) or not prompt.strip():
        raise _check_problem(index, ".prompt", "expected a non-empty string")
    if len(prompt) > MAX_ITEM_LENGTH * 4:
        raise _check_problem(index, ".prompt", f"longer than {MAX_ITEM_LENGTH * 4} characters")
    if "execution" in check and check["execution"] not in CHECK_EXECUTIONS:
        raise _check_problem(index, ".execution", "expected ask or agent")
    expect = check.get("expect")
    if not isinstance(expect, dict) or not expect:
        raise _check_problem(index, ".expect", "expected a mapping with one or more of " + ", ".join(EXPECT_KEYS))
    for key, item in expect.items():
        if key not in EXPECT_KEYS:
            raise _check_problem(index, f".expect.{key}", "unknown key; expect has " + ", ".join(EXPECT_KEYS))
        if not isinstance(item, str) or not item.strip():
            raise _check_problem(index, f".expect.{key}", "expected a string")
        if len(item) > MAX_ITEM_LENGTH:
            raise _check_problem(index, f".expect.{key}", f"longer than {MAX_ITEM_LENGTH} characters")
    if "status" in expect and expect["status"] not in CHECK_STATUSES:
        raise _check_problem(index, ".expect.status", "expected a turn status: " + ", ".join(CHECK_STATUSES))


def validate_checks(value) -> None:
    if not isinstance(value, list):
        raise ValidationError("checks: expected a list of checks.", code="not_a_list")
    if len(value) > MAX_CHECKS:
        raise ValidationError(f"checks: at most {MAX_CHECKS} checks.", code="too_many_items")
    for index, check in enumerate(value):
        validate_check(index, check)


def normal_checks(value) -> list:
    """The checks in canonical form when they are valid; as they are otherwise (their validator says why)."""
    try:
        validate_checks(value)
    except ValidationError:
        return value
    return [normal_check(check) for check in value]


def normal_check(check: dict) -> dict:
    """A valid check in its canonical form: its keys and expect's in a fixed order (CHECK_KEYS,
    EXPECT_KEYS), the execution given (default ask)."""
    expect = check.get("expect") or {}
    return {
        "prompt": check["prompt"],
        "execution": check.get("execution") or "ask",
        "expect": {key: expect[key] for key in EXPECT_KEYS if key in expect},
    }
