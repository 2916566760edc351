"""Aptix as an A2A agent (A2A 1.0, and 0.3's method names, through the official `a2a-sdk`).

- mount.py: the ASGI application in front of Django (aptix/asgi.py): the public agent card at
  `/.well-known/agent-card.json`, and the JSON-RPC endpoint `/a2a/` (the SDK's dispatcher) after the
  bearer token is checked; everything else to Django.
- card.py: the public card (the service, its endpoint, the bearer scheme; no skills) and the extended
  card the token's user gets (one skill per mode they may use).
- handler.py: the SDK's RequestHandler over Aptix's turns: message/send, message/stream, tasks/get,
  tasks/cancel, the extended card; a task is a turn, its context the conversation.
- tasks.py: a turn as an A2A Task (its state, answer artifact, what an `input-required` task waits for)
  and a follow-up message read as the approval decision it carries.
- services.py: what the handler runs and reads, through the agents' services (agents/web/api.py).
"""

from __future__ import annotations

from .mount import A2aMount

__all__ = ["A2aMount"]
