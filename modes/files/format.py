"""The mode file, `<key>.mode.md`: YAML front matter with the catalog entry's fields, the system prompt
as the Markdown body.

FIELDS is the one table between front-matter keys and AgentMode fields: reading, writing, the admin's
preview and the import's diff all go through it, in its order (the order keys are written in). A field
added to the catalog is one row here. A key a file leaves out takes the field's default (no teams:
every team; no model: the deployment's default), so the file is the whole entry. `execution`,
`model`, `tests`, `checks`, `knowledge`, `ask_followup` and `teams` are left out of an exported file
when at their default; every other key is always written, so an edit in a text editor is a one-line
diff. `knowledge` is `project` (the default), `none`, or a list of project ids or names.

`tests` (the routing test utterances, a list of strings) and `checks` (a list of mappings: `prompt`,
`execution`, `expect` with `tool`, `contains`, `not_contains`, `status`) are written in block style, each
check's keys and its expect's in that fixed order (modes/validators.py CHECK_KEYS, EXPECT_KEYS).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from django.db import models
from django.utils.text import slugify

from ..models import AgentMode
from ..validators import normal_checks
from .frontmatter import Document, FrontMatterError, Problem, join, parse

SUFFIX = ".mode.md"
PROMPT = "system_prompt"  # the body
TEAMS = "teams"  # team slugs; not an AgentMode column but its many-to-many


def _is_text(value: Any) -> bool:
    return isinstance(value, str)


def _is_bool(value: Any) -> bool:
    return isinstance(value, bool)


def _is_optional_bool(value: Any) -> bool:
    return value is None or isinstance(value, bool)


def _is_whole_number(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _is_string_list(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(item, str) for item in value)


def _is_list(value: Any) -> bool:
    return isinstance(value, list)


def _is_knowledge_scope(value: Any) -> bool:
    return isinstance(value, str) or _is_string_list(value)


def _is_execution(value: Any) -> bool:
    return value in (None, "", "ask", "agent")


@dataclass(frozen=True)
class Kind:
    """What a front-matter value must be, and the message when it is not."""

    check: Callable[[Any], bool]
    expected: str


TEXT = Kind(_is_text, "expected a string (quote it if YAML reads it as a number, a date or yes/no)")
BOOL = Kind(_is_bool, "expected true or false")
OPTIONAL_BOOL = Kind(_is_optional_bool, "expected true, false or null (null: the model's setting)")
WHOLE_NUMBER = Kind(_is_whole_number, "expected a whole number, 0 or more")
STRING_LIST = Kind(_is_string_list, "expected a list of strings")
EXECUTION = Kind(_is_execution, "expected ask or agent (leave it out to keep the session's)")
KNOWLEDGE = Kind(_is_knowledge_scope, "expected project, none or a list of project ids or names")
# A list of structured items (mappings), for fields whose own validators check each item (the checks).
LIST = Kind(_is_list, "expected a list")


@dataclass(frozen=True)
class Field:
    key: str  # in the file
    attr: str  # on AgentMode (TEAMS: the slugs of AgentMode.teams)
    kind: Kind
    omit_default: bool = False  # left out of an exported file when at its default


FIELDS: tuple[Field, ...] = (
    Field("key", "key", TEXT),
    Field("name", "display_name", TEXT),
    Field("description", "description", TEXT),
    Field("summary", "system_prompt_summary", TEXT),
    Field("default", "is_default", BOOL),
    Field("active", "is_active", BOOL),
    Field("order", "ordering", WHOLE_NUMBER),
    Field("execution", "execution", EXECUTION, omit_default=True),
    Field("model", "model", TEXT, omit_default=True),
    Field("tools", "tool_policy", STRING_LIST),
    Field("approvals", "approval_policy", STRING_LIST),
    Field("roles", "human_role_hints", STRING_LIST),
    Field("examples", "example_utterances", STRING_LIST),
    Field("tests", "test_utterances", STRING_LIST, omit_default=True),
    Field("checks", "checks", LIST, omit_default=True),
    Field("knowledge", "knowledge_scope", KNOWLEDGE, omit_default=True),
    Field("ask_followup", "ask_followup", OPTIONAL_BOOL, omit_default=True),
    Field("teams", TEAMS, STRING_LIST, omit_default=True),
)
BY_KEY = {f.key: f for f in FIELDS}
BY_ATTR = {f.attr: f for f in FIELDS}
COLUMNS = (*(f.attr for f in FIELDS if f.attr != TEAMS), PROMPT)  # AgentMode columns a file sets
UNKNOWN_KEY = "unknown key; a mode file has " + ", ".join(f.key for f in FIELDS) + " (and the prompt as its body)"


def default_of(attr: str) -> Any:
    if attr == TEAMS:
        return []
    model_field = AgentMode._meta.get_field(attr)
    assert isinstance(model_field, models.Field)
    return model_field.get_default()


def defaults() -> dict[str, Any]:
    return {attr: default_of(attr) for attr in (*COLUMNS, TEAMS)}


def mode_values(mode: AgentMode) -> dict[str, Any]:
    """A catalog entry as the file sees it: every mapped field, the prompt, and its teams' slugs (sorted)."""
    values = {attr: getattr(mode, attr) for attr in COLUMNS}
    for attr, value in values.items():
        if isinstance(value, list):
            values[attr] = list(value)
    values[TEAMS] = sorted(team.slug for team in mode.teams.all())
    return values


