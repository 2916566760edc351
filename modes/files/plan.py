"""Importing mode files: read and validate the whole set first, then write it in one transaction.

`plan_import` reads every file, checks each value against the format (format.FIELDS) and the model's
own validators (`full_clean`), team slugs against the teams, keys across files, and the catalog as a
whole (one default). It writes nothing: the plan lists each mode as new, changed (with a unified diff
of its file, so only the edited lines show) or unchanged, and every problem. `apply_plan` refuses a
plan with any problem, so one bad file imports nothing at all; it is the one place an import writes.
"""

from __future__ import annotations

import difflib
import hashlib
import json
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from django.core.exceptions import NON_FIELD_ERRORS, ValidationError
from django.db import transaction

from aptix.models import Team

from ..models import ERROR_DEFAULT_CANNOT_BE_UNSET, AgentMode, CatalogEvent, ModeVersion
from ..services import ERROR_DEFAULT_FOR_EVERY_TEAM, catalog_event_record
from ..versions import CODE_NEEDS_REVIEW, draft_save, mode_create, version_publish
from . import format as mode_format
from .foreign import read_claude_subagent, read_vscode_agent
from .format import BY_ATTR, COLUMNS, PROMPT, TEAMS, ModeFile, defaults, file_name, mode_values, render
from .frontmatter import Problem
from .sources import CLAUDE, MODE, VSCODE, Source

NEW, CHANGED, UNCHANGED = "new", "changed", "unchanged"
READERS = {MODE: mode_format.read, VSCODE: read_vscode_agent, CLAUDE: read_claude_subagent}
MAX_DIFF_LINES = 40
MAX_CONTEXT_WIDTH = 100
ITEM_OF_CHECK = re.compile(r"^checks\[(\d+)\]")
ITEM_OF_LIST = re.compile(r"^Item (\d+) ")
ERROR_NO_DEFAULT = "the catalog has no default mode: set default: true in one file"
ERROR_NOTHING_TO_IMPORT = "No mode files found"
ERROR_PLAN_HAS_PROBLEMS = "The files have problems: nothing was imported."


@dataclass
class PlannedMode:
    key: str
    source: str
    status: str
    values: dict[str, Any]
    diff: str = ""
    line_of: dict[str, int] = field(default_factory=dict)
    before: str = ""  # the mode's file as the catalog has it now ("" for a new mode)

    @property
    def text(self) -> str:
        """The mode's file as it will be (what the admin's confirmation carries back)."""
        return render(self.values)


@dataclass
class ImportPlan:
    modes: list[PlannedMode] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def writes(self) -> list[PlannedMode]:
        return [mode for mode in self.modes if mode.status != UNCHANGED]

    def count(self, status: str) -> int:
        return sum(1 for mode in self.modes if mode.status == status)

    def summary(self) -> str:
        return f"{self.count(NEW)} new, {self.count(CHANGED)} changed, {self.count(UNCHANGED)} unchanged"

    def digest(self) -> str:
        """What this plan would write: the admin's confirmation imports only if it is still the same."""
        writes = [[mode.key, mode.status, mode.before, mode.text] for mode in self.writes]
        return hashlib.sha256(json.dumps(writes, sort_keys=True).encode()).hexdigest()


def _field_name(attr: str) -> str | None:
    if attr == PROMPT:
        return "prompt"
    if attr == NON_FIELD_ERRORS:
        return None
    spec = BY_ATTR.get(attr)
    return spec.key if spec is not None else attr


def _shorten(line: str) -> str:
    text = line.rstrip("\n")
    return line if len(text) <= MAX_CONTEXT_WIDTH else text[: MAX_CONTEXT_WIDTH - 1] + "…\n"


def _diff(key: str, before: str, after: str) -> str:
    lines = list(
        difflib.unified_diff(
            before.splitlines(keepends=True),
            after.splitlines(keepends=True),
            fromfile=f"a/{file_name(key)}",
            tofile=f"b/{file_name(key)}",
            n=1,
        )
    )
    # A context line is only there to locate the change: a long one (a paragraph) is cut short.
    lines = [_shorten(line) if line.startswith(" ") else line for line in lines]
    if len(lines) > MAX_DIFF_LINES:
        lines = [*lines[:MAX_DIFF_LINES], f"… {len(lines) - MAX_DIFF_LINES} more lines\n"]
    return "".join(line if line.endswith("\n") else line + "\n" for line in lines)


