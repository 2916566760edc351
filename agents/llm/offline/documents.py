"""The offline model's documents (rule l): in a mode that offers `document_write` (DDR Authoring),
"draft a DDR for …" writes a short DDR skeleton in the house format, and "add a section on …" revises
the session's most recent document (read from the system prompt, where Aptix puts the current version
of each document) with a new section before the approval metadata. So the tour shows a document
beside the chat, its versions and the user's edits reaching the next turn, without a model server."""

from __future__ import annotations

import re

from .conversation import Conversation, Plan

DOCUMENT_WRITE = "document_write"
_DRAFT = re.compile(
    r"\b(?:draft|write|start)\s+(?:a\s+|an\s+|the\s+)?(?:new\s+)?(?:DDR|design decision record)\s+"
    r"(?:for|on|about)\s+(?P<subject>.+?)[.!?]*\s*$",
    re.I | re.S,
)
_ADD_SECTION = re.compile(r"\badd\s+(?:a\s+|an\s+)?section\s+(?:on|about|for)\s+(?P<topic>.+?)[.!?]*\s*$", re.I | re.S)
# The documents block of the system prompt (agents/documents/outline.py): the most recent one first.
_DOCUMENT = re.compile(
    r'<document id="(?P<id>[^"]+)" title="(?P<title>[^"]*)" version="\d+" by="[^"]*">\n(?P<body>.*?)\n</document>',
    re.S,
)
_APPROVAL = re.compile(r"^## Approval Metadata\b", re.M)


def skeleton(subject: str) -> tuple[str, str]:
    """The title and Markdown of a new DDR about `subject`: every section of the house format, the
    facts the user must give marked TODO."""
    subject = " ".join(subject.split())[:120]
    title = f"DDR: {subject[:1].upper()}{subject[1:]}"
    content = (
        f"# {title}\n\n"
        "- **ID:** TODO (prefix and zero-padded number)\n"
        "- **Status:** Draft\n\n"
        f"## Purpose\n\nDecide how we handle {subject}. TODO: the problem and why it needs a decision now.\n\n"
        "## Scope and Non-goals\n\n- In scope: TODO\n- Not in scope: TODO\n\n"
        "## Contract\n\n- The system MUST TODO (each clause testable).\n\n"
        "## Guidance\n\nTODO: how to apply the contract; the rationale, kept apart from the decision.\n\n"
        "## Testing Requirements\n\n- TODO: a test per contract clause.\n\n"
        "## Approval Metadata\n\n- Authors: TODO\n- Reviewers: TODO\n- Approver: TODO\n- Date: TODO\n"
    )
    return title, content


def with_section(content: str, topic: str) -> str:
    """`content` with a new section on `topic`, before the approval metadata (else at the end)."""
    topic = " ".join(topic.split())[:120]
    section = f"## {topic[:1].upper()}{topic[1:]}\n\nTODO: what this DDR decides about {topic}.\n\n"
    found = _APPROVAL.search(content)
    if found:
        return content[: found.start()] + section + content[found.start() :]
    return content.rstrip() + "\n\n" + section.rstrip() + "\n"


def _latest_document(conv: Conversation) -> tuple[str, str, str] | None:
    """(id, title, text) of the session's most recently changed document, when its whole text is in
    the system prompt."""
    system = next((m.get("content") for m in conv.messages if m.get("role") == "system"), None)
    found = _DOCUMENT.search(system) if isinstance(system, str) else None
    if found is None or found.group("body").startswith("["):  # only its outline fits: not revised here
        return None
    return found.group("id"), found.group("title"), found.group("body")


def document_step(conv: Conversation) -> Plan | None:
    """Draft a DDR, or add a section to the latest document, when the mode offers document_write."""
    if DOCUMENT_WRITE not in conv.offered:
        return None
    if drafted := _DRAFT.search(conv.user_text):
        title, content = skeleton(drafted.group("subject"))
        return Plan.call(DOCUMENT_WRITE, {"title": title, "content": content, "summary": "First draft"})
    if (added := _ADD_SECTION.search(conv.user_text)) and (latest := _latest_document(conv)):
        document_id, title, content = latest
        topic = " ".join(added.group("topic").split())[:120]
        return Plan.call(
            DOCUMENT_WRITE,
            {
                "title": title,
                "content": with_section(content, topic),
                "documentId": document_id,
                "summary": f"Added a section on {topic}",
            },
        )
    return None


def describe_document(result: dict) -> str:
    """The answer after a document_write: where the document is and what to try next."""
    title, version = result.get("title"), result.get("version")
    if version == 1:
        return (
            f"I drafted **{title}** beside the chat (version 1). Fill in the TODOs there with *Edit*, or ask "
            "me to *add a section on …*; I work on the current version, your edits included."
        )
    return f"Done: **{title}** is at version {version}. *Versions* in the panel compares it with the one before."
