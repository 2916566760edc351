"""The reasoner's fixtures (a scripted model over the real SDK, sessions, turns) for the MCP tests
that run whole turns against real servers (test_mcp_rich.py, test_mcp_progress.py)."""

from tests.helpers.reasoner import llm, make_session, model, run_turn

__all__ = ["llm", "make_session", "model", "run_turn"]