def _check_teams(mode_file: ModeFile, slugs: list[str], teams: set[str]) -> list[Problem]:
    item_lines = mode_file.item_lines.get(TEAMS, ())
    problems = []
    for position, slug in enumerate(slugs):
        if slug not in teams:
            line = item_lines[position] if position < len(item_lines) else mode_file.line_of(TEAMS)
            known = ", ".join(sorted(teams)) or "none"
            problems.append(Problem(mode_file.source, line, "teams", f"no team '{slug}' (teams: {known})"))
    return problems


def _line_of(mode_file: ModeFile, attr: str, message: str) -> int:
    """The line of the field, or of the item a message names ("checks[1].expect.tool: …", "Item 2 …")."""
    item = ITEM_OF_CHECK.match(message) if attr == "checks" else ITEM_OF_LIST.match(message)
    lines = mode_file.item_lines.get(attr, ())
    if item is not None:
        position = int(item.group(1)) - (0 if attr == "checks" else 1)
        if 0 <= position < len(lines):
            return lines[position]
    return mode_file.line_of(attr)


def _check_model(mode_file: ModeFile, values: dict[str, Any], current: AgentMode | None) -> list[Problem]:
    """The catalog's own validation (modes/validators.py, AgentMode.clean) on the entry as it would be."""
    candidate = AgentMode(**{attr: values[attr] for attr in COLUMNS})
    if current is not None:
        candidate.pk, candidate.created_at = current.pk, current.created_at
        candidate._state.adding = False
    try:
        candidate.full_clean()
    except ValidationError as exc:
        return [
            Problem(mode_file.source, _line_of(mode_file, attr, message), _field_name(attr), message)
            for attr, messages in exc.message_dict.items()
            for message in messages
            # Whether the catalog keeps a default is decided across all the files (_check_default).
            if message != ERROR_DEFAULT_CANNOT_BE_UNSET
        ]
    return []


def _check_default(planned: list[PlannedMode], existing: dict[str, AgentMode]) -> list[Problem]:
    claiming = [mode for mode in planned if mode.values["is_default"]]
    if len(claiming) > 1:
        first = claiming[0]
        return [
            Problem(
                mode.source,
                mode.line_of.get("is_default", 1),
                "default",
                f"only one mode can be the default, and {first.source} already says it is",
            )
            for mode in claiming[1:]
        ]
    if claiming:
        return []
    current = next((mode for mode in existing.values() if mode.is_default), None)
    unset = next((mode for mode in planned if current is not None and mode.key == current.key), None)
    if unset is not None:
        return [Problem(unset.source, unset.line_of.get("is_default", 1), "default", ERROR_DEFAULT_CANNOT_BE_UNSET)]
    if current is None and planned:
        return [Problem(planned[0].source, 1, "default", ERROR_NO_DEFAULT)]
    return []


