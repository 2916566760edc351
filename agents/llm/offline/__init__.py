"""The built-in offline model: a deterministic planner (`planner`) served over the Chat Completions
protocol by an ASGI app (`app`). It answers when no model is configured (see agents/llm/client.py).

Modules: `app` (the server), `planner` (the rules), `conversation` (reading a request), `proposal`
(the mode proposal's text and its recognition), `data` (the demo-database path), `tables` (tables
in tool results, chart values in a message), `text` (text helpers).
"""

from __future__ import annotations

from .app import OFFLINE_MODEL_NAME, OfflineModelApp
from .planner import plan_reply
from .proposal import parse_proposal, proposal_text

__all__ = ["OFFLINE_MODEL_NAME", "OfflineModelApp", "parse_proposal", "plan_reply", "proposal_text"]
