"""A mode's version before the catalog numbered its versions: a fingerprint of its catalog entry.

`mode_fingerprint(mode)` is a short SHA-256 of the fields that decide how the mode behaves — its
prompt layer, what it offers and asks before (tools, approvals), which model and execution it runs
with, and what the model is told about it when it routes (description, summary, role hints,
examples) — not of its name, order, default flag or timestamps, which change nothing a user's answer
depends on.

Runs recorded it in `Turn.trace["mode_version"]` until the catalog got numbered versions
(modes/versions.py); they now record the version's number there (agents/run/reasoner.py), and feedback
rows rated before keep the fingerprint: the feedback report groups by whatever string is stored.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

FINGERPRINT_FIELDS = (
    "key",
    "system_prompt",
    "system_prompt_summary",
    "description",
    "human_role_hints",
    "example_utterances",
    "tool_policy",
    "approval_policy",
    "model",
    "execution",
    "ask_followup",
)
FINGERPRINT_CHARS = 12  # 48 bits: no two versions of one mode collide in practice


def mode_fingerprint(mode: Any) -> str:
    """The version of `mode` (an AgentMode, saved or not) as a 12-hex string; stable across processes."""
    fields = {name: getattr(mode, name, None) for name in FINGERPRINT_FIELDS}
    text = json.dumps(fields, sort_keys=True, ensure_ascii=False, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:FINGERPRINT_CHARS]