def plan_import(sources: Iterable[Source], problems: Iterable[Problem] = ()) -> ImportPlan:
    """Read and validate every file; write nothing. `problems`: those found while reading the files."""
    plan = ImportPlan(problems=list(problems))
    files: dict[str, ModeFile] = {}
    for source in sorted(sources, key=lambda s: s.name):
        mode_file, trouble = READERS[source.kind](source.name, source.text)
        plan.problems += trouble
        if mode_file is None:
            continue
        plan.notes += mode_file.notes
        if mode_file.key in files:
            first = files[mode_file.key].source
            problem = f"the mode '{mode_file.key}' is also in {first}: one file per mode"
            plan.problems.append(Problem(mode_file.source, mode_file.line_of("key"), "key", problem))
            continue
        files[mode_file.key] = mode_file
    existing = {mode.key: mode for mode in AgentMode.objects.prefetch_related("teams")}
    teams = set(Team.objects.values_list("slug", flat=True))
    for mode_file in files.values():
        current = existing.get(mode_file.key)
        before = mode_values(current) if current is not None else None
        values = {**(defaults() if mode_file.complete or before is None else before), **mode_file.values}
        plan.problems += _check_teams(mode_file, values[TEAMS], teams)
        if values["is_default"] and values[TEAMS]:  # the catalog's default is every team's last fallback
            plan.problems.append(
                Problem(mode_file.source, mode_file.line_of(TEAMS), "teams", ERROR_DEFAULT_FOR_EVERY_TEAM)
            )
        values[TEAMS] = sorted(set(values[TEAMS]))  # a set: order and repeats in the file mean nothing
        plan.problems += _check_model(mode_file, values, current)
        after = render(values)
        text = render(before) if before is not None else ""
        if before is None:
            status, diff = NEW, _diff(mode_file.key, "", after)
        else:
            status, diff = (UNCHANGED, "") if text == after else (CHANGED, _diff(mode_file.key, text, after))
        lines = dict(mode_file.lines)
        plan.modes.append(PlannedMode(mode_file.key, mode_file.source, status, values, diff, lines, text))
    plan.problems += _check_default(plan.modes, existing)
    return plan


@dataclass(frozen=True)
class Imported:
    """What an import made of one mode: the version it saved and that version's state (draft, waiting
    for review, published)."""

    key: str
    status: str  # NEW or CHANGED
    version: int
    state: str

    def __str__(self) -> str:
        return f"{self.key}: {self.status}, version {self.version} {self.state}"


@transaction.atomic
def apply_plan(plan: ImportPlan, *, publish: bool, author: Any = None) -> list[Imported]:
    """Write a plan's new and changed modes, all or none: the one place an import writes the catalog.

    Each becomes a new version of its mode (modes/versions.py) by `author` (None: the operator's
    command): a draft that changes nothing live, or, with `publish`, published at once — unless
    two-person review is on, when it is left waiting for review instead. Each is a catalog event
    "imported". The default mode is written first, so that publishing it unsets the previous default
    before a mode that stops being the default is saved."""
    if plan.problems:
        raise ValidationError(ERROR_PLAN_HAS_PROBLEMS)
    done = []
    for planned in sorted(plan.writes, key=lambda mode: not mode.values["is_default"]):
        fields = {attr: planned.values[attr] for attr in COLUMNS if attr != "key"}
        slugs = list(planned.values[TEAMS])
        existing = AgentMode.objects.filter(key=planned.key).first()
        if existing is None:
            mode = AgentMode(key=planned.key, **fields)
            version = mode_create(mode=mode, by=author, note="imported", teams=slugs, publish=publish)
            if publish and version.state != ModeVersion.State.PUBLISHED:  # review is on: ask for it
                version = _submit(version, author)
        else:
            version = draft_save(mode=existing, fields={**fields, TEAMS: slugs}, author=author, note="imported")
            if publish:
                version = _submit(version, author)
        catalog_event_record(
            action=CatalogEvent.Action.IMPORTED,
            mode_key=planned.key,
            user=author,
            version=version.number,
            note=f"{planned.status} from {planned.source}",
        )
        done.append(Imported(planned.key, planned.status, version.number, version.get_state_display().lower()))
    return done


def _submit(version: ModeVersion, author: Any) -> ModeVersion:
    """Publish an imported version; under two-person review it is left waiting for review instead (what
    asking to publish it does), which is no failure of the import."""
    try:
        return version_publish(version=version, by=author, note="imported")
    except ValidationError as exc:
        if exc.code != CODE_NEEDS_REVIEW:
            raise
    return ModeVersion.objects.get(pk=version.pk)


def export_files() -> dict[str, str]:
    """Every catalog entry, inactive ones too, as `<key>.mode.md` → its text."""
    modes = AgentMode.objects.prefetch_related("teams").order_by("key")
    return {file_name(mode.key): render(mode_values(mode)) for mode in modes}


__all__ = [
    "CHANGED",
    "NEW",
    "UNCHANGED",
    "ImportPlan",
    "Imported",
    "PlannedMode",
    "apply_plan",
    "defaults",
    "plan_import",
]
