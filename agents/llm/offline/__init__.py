"""The built-in offline model: a deterministic planner (`planner`) served over the Chat Completions
protocol by an ASGI app (`app`). It answers when no model is configured (see agents/llm/client.py).

Modules: `app` (the server), `planner` (the rules), `conversation` (reading a request), `data` (the
demo-database path), `tables` (tables in tool results, chart values in a message), `text` (text
helpers). The mode proposal's text and its recognition live in modes/proposal.py.
"""

from __future__ import annotations

from modes.proposal import parse_proposal, proposal_text

from .app import OFFLINE_MODEL_NAME, OfflineModelApp
from .planner import plan_reply

__all__ = ["OFFLINE_MODEL_NAME", "OfflineModelApp", "parse_proposal", "plan_reply", "proposal_text"]
