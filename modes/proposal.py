"""The proposal of a better mode (TUL-007 §4.1's recommended pattern): the text the offline model
writes, and the recognising of a proposal in any model's answer, in one place so they cannot drift.

    proposal_text("Data analysis", "data-analysis")  # the three-option message
    find_proposal(text)  # Proposal("Data analysis", "data-analysis"), or None when `text` is no proposal

A proposal is any text offering the three options in order: "1) stay…", "2) switch…" and
"3) switch…", case-insensitive, with markdown or other punctuation allowed around each number
("- 1) Stay", "**1)** Stay"). The mode it proposes is read from `**Display name** (`key`)` when the
text has one (the offline model's form), else from its first bold text (a real model's form, no
key).

Plain Python: no Django, no models.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# Anything may come before an option number (a line start, "- ", "**", ", "); between the number and
# its first word only punctuation, markdown and white space ("1) Stay", "**2)** Switch", "3)\n switch").
PROPOSAL_PATTERN = re.compile(r"1\)\W*stay\b.*?2\)\W*switch\b.*?3\)\W*switch\b", re.I | re.S)
PROPOSED_MODE_PATTERN = re.compile(r"\*\*([^*]+)\*\*\s*\(`([^`]+)`\)")  # **Display name** (`key`)
_BOLD = re.compile(r"\*\*([^*\n]+)\*\*")
_OPTION_NUMBER = re.compile(r"\W*[123]\)")  # a bold option number, "**1)**", is not a mode name
UNNAMED_MODE = "the proposed mode"


@dataclass(frozen=True)
class Proposal:
    """The mode a proposal offers: its display name, and its key when the text gives one."""

    display_name: str
    key: str | None


def proposal_text(display_name: str, key: str) -> str:
    """TUL-007 §4.1's recommended pattern."""
    return (
        f"It seems like what you are asking for would be better served by **{display_name}** (`{key}`) mode.\n"
        f"Would you like to:\n"
        f"1) Stay in the current mode,\n"
        f"2) Switch this session to **{display_name}**, or\n"
        f"3) Switch to **{display_name}** and start a new session for this work?"
    )


def find_proposal(text: str) -> Proposal | None:
    """The proposal in `text`, or None when it does not offer the three options."""
    if not text or PROPOSAL_PATTERN.search(text) is None:
        return None
    named = PROPOSED_MODE_PATTERN.search(text)
    if named is not None:
        return Proposal(named.group(1).strip(), named.group(2).strip())
    for bold in _BOLD.finditer(text):
        if not _OPTION_NUMBER.match(bold.group(1)):
            return Proposal(bold.group(1).strip(), None)
    return Proposal(UNNAMED_MODE, None)


def is_proposal(text: str) -> bool:
    """Whether `text` offers the three options (stay, switch this session, switch to a new session)."""
    return find_proposal(text) is not None


def parse_proposal(text: str) -> tuple[str, str] | None:
    """(display name, mode key) of the mode `text` proposes, or None when it is no proposal or names
    no mode as **Display name** (`key`)."""
    proposal = find_proposal(text)
    if proposal is None or proposal.key is None:
        return None
    return proposal.display_name, proposal.key
