"""The offline model's proposal of a better mode (TUL-007 §4.1's recommended pattern): the text it
writes and the recognising of that text in a later request, in one place so they cannot drift.

    proposal_text("Data analysis", "data-analysis")  # the three-option message
    parse_proposal(text)  # ("Data analysis", "data-analysis"), or None when `text` is no proposal
"""

from __future__ import annotations

import re

PROPOSAL_PATTERN = re.compile(
    r"1\)\s*Stay in the current mode.*2\)\s*Switch this session.*3\)\s*Switch to", re.I | re.S
)
PROPOSED_MODE_PATTERN = re.compile(r"\*\*([^*]+)\*\*\s*\(`([^`]+)`\)")


def proposal_text(display_name: str, key: str) -> str:
    """TUL-007 §4.1's recommended pattern."""
    return (
        f"It seems like what you are asking for would be better served by **{display_name}** (`{key}`) mode.\n"
        f"Would you like to:\n"
        f"1) Stay in the current mode,\n"
        f"2) Switch this session to **{display_name}**, or\n"
        f"3) Switch to **{display_name}** and start a new session for this work?"
    )


def is_proposal(text: str) -> bool:
    """Whether `text` offers the three options (stay, switch this session, switch to a new session)."""
    return PROPOSAL_PATTERN.search(text) is not None


def parse_proposal(text: str) -> tuple[str, str] | None:
    """(display name, mode key) of the mode `text` proposes, or None when it is no proposal or names
    no mode as **Display name** (`key`)."""
    if not is_proposal(text):
        return None
    proposed = PROPOSED_MODE_PATTERN.search(text)
    if proposed is None:
        return None
    return proposed.group(1).strip(), proposed.group(2).strip()
