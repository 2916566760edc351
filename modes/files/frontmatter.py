"""A Markdown file with YAML front matter: the mapping between the opening and closing `---` lines,
then the body.

PyYAML reads it, always with its safe loader (no Python objects, no code), in two steps: compose (the
node tree, which knows each key's line) and then construct each value. That keeps the file's own line
numbers for every key and list item, so a problem names `file:line: field`. YAML aliases are refused
before anything is built (a file needs none, and nested aliases are how a few bytes expand into
gigabytes).

The body keeps its bytes: the one blank line written after the closing `---` and the final newline
(both written by `join`) are the only characters `split` removes.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import yaml

OPENING = "---"
CLOSING = ("---", "...")
YAML_LINE_BREAKS = ("\x85", "\u2028", "\u2029")


@dataclass(frozen=True)
class Problem:
    """Why a file cannot be imported: `ddr.mode.md:7: tools: expected a list of strings`."""

    file: str
    line: int | None
    field: str | None
    message: str

    def __str__(self) -> str:
        where = self.file if self.line is None else f"{self.file}:{self.line}"
        return f"{where}: {self.field}: {self.message}" if self.field else f"{where}: {self.message}"


@dataclass(frozen=True)
class Entry:
    """One front-matter key: its value, its line and, for a list, the line of each item."""

    value: Any
    line: int
    item_lines: tuple[int, ...] = ()


@dataclass
class Document:
    entries: dict[str, Entry] = field(default_factory=dict)
    body: str = ""


class FrontMatterError(ValueError):
    def __init__(self, problems: list[Problem]):
        super().__init__("; ".join(str(p) for p in problems))
        self.problems = problems


def _line_text(line: str) -> str:
    return line.rstrip("\r\n").rstrip()


def split(name: str, text: str) -> tuple[str, str, int]:
    """(the front matter's YAML, the body, the file line of the YAML's first line)."""
    text = text.removeprefix("\ufeff")
    # Lines end at "\n" only: str.splitlines would also end one at a form feed or U+2028 in a prompt.
    lines = [line + "\n" for line in text.split("\n")]
    lines[-1] = lines[-1][:-1]
    if not lines or _line_text(lines[0]) != OPENING:
        raise FrontMatterError([Problem(name, 1, None, "expected front matter: the file starts with a '---' line")])
    for index in range(1, len(lines)):
        if _line_text(lines[index]) in CLOSING:
            yaml_text = "".join(lines[1:index])
            # The file's own newline (a file saved on Windows has CRLF): the separators are in it.
            newline = "\r\n" if lines[0].endswith("\r\n") else "\n"
            return yaml_text, _body("".join(lines[index + 1 :]), newline), 2
    raise FrontMatterError([Problem(name, 1, None, "the front matter is not closed: no '---' line after it")])


def _body(raw: str, newline: str) -> str:
    """The prompt: the body less the one blank line after the front matter and the final newline."""
    return raw.removeprefix(newline).removesuffix(newline)


def join(front: dict[str, Any], body: str) -> str:
    """The file: front matter, a blank line, the body and a final newline (none of them for an empty body)."""
    text = OPENING + "\n" + dump(front) + OPENING + "\n"
    return text + ("\n" + body + "\n" if body else "")


def parse(name: str, text: str) -> Document:
    """The front matter's entries with their lines, and the body. Raises FrontMatterError."""
    yaml_text, body, first_line = split(name, text)
    offset = first_line  # a YAML mark's line is 0-based within the front matter

    def problem(mark: Any, message: str, key: str | None = None) -> Problem:
        return Problem(name, (mark.line + offset) if mark is not None else first_line, key, message)

    try:
        for event in yaml.parse(yaml_text, Loader=yaml.SafeLoader):
            if isinstance(event, yaml.AliasEvent):
                raise FrontMatterError([problem(event.start_mark, "YAML aliases (*name) are not allowed")])
        loader = yaml.SafeLoader(yaml_text)
        try:
            node = loader.get_single_node()
            if node is None:
                return Document(body=body)
            if not isinstance(node, yaml.MappingNode):
                raise FrontMatterError(
                    [problem(node.start_mark, "the front matter must be a mapping of keys to values")]
                )
            document = Document(body=body)
            problems = []
            for key_node, value_node in node.value:
                key = str(key_node.value)
                line = key_node.start_mark.line + offset
                if key in document.entries:
                    problems.append(
                        problem(key_node.start_mark, f"duplicate key (first at line {document.entries[key].line})", key)
                    )
                    continue
                items = (
                    tuple(item.start_mark.line + offset for item in value_node.value)
                    if isinstance(value_node, yaml.SequenceNode)
                    else ()
                )
                document.entries[key] = Entry(loader.construct_object(value_node, deep=True), line, items)
            if problems:
                raise FrontMatterError(problems)
            return document
        finally:
            loader.dispose()
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        if exc.context_mark is not None and mark is not None and mark.line >= yaml_text.count("\n"):
            mark = exc.context_mark  # "expected ']' but got the end": where the unclosed thing began
        detail = exc.problem or exc.context or "not valid YAML"
        if exc.context and exc.problem and exc.context_mark is not None:
            detail += f" ({exc.context} at line {exc.context_mark.line + offset})"
        raise FrontMatterError([problem(mark, f"YAML syntax error: {detail}")]) from None
    except yaml.YAMLError as exc:
        raise FrontMatterError([Problem(name, first_line, None, f"YAML syntax error: {exc}")]) from None


class _Dumper(yaml.SafeDumper):
    """Block style, lists indented under their key, multi-line text as a literal block (`|`), and no
    anchors (the reader refuses aliases, and two equal lists must not become one)."""

    def increase_indent(self, flow: bool = False, indentless: bool = False) -> None:
        return super().increase_indent(flow, False)

    def ignore_aliases(self, data: Any) -> bool:
        return True


def _represent_str(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    # A literal block only where PyYAML can write one exactly; otherwise it picks a quoted style itself.
    if any(char in value for char in YAML_LINE_BREAKS):
        style: str | None = '"'  # escaped (\N, \L, \P): written raw, a reader would take them for line breaks
    else:
        style = "|" if "\n" in value else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_Dumper.add_representer(str, _represent_str)

# Long lines stay whole: an edit to a description is then a one-line diff, not a re-wrapped paragraph.
NO_WRAP = 1 << 30


def dump(front: dict[str, Any]) -> str:
    if not front:
        return ""
    return yaml.dump(
        front, Dumper=_Dumper, sort_keys=False, allow_unicode=True, default_flow_style=False, width=NO_WRAP
    )
