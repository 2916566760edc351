"""Where an Agent run stops short, and how it still ends with an answer: the step limit, the token
budget, the month's usage quota and the repeat limit (the model only repeating calls it already
made) each lead to one last model call without tools that asks for an answer from what was
gathered; if that call fails or says nothing, the answer says plainly what was done and why the
run stopped. An empty reply gets one nudge before it is accepted."""

from __future__ import annotations

from collections import Counter
from typing import Any

from django.conf import settings

from ..state import PausedState

FINAL_REQUEST = (
    "[Aptix] {message} Do not call any tool now. Using only what was gathered above, answer my request "
    "as well as you can, and say briefly if something is missing."
)
NUDGE = "[Aptix] Your last reply was empty. Answer my request now from what you have."


def limit_hit(
    *,
    agent: bool,
    steps: int,
    tokens: int,
    state: PausedState,
    max_steps: int,
    budget: int,
    quota: str | None = None,
) -> dict[str, Any] | None:
    """The limit the run has reached before its next step, as the final event shows it, or None.
    `quota`: why the month's quota stops the run (usage/quotas.py), when it is used up."""
    if steps and quota:
        return {"limit": "quota", "message": f"Stopped: {quota}"}
    if agent and steps >= max_steps:
        return {
            "limit": "steps",
            "max_steps": max_steps,
            "message": f"Stopped after {max_steps} steps (APTIX_MAX_STEPS).",
        }
    if steps and tokens >= budget:
        return {
            "limit": "tokens",
            "token_budget": budget,
            "used": tokens,
            "message": f"Stopped after using {tokens} tokens of the {budget} budget (APTIX_TOKEN_BUDGET).",
        }
    repeats = settings.APTIX_MAX_REPEATS
    if agent and state.repeats >= repeats:
        return {
            "limit": "repeats",
            "repeats": state.repeats,
            "message": f"Stopped: the model repeated tool calls it had already made {state.repeats} times in a row "
            "(APTIX_MAX_REPEATS).",
        }
    return None


def plain_answer(state: PausedState, limit: dict[str, Any]) -> str:
    """What to tell the user when even the final call gave no answer: what was done and why it stopped."""
    calls = Counter(
        call["function"]["name"]
        for message in state.messages
        if message.get("role") == "assistant"
        for call in message.get("tool_calls") or []
    )
    done = ", ".join(f"{name} ({n}×)" if n > 1 else name for name, n in calls.items()) or "no tool calls"
    return (
        f"{limit['message']} I could not put together an answer. What I did: {done}. Ask again, or narrow the request."
    )
