"""docs/configuration.md and .env.example, generated from the declarations in aptix/env/.

`manage.py aptix_config_docs` writes both (`--check` only compares); tests/aptix/test_config_docs.py
fails when the committed files differ from what the declarations give. No Django here.
"""

from __future__ import annotations

import re
import textwrap
from pathlib import Path
from typing import Any

from aptix.env import DECLARED, SECTIONS
from aptix.envtypes import Section, Setting

REPO_DIR = Path(__file__).resolve().parent.parent
GENERATED_BY = "`python manage.py aptix_config_docs`"
LINK = re.compile(r"\[([^\]]+)\]\([^)]+\)")


def settings_of(section: Section) -> list[Setting[Any]]:
    return [setting for setting in DECLARED.values() if setting.section is section]


def default_cell(setting: Setting[Any]) -> str:
    if setting.default_doc:
        return setting.default_doc
    text = setting.text(setting.default)
    return f"`{text}`" if text else "empty"


def meaning_cell(setting: Setting[Any]) -> str:
    parts = [setting.help[0].upper() + setting.help[1:] + "."]
    if setting.example:
        parts.append(f"E.g. `{setting.example}`.")
    if setting.child_process:
        parts.append(f"Set it in {setting.child_process}.")
    return " ".join(parts).replace("|", "\\|")


def anchor(title: str) -> str:
    """The anchor GitHub gives a heading: lower case, punctuation dropped, spaces as hyphens."""
    return re.sub(r"[^\w\- ]", "", title.lower()).replace(" ", "-")


def configuration_md() -> str:
    lines = [
        "# Configuration",
        "",
        f"<!-- Generated from aptix/env/ by {GENERATED_BY}: edit the declarations there, then run it. -->",
        "",
        "Everything comes from the environment; `make run` also reads a `.env` file if present",
        "([.env.example](../.env.example) lists every variable with its default). `manage.py` commands run",
        "outside `make` do not read `.env`: export what it sets (`set -a; . ./.env; set +a`). An unset or",
        "empty variable means its default; a value that cannot be used stops the start with a message",
        "naming the variable. A *secret* has no default outside `DEBUG` and stays out of files you commit.",
        "Every variable is declared once, in `aptix/env/`, with its kind, default and description; this",
        f"page and `.env.example` are generated from it by {GENERATED_BY}.",
        "",
        " · ".join(f"[{section.title}](#{anchor(section.title)})" for section in SECTIONS),
    ]
    for section in SECTIONS:
        lines += ["", f"## {section.title}", "", section.about, "", "| variable | default | meaning |", "|---|---|---|"]
        for setting in settings_of(section):
            name = f"`{setting.name}`" + (" (secret)" if setting.secret else "")
            lines.append(f"| {name} | {default_cell(setting)} | {meaning_cell(setting)} |")
    return "\n".join(lines) + "\n"


def plain(markdown: str) -> str:
    """Markdown as a comment line shows it: links as their text, no backticks or emphasis."""
    return LINK.sub(r"\1", markdown).replace("`", "").replace("*", "")


def comment(text: str) -> list[str]:
    return textwrap.wrap(plain(text), width=98, initial_indent="# ", subsequent_indent="# ", break_on_hyphens=False)


def env_example() -> str:
    lines = [
        *comment(
            "Aptix configuration: every variable Aptix reads, with its default (an empty value means the "
            "default). Every one is optional for `make run` (the embedded default); production deployments "
            "set at least SECRET_KEY, ALLOWED_HOSTS and DATABASE_URL. Copy this file to .env, which `make run` "
            "reads. docs/configuration.md explains each variable."
        ),
        *comment(f"Generated from aptix/env/ by {GENERATED_BY}: edit the declarations there, not this file."),
    ]
    for section in SECTIONS:
        lines += ["", f"# --- {section.title} ".ljust(100, "-")]
        for setting in settings_of(section):
            notes = [meaning_cell(setting).replace("\\|", "|")]
            if setting.secret:
                notes.append("Secret.")
            if setting.default_doc:
                notes.append(f"Default: {setting.default_doc}.")
            lines += comment(" ".join(notes))
            value = "" if setting.secret or setting.default_doc else setting.text(setting.default)
            lines.append(("# " if setting.child_process else "") + f"{setting.name}={value}")
    return "\n".join(lines) + "\n"


def generated_files() -> dict[Path, str]:
    """Each generated file's path and the text the declarations give it."""
    return {REPO_DIR / "docs" / "configuration.md": configuration_md(), REPO_DIR / ".env.example": env_example()}
