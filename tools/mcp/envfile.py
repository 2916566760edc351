"""Reading the files mcp.json points to or is: JSON with comments (VS Code's JSONC) that refuses
duplicated keys, and the dotenv files of `envFile`.

JSONC: VS Code writes `.vscode/mcp.json` with `// line` and `/* block */` comments and trailing
commas. Each comment is replaced by spaces (its line breaks kept) and each trailing comma by a
space, so the standard `json` parser reads the rest and its errors keep their line and column.
Hand-written (one regular expression) rather than a package: json-with-comments deletes the line
breaks of comments, so errors point at the wrong line, and json5 accepts far more than VS Code
does (unquoted keys, single quotes) and words its errors differently from `json`.

Duplicated keys: `json.loads` keeps the last of two `"sql": {...}` entries without a word, so a
server pasted twice (or an edit that added a second `"env"`) would silently lose one. Every object
is read as a `JsonObject`, which remembers the keys it saw twice; config.py reports them.

dotenv: `KEY=value` lines as python-dotenv and docker compose read them: blank lines and `#`
comments are skipped, an optional `export ` prefix is allowed, values may be single-quoted
(literal), double-quoted (with \\n, \\t, \\" and \\\\ escapes) or bare (a ` #` starts a comment).
Values are taken as they are: no `${VAR}` expansion, so a file is a plain list of secrets.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

# A string (kept), a comment (blanked) or a comma followed only by blanks and comments before a
# closing bracket (a trailing comma, blanked); anything else is left to the JSON parser.
_COMMENT = r"//[^\n]*|/\*(?:[^*]|\*(?!/))*\*/"  # a block comment ends at its first */
JSONC_RE = re.compile(rf'"(?:\\.|[^"\\])*"|{_COMMENT}|,(?=(?:\s|{_COMMENT})*[}}\]])')
ENV_LINE_RE = re.compile(r"^\s*(?:export\s+)?([A-Za-z_][A-Za-z0-9_.-]*)\s*=\s*(.*?)\s*$")
ESCAPES = {"n": "\n", "t": "\t", "r": "\r", '"': '"', "\\": "\\", "$": "$"}


class JsonObject(dict):
    """A JSON object and the keys that appeared in it more than once (the last value is kept)."""

    duplicates: tuple[str, ...] = ()


def _object(pairs: list[tuple[str, Any]]) -> JsonObject:
    obj, seen = JsonObject(), []
    for key, value in pairs:
        if key in obj and key not in seen:
            seen.append(key)
        obj[key] = value
    obj.duplicates = tuple(seen)
    return obj


def loads(text: str) -> Any:
    """`json.loads` of JSONC (comments and trailing commas allowed), with every object a `JsonObject`."""
    return json.loads(without_comments(text), object_pairs_hook=_object)


def without_comments(text: str) -> str:
    """JSONC as JSON of the same length and lines: comments and trailing commas become blanks."""

    def blank(match: re.Match) -> str:
        token = match.group(0)
        return token if token.startswith('"') else re.sub(r"[^\n]", " ", token)

    return JSONC_RE.sub(blank, text)


def duplicates(value: Any) -> tuple[str, ...]:
    return value.duplicates if isinstance(value, JsonObject) else ()


class EnvFileError(ValueError):
    """A dotenv file that cannot be used; the message says where and why."""


def read_env_file(path: Path) -> dict[str, str]:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise EnvFileError(f"{path} does not exist") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise EnvFileError(f"{path} cannot be read: {exc}") from None
    values: dict[str, str] = {}
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        match = ENV_LINE_RE.match(line)
        if match is None:
            raise EnvFileError(f"{path}, line {number}: expected KEY=value")
        try:
            values[match.group(1)] = _value(match.group(2))
        except ValueError as exc:
            raise EnvFileError(f"{path}, line {number}: {exc}") from None
    return values


def _value(raw: str) -> str:
    if raw[:1] in ("'", '"'):
        quote = raw[0]
        end = _closing_quote(raw, quote)
        if end < 0:
            raise ValueError(f"the value opens a {quote} quote it does not close")
        rest = raw[end + 1 :].strip()
        if rest and not rest.startswith("#"):
            raise ValueError(f"unexpected text after the quoted value: {rest[:40]!r}")
        inner = raw[1:end]
        return inner if quote == "'" else re.sub(r"\\(.)", lambda m: ESCAPES.get(m.group(1), m.group(0)), inner)
    return re.split(r"\s+#", raw, maxsplit=1)[0].strip()


def _closing_quote(raw: str, quote: str) -> int:
    index = 1
    while index < len(raw):
        if raw[index] == "\\" and quote == '"':
            index += 2
            continue
        if raw[index] == quote:
            return index
        index += 1
    return -1