def render(values: dict[str, Any]) -> str:
    """The `<key>.mode.md` text of a catalog entry's values (mode_values). Deterministic: the same
    values always give the same bytes."""
    front: dict[str, Any] = {}
    for spec in FIELDS:
        value = values.get(spec.attr, default_of(spec.attr))
        if spec.omit_default and value == default_of(spec.attr):
            continue
        if spec.attr == TEAMS:
            value = sorted(value)
        elif spec.attr == "checks":
            value = normal_checks(value)  # each check's keys in a fixed order, whatever the store kept
        front[spec.key] = value
    return join(front, values.get(PROMPT, ""))


def file_name(key: str) -> str:
    return key + SUFFIX


@dataclass
class ModeFile:
    """A file read: the values it sets (AgentMode attrs, TEAMS, PROMPT), where each was set, and notes.

    `complete`: a key left out takes its default (a mode file). A foreign file (foreign.py) is not
    complete: what it cannot say keeps the mode's current value."""

    source: str
    key: str
    values: dict[str, Any]
    lines: dict[str, int] = field(default_factory=dict)
    item_lines: dict[str, tuple[int, ...]] = field(default_factory=dict)
    complete: bool = True
    notes: list[str] = field(default_factory=list)

    def line_of(self, attr: str) -> int:
        return self.lines.get(attr, 1)


def key_from_file_name(source: str) -> str:
    return source.replace("\\", "/").rsplit("/", 1)[-1].removesuffix(SUFFIX)


def read(source: str, text: str) -> tuple[ModeFile | None, list[Problem]]:
    """A mode file's values, or the problems that stop it (each naming the file, the line and the field)."""
    try:
        document = parse(source, text)
    except FrontMatterError as exc:
        return None, exc.problems
    return from_document(source, document)


def from_document(source: str, document: Document) -> tuple[ModeFile | None, list[Problem]]:
    problems: list[Problem] = []
    expected_key = key_from_file_name(source)
    mode_file = ModeFile(source=source, key=expected_key, values={PROMPT: document.body})
    for key, entry in document.entries.items():
        spec = BY_KEY.get(key)
        if spec is None:
            problems.append(Problem(source, entry.line, key, UNKNOWN_KEY))
            continue
        if not spec.kind.check(entry.value):
            problems.append(Problem(source, entry.line, key, spec.kind.expected))
            continue
        value = entry.value
        if spec.attr == "execution" and value is None:
            value = ""
        mode_file.values[spec.attr] = value
        mode_file.lines[spec.attr] = entry.line
        mode_file.item_lines[spec.attr] = entry.item_lines
    given = mode_file.values.get("key")
    if given is not None and given != expected_key:
        problems.append(
            Problem(
                source,
                mode_file.line_of("key"),
                "key",
                f"'{given}' does not match the file name: the file of the mode '{given}' is {file_name(given)}",
            )
        )
    mode_file.values["key"] = expected_key
    # The file is still checked further (its values against the catalog's validators), so one run
    # lists every problem; a file with any problem is never imported.
    return mode_file, problems


def key_from_name(name: str) -> str:
    """A mode key made from a display name: 'Code Reviewer' → 'code-reviewer' (at most 64 characters)."""
    slug = slugify(name).replace("_", "-")
    while "--" in slug:
        slug = slug.replace("--", "-")
    return slug[:64].strip("-")
