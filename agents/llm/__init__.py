"""Talking to a model: `client` (the openai SDK client, the only code that calls a model), the
built-in offline model (`offline/`), the Chat Completions wire helpers for the model servers we run
ourselves (`protocol`) and the streaming in-process ASGI transport (`transport`).

Import the client's API from here: `from agents.llm import LLMClient, get_llm_client, ...`.
"""

from __future__ import annotations

from .client import OFFLINE_LABEL, LLMClient, build_llm_client, describe_provider, get_llm_client, use_llm_client
from .reply import DeltaCallback, ModelError, ModelReply, RestartCallback, ToolCallRequest

__all__ = [
    "OFFLINE_LABEL",
    "DeltaCallback",
    "LLMClient",
    "ModelError",
    "ModelReply",
    "RestartCallback",
    "ToolCallRequest",
    "build_llm_client",
    "describe_provider",
    "get_llm_client",
    "use_llm_client",
]
